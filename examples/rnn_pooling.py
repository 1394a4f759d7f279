"""Sequence-to-vector RNN classifiers (§4.7.2) on handwritten digits read row by row: pooling last vs mean vs max.

Run: ``python -m examples.rnn_pooling`` (full) or ``--fast``; ``--cell elman|gru|lstm|mlp``.
Each 8×8 image of scikit-learn's bundled digits (no download) is read as a
sequence of 8 rows of 8 pixels. A recurrent cell encodes the rows,
s_l = γ(x_l, s_{l-1}), the states are pooled into one vector (the last state,
their mean, or their coordinate-wise max) and a linear head gives the 10
class scores. The same cell, seed and training run for each pooling; a table
of test accuracies is printed and the curves are saved to a PNG.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from autograd_dag import nn, optim

from . import _common as C

POOLINGS = ("last", "mean", "max")


def build_model(pooling: str, cell: str = "gru", hidden: int = 32, seed: int = 0) -> nn.SequenceToVector:
    """A cell over 8 rows of 8 pixels, pooled, then Linear(hidden, 10). Shapes: (B, 8, 8) -> (B, 10)."""
    rng = np.random.default_rng(seed)
    return nn.SequenceToVector(nn.make_cell(cell, 8, hidden, rng=rng), pooling=pooling,
                               head=nn.Linear(hidden, 10, rng=rng))


def load_rows(seed: int, fast: bool):
    """(x_train, y_train, x_test, y_test) with x of shape (N, 8 rows, 8 pixels) in [0, 1]."""
    x_tr, y_tr, x_te, y_te = C.load_digits(seed=seed, fast=fast, images=False, dtype=np.float64)
    return x_tr.reshape(-1, 8, 8), y_tr, x_te.reshape(-1, 8, 8), y_te


def run(fast: bool = False, out: str = "out/rnn_pooling", seed: int = 0, epochs: int | None = None,
        cell: str = "gru", hidden: int = 32, show_progress: bool = True, verbose: bool = True) -> dict:
    """Train one classifier per pooling; returns their histories, final test accuracies and the picture."""
    folder = C.out_dir(out)
    x_tr, y_tr, x_te, y_te = load_rows(seed, fast)
    epochs = epochs or (8 if fast else 30)
    histories, models = {}, {}
    with C.single_threaded_blas():
        for pooling in POOLINGS:
            model = build_model(pooling, cell, hidden, seed)
            opt = optim.Adam(model.parameters(), lr=0.01)
            histories[pooling] = C.train_classifier(model, opt, x_tr, y_tr, x_te, y_te, epochs=epochs, batch=64,
                                                    seed=seed, show_progress=show_progress,
                                                    name=f"{cell} {pooling}: ")
            models[pooling] = model
    table = results_table(histories, cell, hidden, len(x_tr), len(x_te))
    path = plot(histories, os.path.join(folder, "rnn_pooling.png"), cell)
    if verbose:
        print(table)
        print(f"curves: {path}")
    return {"histories": histories, "models": models, "table": table, "picture": path,
            "test_accuracy": {p: h["test_acc"][-1] for p, h in histories.items()}}


def results_table(histories: dict, cell: str, hidden: int, n_train: int, n_test: int) -> str:
    """A Markdown table: pooling, final train and test accuracy, best test accuracy, seconds."""
    lines = [f"{cell} cell, hidden size {hidden}, {n_train} training / {n_test} test digits, 8 rows of 8 pixels",
             "", "| pooling | train acc | test acc | best test acc | seconds |", "|---|---|---|---|---|"]
    for pooling, h in histories.items():
        lines.append(f"| {pooling} | {h['train_acc'][-1]:.1%} | {h['test_acc'][-1]:.1%} | "
                     f"{max(h['test_acc']):.1%} | {h['seconds']:.1f} |")
    return "\n".join(lines)


def plot(histories: dict, path: str, cell: str) -> str:
    """Training loss and test accuracy per epoch, one curve per pooling."""
    plt = C.pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for (pooling, h), marker in zip(histories.items(), "osd"):
        epochs = np.arange(1, len(h["loss"]) + 1)
        a1.plot(epochs, h["loss"], marker=marker, label=pooling)
        a2.plot(epochs, h["test_acc"], marker=marker, label=f"{pooling} (final {h['test_acc'][-1]:.1%})")
    a1.set_yscale("log")
    a1.set_xlabel("epoch")
    a1.set_ylabel("training cross-entropy")
    a1.set_title("loss")
    a2.set_xlabel("epoch")
    a2.set_ylabel("test accuracy")
    a2.set_title("test accuracy")
    for a in (a1, a2):
        a.grid(alpha=0.3)
        a.legend(title="pooling")
    fig.suptitle(f"Digits read row by row by a {cell} RNN: pooling of the 8 states")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    p = C.parser(__doc__.splitlines()[0], "out/rnn_pooling")
    p.add_argument("--cell", default="gru", choices=["elman", "gru", "lstm", "mlp"], help="recurrent cell")
    p.add_argument("--hidden", type=int, default=32, help="state size")
    args = p.parse_args(argv)
    run(fast=args.fast, out=args.out, seed=args.seed, epochs=args.epochs, cell=args.cell, hidden=args.hidden,
        show_progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
