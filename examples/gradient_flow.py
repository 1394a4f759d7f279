"""Where does the gradient vanish? A deep plain MLP against the same MLP with residual blocks and LayerNorm.

Run: ``python -m examples.gradient_flow [--blocks N]`` or ``--fast``.
Both networks map scikit-learn's 8×8 digits (64 features) through a stem
Linear(64→width), ``blocks`` hidden blocks and a head Linear(width→10):

* plain: each block is s ↦ sigmoid(W s + b) (§4.3);
* residual: each block is s ↦ s + sigmoid(W·LayerNorm(s) + b) (§4.5–4.6): the
  same layer as the plain block's, pre-normalized, with a skip connection.

After a short training run, one batch's loss is traced to a program,
:func:`autograd_dag.overlays.gradient_norms` runs a real backward pass over it
and ``ad.render(program, overlay=...)`` colours every block by the largest
gradient norm inside it (both pictures on one log scale). The plain network's
gradient shrinks by about a factor 4 per sigmoid block on its way back to the
stem; the residual network's reaches the stem whole. Writes
``gradient_flow_plain.png`` and ``gradient_flow_residual.png`` to ``--out``.
"""

from __future__ import annotations

import os
import sys

import numpy as np

import autograd_dag as ad
from autograd_dag import nn, optim
from autograd_dag.nn import functional as F
from autograd_dag.render import as_program

from . import _common as C


class PlainMLP(nn.Classifier):
    """stem Linear(64→width) → blocks × [sigmoid(W s + b)] → head Linear(width→10). Shapes: (B, 64) -> (B, 10)."""

    def __init__(self, in_features: int = 64, width: int = 32, blocks: int = 12, num_classes: int = 10,
                 rng=None, dtype=np.float64):
        super().__init__()
        rng = nn.init.as_generator(rng)
        self.stem = nn.Linear(in_features, width, rng=rng, dtype=dtype)
        self.blocks = [nn.Sequential(nn.Linear(width, width, rng=rng, dtype=dtype), nn.Sigmoid())
                       for _ in range(blocks)]
        self.head = nn.Linear(width, num_classes, rng=rng, dtype=dtype)

    def forward(self, x):
        s = self.stem(x)
        for block in self.blocks:
            s = block(s)
        return self.head(s)


class ResidualLayerNormMLP(PlainMLP):
    """The plain MLP's blocks as residual blocks s + sigmoid(W·LayerNorm(s) + b). Shapes: (B, 64) -> (B, 10)."""

    def __init__(self, in_features: int = 64, width: int = 32, blocks: int = 12, num_classes: int = 10,
                 rng=None, dtype=np.float64):
        super().__init__(in_features, width, 0, num_classes, rng=rng, dtype=dtype)
        rng = nn.init.as_generator(rng)
        self.blocks = [nn.Residual(nn.Sequential(nn.LayerNorm(width, dtype=dtype),
                                                 nn.Linear(width, width, rng=rng, dtype=dtype), nn.Sigmoid()))
                       for _ in range(blocks)]


def block_norms(program, overlay) -> list[float]:
    """The largest gradient norm inside each block ``blocks.i`` of ``program``, in order (what the picture shows)."""
    found: dict[int, float] = {}
    for node in program.nodes:
        if node.scope and node.scope[0].startswith("blocks.") and node.index in overlay:
            i = int(node.scope[0].split(".")[1])
            found[i] = max(found.get(i, 0.0), overlay[node.index])
    return [found[i] for i in sorted(found)]


def run(fast: bool = False, out: str = "out/gradient_flow", seed: int = 0, epochs: int | None = None,
        blocks: int = 12, show_progress: bool = True, verbose: bool = True) -> dict:
    """Train both networks briefly, overlay one batch's gradient norms; returns pictures and norms per block."""
    folder = C.out_dir(out)
    x_tr, y_tr, x_te, y_te = C.load_digits(seed=seed, fast=fast, images=False, dtype=np.float64)
    epochs = epochs or (1 if fast else 5)
    models = {"plain": PlainMLP(blocks=blocks, rng=seed), "residual": ResidualLayerNormMLP(blocks=blocks, rng=seed)}
    results: dict = {}
    batch_x, batch_y = x_te[:64], y_te[:64]
    with C.single_threaded_blas():
        for name, model in models.items():
            opt = optim.Adam(model.parameters(), lr=3e-3)
            history = C.train_classifier(model, opt, x_tr, y_tr, x_te, y_te, epochs=epochs, batch=64, seed=seed,
                                         show_progress=show_progress, name=f"{name} ")
            loss = F.cross_entropy(model(ad.Tensor(batch_x, name="x")), batch_y)
            program = as_program(loss)
            program.name = f"{name}: loss of one batch"
            norms = ad.overlays.gradient_norms(program, batch_x)
            results[name] = {"program": program, "overlay": norms, "history": history,
                             "blocks": block_norms(program, norms), "test_accuracy": history["test_acc"][-1]}
    # One scale for both pictures, or their colours could not be compared.
    every = [x for r in results.values() for x in r["overlay"].values() if x > 0]
    limits = (min(every), max(every))
    pictures = []
    for name, r in results.items():
        path = os.path.join(folder, f"gradient_flow_{name}.png")
        overlay = r["overlay"].with_options(limits=limits)
        ad.render(r["program"], overlay=overlay, depth=0, fold=False, show_dtypes=False, max_nodes=None).render(path)
        pictures.append(path)
        r["picture"] = path
    if verbose:
        print(f"{blocks} blocks of width 32, {epochs} epoch(s); gradient norm per block (largest inside it),"
              f" from the stem's end to the head's:")
        print("| block | " + " | ".join(models) + " |")
        print("|---|" + "---|" * len(models))
        for i in range(blocks):
            print(f"| {i} | " + " | ".join(f"{results[n]['blocks'][i]:.2e}" for n in models) + " |")
        ratios = {n: results[n]["blocks"][0] / results[n]["blocks"][-1] for n in models}
        print("gradient norm at the first block / at the last: "
              + ", ".join(f"{n} {ratios[n]:.2e}" for n in models))
        print("test accuracy: " + ", ".join(f"{n} {results[n]['test_accuracy']:.3f}" for n in models))
        for path in pictures:
            print(f"wrote {path}")
    return {"results": results, "pictures": pictures, "limits": limits}


def main(argv=None) -> None:
    p = C.parser(__doc__.splitlines()[0], "out/gradient_flow")
    p.add_argument("--blocks", type=int, default=12, help="hidden blocks in each network (default 12)")
    args = p.parse_args(argv)
    run(fast=args.fast, out=args.out, seed=args.seed, epochs=args.epochs, blocks=args.blocks,
        show_progress=not args.no_progress)


if __name__ == "__main__":
    main(sys.argv[1:])
