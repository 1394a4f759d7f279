"""``make demo``: the book's program and its gradient program, LeNet on the digits, a Transformer reversing digits.

Run: ``python -m examples.demo [--out out/demo] [--fast]``.
1. Builds f(x1, x2) = x2·e^{x1}·√(x1 + x2·e^{x1}) as a program with ``ad.trace``,
   prints and executes it; builds its gradient program with ``ad.grad_program``,
   prints and executes it and checks it against the derivative written by hand.
2. Renders both programs, an arithmetic circuit with its gradient circuit, and
   the trained LeNet's program.
3. Trains LeNet on scikit-learn's digits (the full run unless ``--fast``) and
   writes its curves and predictions.
4. Trains a small Transformer encoder–decoder to reverse digit sequences for a
   few seconds (the fast setting of ``examples.seq2seq_digits``) and decodes a
   few with greedy and beam search. The output folder is printed at the end.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import autograd_dag as ad

from . import _common as C
from . import lenet_digits, seq2seq_digits


def f(x1, x2):
    """The running example of Blondel & Roulet, *The Elements of Differentiable Programming*, §4.1."""
    return x2 * ad.exp(x1) * ad.sqrt(x1 + x2 * ad.exp(x1))


def gradient_by_hand(x1: float, x2: float) -> tuple[float, float]:
    """∂f/∂x1 and ∂f/∂x2 derived on paper, for comparison with the gradient program."""
    u = x2 * np.exp(x1)
    s = np.sqrt(x1 + u)
    return u * s + u * (1 + u) / (2 * s), np.exp(x1) * s + u * np.exp(x1) / (2 * s)


def reverse_digits(show_progress: bool, steps: int = 300, n_test: int = 40) -> dict:
    """A small Transformer (d_model 32, one encoder and one decoder block) learns to reverse 2–4 digits.

    Returns the model, its greedy and beam exact-match accuracy on ``n_test``
    fresh sequences, a few decoded examples as lines of text, and the seconds spent.
    """
    import time
    start = time.perf_counter()
    model = seq2seq_digits.build_model("transformer", fast=True, seed=0)
    with C.single_threaded_blas():
        history = seq2seq_digits.train(model, "reverse", steps=steps, batch=32, lengths=(2, 4), lr=0.01, seed=0,
                                       warmup=steps // 10, show_progress=show_progress)
        scores = seq2seq_digits.evaluate(model, "reverse", n_test, (2, 4), seed=0, width=4)
        model.eval()
        lines = []
        for seq in ([3, 1, 4, 1], [2, 7, 1], [9, 0, 5, 8]):
            greedy = seq2seq_digits.decode(model, np.array(seq), "greedy", max_len=7)
            beam = seq2seq_digits.decode(model, np.array(seq), "beam", max_len=7, width=4)
            mark = "right" if beam == seq[::-1] else "wrong"
            lines.append(f"  reverse {seq} -> greedy {greedy}, beam {beam} ({mark})")
    return {"model": model, "scores": scores, "lines": lines, "loss": history["loss"],
            "seconds": time.perf_counter() - start}


def render(obj, path: str, **options) -> str:
    """Draw ``obj`` with ``ad.render`` to ``path`` (the format from the suffix); returns the path."""
    return os.path.abspath(ad.render_to(obj, path, **options))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="out/demo", help="folder for the pictures (default out/demo)")
    p.add_argument("--fast", action="store_true", help="train LeNet briefly (a few seconds)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars (shown only on a terminal)")
    args = p.parse_args(argv)
    folder = C.out_dir(args.out)
    pictures: list[str] = []

    print("== 1. The program f(x1, x2) = x2·exp(x1)·sqrt(x1 + x2·exp(x1))")
    program = ad.trace(f, 1.0, 2.0)
    print(program)
    value = program(np.float64(1.0), np.float64(2.0))
    print(f"f(1, 2) = {float(value):.6f}")

    print("\n== 2. Its gradient program (reverse mode as a program transformation)")
    gradient = ad.grad_program(program)
    print(gradient)
    g = [float(v) for v in gradient(np.float64(1.0), np.float64(2.0))]
    by_hand = gradient_by_hand(1.0, 2.0)
    print(f"∇f(1, 2) = ({g[0]:.6f}, {g[1]:.6f}); by hand ({by_hand[0]:.6f}, {by_hand[1]:.6f})")
    print(f"program sizes: f has {len(program)} nodes, its gradient program {len(gradient)} "
          f"(the cheap-gradient principle: a constant factor, not one program per input)")
    if not np.allclose(g, by_hand):
        print("error: the gradient program disagrees with the derivative by hand", file=sys.stderr)
        return 1

    for obj, name, options in ((program, "f_dag.svg", {}), (program, "f_bipartite.svg", {"view": "bipartite"}),
                               (gradient, "grad_f_dag.svg", {})):
        pictures.append(render(obj, os.path.join(folder, name), **options))

    print("\n== 3. An arithmetic circuit and its gradient circuit (Blondel & Roulet, The Elements of Differentiable "
          "Programming, §4.1.4)")
    circuit = ad.circuits.parse("(x + y) * (x + y) + 3*x")
    grad_circuit = ad.circuits.gradient_circuit(circuit)
    print(f"(x + y)(x + y) + 3x: size {circuit.size} edges, {circuit.num_gates} gates, depth {circuit.depth}; "
          f"polynomial {circuit.to_polynomial()}")
    print(grad_circuit)
    pictures.append(render(circuit, os.path.join(folder, "circuit.svg")))
    # The GradientCircuit itself, not its .circuit: drawn as one, titled grad_f, derivatives in the gradient style.
    pictures.append(render(grad_circuit, os.path.join(folder, "circuit_grad.svg")))

    print(f"\n== 4. LeNet on scikit-learn's digits ({'fast' if args.fast else 'full'} run)")
    result = lenet_digits.run(fast=args.fast, out=folder, show_progress=not args.no_progress)
    pictures += result["pictures"]
    model = result["model"].eval()
    images = np.zeros((1, 1, 8, 8), dtype=np.float32)
    lenet_program = ad.trace(lambda images: model(images), images, name="lenet")
    print(f"LeNet as a program: {lenet_program!r}; operations: {lenet_program.op_counts()}")
    pictures.append(render(lenet_program, os.path.join(folder, "lenet_dag.svg")))

    print("\n== 5. A sequence model: a Transformer encoder–decoder learns to reverse digit sequences")
    seq = reverse_digits(show_progress=not args.no_progress)
    print(f"{seq2seq_digits.describe(seq['model'])}, {len(seq['loss'])} batches of 32 (teacher forcing): "
          f"cross-entropy {np.mean(seq['loss'][:10]):.2f} -> {np.mean(seq['loss'][-10:]):.2f}; "
          f"exact match on {seq['scores']['n']} new sequences: greedy {seq['scores']['greedy']:.0%}, "
          f"beam search {seq['scores']['beam']:.0%} ({seq['seconds']:.0f} s; the full comparison with an RNN: "
          f"python -m examples.seq2seq_digits)")
    print("\n".join(seq["lines"]))

    print("\n== Pictures written:")
    for path in pictures:
        print(f"  {path}")
    print(f"\nOutput folder: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
