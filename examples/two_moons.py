"""Logistic regression and an MLP on two moons (a two-class 2-D problem), decision boundaries to a PNG.

Run: ``python -m examples.two_moons`` (full) or ``--fast``.
Logistic regression (§4.3.2) can only draw a straight boundary; the MLP
(§4.3.1) learns the curved one. The data come from scikit-learn's
``make_moons`` (generated, no download).
"""

from __future__ import annotations

import os
import sys

import numpy as np

import autograd_dag as ad
from autograd_dag import nn, optim
from autograd_dag.nn import functional as F

from . import _common as C


def make_moons(n: int, noise: float, seed: int):
    """(x, y): n points of two interleaved half circles, standardised; y in {0, 1}."""
    from sklearn.datasets import make_moons as sk_make_moons
    x, y = sk_make_moons(n_samples=n, noise=noise, random_state=seed)
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    return x.astype(np.float64), y.astype(np.int64)


def fit(model, x, y, epochs: int, lr: float, show_progress: bool, name: str) -> list[float]:
    """Full-batch Adam on cross-entropy of the model's logits; returns the loss per epoch."""
    opt = optim.Adam(model.parameters(), lr=lr)
    losses = []
    bar = C.progress(range(epochs), name, show_progress)
    for _ in bar:
        loss = F.cross_entropy(model(ad.Tensor(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.value))
    return losses


def accuracy(model, x, y) -> float:
    with ad.no_grad():
        return float(np.mean(np.argmax(model(ad.Tensor(x)).value, axis=-1) == y))


def run(fast: bool = False, out: str = "out/two_moons", seed: int = 0, epochs: int | None = None,
        show_progress: bool = True, verbose: bool = True) -> dict:
    """Train both models and plot their decision boundaries; returns accuracies and the picture's path."""
    folder = C.out_dir(out)
    x, y = make_moons(200 if fast else 600, noise=0.2, seed=seed)
    n_train = int(0.75 * len(x))
    x_tr, y_tr, x_te, y_te = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    epochs = epochs or (150 if fast else 400)
    models = {
        "logistic regression": nn.LogisticRegression(2, 2, rng=seed),
        "MLP 2-32-32-2 (tanh)": nn.MLP([2, 32, 32, 2], activation="tanh", rng=seed),
    }
    results = {}
    with C.single_threaded_blas():
        for name, model in models.items():
            losses = fit(model, x_tr, y_tr, epochs, 0.05 if "logistic" in name else 0.01, show_progress, name)
            results[name] = {"loss": losses, "train_acc": accuracy(model, x_tr, y_tr),
                             "test_acc": accuracy(model, x_te, y_te)}
            if verbose:
                print(f"{name}: final loss {losses[-1]:.4f}, train accuracy {results[name]['train_acc']:.1%}, "
                      f"test accuracy {results[name]['test_acc']:.1%}")
    path = plot_boundaries(models, results, x_tr, y_tr, x_te, y_te, os.path.join(folder, "two_moons.png"))
    if verbose:
        print(f"decision boundaries: {path}")
    return {"results": results, "picture": path, "models": models, "folder": folder}


def plot_boundaries(models, results, x_tr, y_tr, x_te, y_te, path: str) -> str:
    """Probability of class 1 over a grid, the 0.5 contour, and the points, one panel per model."""
    plt = C.pyplot()
    lo, hi = np.minimum(x_tr.min(0), x_te.min(0)) - 0.5, np.maximum(x_tr.max(0), x_te.max(0)) + 0.5
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 200))
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 5))
    for ax, (name, model) in zip(np.atleast_1d(axes), models.items()):
        with ad.no_grad():
            p1 = model.predict_proba(ad.Tensor(grid)).value[:, 1].reshape(gx.shape)
        ax.contourf(gx, gy, p1, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.6)
        ax.contour(gx, gy, p1, levels=[0.5], colors="k", linewidths=2)
        ax.scatter(x_tr[:, 0], x_tr[:, 1], c=y_tr, cmap="RdBu_r", edgecolors="k", s=18, label="train")
        ax.scatter(x_te[:, 0], x_te[:, 1], c=y_te, cmap="RdBu_r", edgecolors="k", marker="^", s=30,
                   label="test")
        r = results[name]
        ax.set_title(f"{name}\ntrain {r['train_acc']:.1%}, test {r['test_acc']:.1%}")
        ax.set_xlabel("$x_1$")
        ax.set_ylabel("$x_2$")
        ax.legend(loc="lower right")
    fig.suptitle("Two moons: P(class 1) and the decision boundary P = 0.5")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    args = C.parser(__doc__.splitlines()[0], "out/two_moons").parse_args(argv)
    run(fast=args.fast, out=args.out, seed=args.seed, epochs=args.epochs, show_progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
