"""A residual MLP (§4.6) with batch or layer normalization (§4.5) on scikit-learn's 8×8 digits.

Run: ``python -m examples.resnet_digits [--norm batch|layer] [--blocks N]`` or ``--fast``.
Each block is s ↦ s + h(s) with the pre-normalized residual
h(s) = C·relu(W·norm(s) + b) + d, the book's block with a normalization in front.
Writes ``resnet_digits_<norm>_curves.png`` to ``--out``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from autograd_dag import nn, optim

from . import _common as C


class ResidualMLP(nn.Classifier):
    """stem Linear(64→width) → blocks × [s + C·relu(W·norm(s) + b) + d] → norm → relu → Linear(width→10).

    Shapes: (B, in_features) -> (B, num_classes) logits; :meth:`predict_proba` gives probabilities.
    """

    def __init__(self, in_features: int = 64, width: int = 64, hidden: int = 128, blocks: int = 3,
                 num_classes: int = 10, norm: str = "layer", rng=None, dtype=np.float32):
        super().__init__()
        rng = nn.init.as_generator(rng)
        make_norm = {"batch": nn.BatchNorm, "layer": nn.LayerNorm}[norm]
        self.stem = nn.Linear(in_features, width, rng=rng, dtype=dtype)
        self.blocks = [nn.Residual(nn.Sequential(make_norm(width, dtype=dtype),
                                                 nn.Linear(width, hidden, init="he", rng=rng, dtype=dtype),
                                                 nn.ReLU(),
                                                 nn.Linear(hidden, width, rng=rng, dtype=dtype)))
                       for _ in range(blocks)]
        self.norm = make_norm(width, dtype=dtype)
        self.head = nn.Linear(width, num_classes, rng=rng, dtype=dtype)

    def forward(self, x):
        s = self.stem(x)
        for block in self.blocks:
            s = block(s)
        return self.head(nn.functional.relu(self.norm(s)))


def run(fast: bool = False, out: str = "out/resnet_digits", seed: int = 0, epochs: int | None = None,
        norm: str = "layer", blocks: int = 3, show_progress: bool = True, verbose: bool = True) -> dict:
    """Train the residual MLP and plot the curves; returns history, accuracy and picture path."""
    folder = C.out_dir(out)
    x_tr, y_tr, x_te, y_te = C.load_digits(seed=seed, fast=fast, images=False)
    model = ResidualMLP(blocks=blocks, norm=norm, rng=seed)
    epochs = epochs or (3 if fast else 20)
    opt = optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    sched = optim.CosineAnnealingLR(opt, T_max=epochs)
    if verbose:
        print(model)
        print(f"{model.num_parameters()} parameters, {norm} norm, {blocks} residual blocks, {epochs} epochs")
    with C.single_threaded_blas():
        history = C.train_classifier(model, opt, x_tr, y_tr, x_te, y_te, epochs=epochs, batch=64, seed=seed,
                                     show_progress=show_progress, scheduler=sched, name=f"ResMLP/{norm} ")
    picture = C.plot_curves(history, os.path.join(folder, f"resnet_digits_{norm}_curves.png"),
                            f"Residual MLP ({blocks} blocks, {norm} norm) on scikit-learn digits")
    if verbose:
        print(f"test accuracy {history['test_acc'][-1]:.2%} in {history['seconds']:.1f} s; picture: {picture}")
    return {"history": history, "test_accuracy": history["test_acc"][-1], "picture": picture, "model": model,
            "folder": folder}


def main(argv=None) -> int:
    p = C.parser(__doc__.splitlines()[0], "out/resnet_digits")
    p.add_argument("--norm", choices=("batch", "layer"), default="layer")
    p.add_argument("--blocks", type=int, default=3)
    args = p.parse_args(argv)
    run(fast=args.fast, out=args.out, seed=args.seed, epochs=args.epochs, norm=args.norm, blocks=args.blocks,
        show_progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
