"""Shared helpers of the examples: argument parsing, output folders, data, plotting, training loops."""

from __future__ import annotations

import argparse
import os
from typing import Any
import sys
import time

import numpy as np

import autograd_dag as ad
from autograd_dag.nn import functional as F


def parser(description: str, default_out: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--fast", action="store_true", help="a few seconds' run on a subset (used by the tests)")
    p.add_argument("--out", default=default_out, help=f"folder for the pictures (default {default_out})")
    p.add_argument("--seed", type=int, default=0, help="seed of the data split and the initialisation")
    p.add_argument("--epochs", type=int, default=None, help="override the number of epochs")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars (shown only on a terminal)")
    return p


def single_threaded_blas():
    """Context manager limiting BLAS to one thread (a no-op without threadpoolctl).

    The examples' matrices are small: with several BLAS threads on a 2-core
    machine that is also busy, each small product waits for its threads to be
    scheduled, and a LeNet step was measured up to 100× slower.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def out_dir(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return os.path.abspath(path)


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def progress_wanted(enabled: bool) -> bool:
    """Whether to draw progress bars: asked for, and stderr is a terminal (never into a log or a pipe)."""
    return enabled and hasattr(sys.stderr, "isatty") and sys.stderr.isatty()


def progress(iterable, desc: str, enabled: bool, total: int | None = None):
    """A tqdm bar over ``iterable``, drawn only when ``progress_wanted(enabled)``.

    Always a tqdm (disabled off a terminal), so callers may use ``set_postfix``,
    ``update`` and ``close`` without asking whether a bar is shown: a log or a
    pipe gets no bar and no error. Example: ``for step in progress(range(10), "train", True): ...``.
    """
    from tqdm.auto import tqdm
    return tqdm(iterable, desc=desc, total=total, leave=True, dynamic_ncols=True,
                disable=not progress_wanted(enabled))


def load_digits(seed: int = 0, test_fraction: float = 0.2, fast: bool = False, images: bool = True,
                dtype=np.float32):
    """scikit-learn's bundled 8×8 handwritten digits (no download), scaled to [0, 1], split stratified.

    Returns (x_train, y_train, x_test, y_test); x has shape (N, 1, 8, 8) with
    ``images`` or (N, 64) without, y holds int64 class indices 0..9.
    """
    from sklearn.datasets import load_digits as sk_load_digits
    from sklearn.model_selection import train_test_split
    data = sk_load_digits()
    x = (data.data / 16.0).astype(dtype)
    y = data.target.astype(np.int64)
    if images:
        x = x.reshape(-1, 1, 8, 8)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)
    if fast:
        x_tr, y_tr, x_te, y_te = x_tr[:384], y_tr[:384], x_te[:200], y_te[:200]
    return x_tr, y_tr, x_te, y_te


def accuracy(model, x: np.ndarray, y: np.ndarray, batch: int = 512) -> float:
    """Fraction of samples whose largest logit (``model(x)``) is the label (evaluated without recording)."""
    was_training = model.training
    model.eval()
    correct = 0
    with ad.no_grad():
        for s in range(0, len(x), batch):
            scores = model(ad.Tensor(x[s:s + batch])).value
            correct += int(np.sum(np.argmax(scores, axis=-1) == y[s:s + batch]))
    model.train(was_training)
    return correct / len(x)


def train_classifier(model, opt, x_tr, y_tr, x_te, y_te, *, epochs: int, batch: int, seed: int,
                     show_progress: bool, scheduler=None, name: str = "") -> dict[str, Any]:
    """Minibatch training on cross-entropy of the model's logits; returns the per-epoch history and time."""
    rng = np.random.default_rng(seed)
    history: dict[str, Any] = {"loss": [], "train_acc": [], "test_acc": [], "lr": []}
    n = len(x_tr)
    start = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        order = rng.permutation(n)
        batches = range(0, n, batch)
        bar = progress(batches, f"{name}epoch {epoch + 1}/{epochs}", show_progress, total=len(batches))
        total, count = 0.0, 0
        for s in bar:
            idx = order[s:s + batch]
            loss = F.cross_entropy(model(ad.Tensor(x_tr[idx])), y_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.value) * len(idx)
            count += len(idx)
            bar.set_postfix(loss=f"{total / count:.4f}")
        history["lr"].append(opt.lr)
        if scheduler is not None:
            scheduler.step()
        history["loss"].append(total / count)
        history["train_acc"].append(accuracy(model, x_tr, y_tr))
        history["test_acc"].append(accuracy(model, x_te, y_te))
        bar.set_postfix(loss=f"{total / count:.4f}", test_acc=f"{history['test_acc'][-1]:.3f}")
        bar.close()
    history["seconds"] = time.perf_counter() - start
    return history


def plot_curves(history: dict, path: str, title: str) -> str:
    """Training loss and train/test accuracy per epoch, side by side, to a PNG."""
    plt = pyplot()
    epochs = np.arange(1, len(history["loss"]) + 1)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(epochs, history["loss"], marker="o")
    a1.set_xlabel("epoch")
    a1.set_ylabel("training cross-entropy")
    a1.set_yscale("log")
    a1.set_title("loss")
    a1.grid(alpha=0.3)
    a2.plot(epochs, history["train_acc"], marker="o", label="train")
    a2.plot(epochs, history["test_acc"], marker="s", label="test")
    a2.set_xlabel("epoch")
    a2.set_ylabel("accuracy")
    a2.set_title(f"accuracy (final test {history['test_acc'][-1]:.1%})")
    a2.grid(alpha=0.3)
    a2.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
