"""Train an MLP on the 8×8 digits, export it to ONNX, serve predictions from ONNX Runtime.

Run: ``python -m examples.onnx_digits`` (full) or ``--fast`` (a few seconds).
Needs ``pip install 'autograd-dag[onnx]'`` (onnx and onnxruntime).

1. Train ``nn.MLP([64, 128, 64, 10])`` with the library's Adam on cross-entropy.
2. Export the trained forward pass (logits -> softargmax probabilities) with
   ``ad.onnx.export``: the weights become named initializers, and the batch
   axis is dynamic (``dynamic_axes={"images": {0: "batch"}}``).
3. Serve the whole test set from an ``onnxruntime.InferenceSession``, in
   batches of 64 and a last partial one, and check the predictions and
   probabilities against the library's own.
4. Time both, batch by batch (a benchmark printed, not asserted), and export
   the training step (loss and gradients w.r.t. every weight) too.

Writes ``digits_mlp.onnx`` and ``digits_mlp_train_step.onnx`` to ``--out``.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

import autograd_dag as ad
from autograd_dag import nn, optim
from autograd_dag.nn import functional as F

from . import _common as C


def _best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(fast: bool = False, out: str = "out/onnx_digits", seed: int = 0, epochs: int | None = None,
        show_progress: bool = True, verbose: bool = True) -> dict:
    """Train, export, serve, compare; returns accuracies, the largest differences, timings and paths."""
    folder = C.out_dir(out)
    x_tr, y_tr, x_te, y_te = C.load_digits(seed=seed, fast=fast, images=False, dtype=np.float32)
    model = nn.MLP([64, 128, 64, 10], activation="relu", rng=seed, dtype=np.float32)
    epochs = epochs or (3 if fast else 20)
    opt = optim.Adam(model.parameters(), lr=3e-3)
    with C.single_threaded_blas():
        history = C.train_classifier(model, opt, x_tr, y_tr, x_te, y_te, epochs=epochs, batch=32, seed=seed,
                                     show_progress=show_progress, name="MLP ")

    # The served function: probabilities of a batch of flattened images, traced at 64 images;
    # its batch axis is dynamic, so the last partial batch is served by the same model.
    batch = 64
    example = x_te[:batch]
    model.eval()

    def digits_mlp(images):
        return model.predict_proba(images)
    predict = ad.jit(digits_mlp)  # one traced program per batch size met
    model_path = os.path.join(folder, "digits_mlp.onnx")
    ad.onnx.export(digits_mlp, example, path=model_path, dynamic_axes={"images": {0: "batch"}})
    session = ad.onnx.session(model_path)

    served_images = len(x_te)
    batches = [x_te[i:i + batch] for i in range(0, served_images, batch)]
    ours = np.concatenate([predict(b) for b in batches])
    served = np.concatenate([session.run(None, {"images": b})[0] for b in batches])
    max_diff = float(np.max(np.abs(ours - served)))
    agree = float(np.mean(ours.argmax(-1) == served.argmax(-1)))
    onnx_accuracy = float(np.mean(served.argmax(-1) == y_te))

    # Timings over the test set (best of a few passes): eager Tensors, the traced program, ONNX Runtime.
    repeats = 3 if fast else 10

    def eager():
        with ad.no_grad():
            for b in batches:
                model.predict_proba(ad.Tensor(b))

    # One BLAS thread for numpy, as in training: OpenBLAS threads spinning on a shared machine
    # cost far more than these small products.
    with C.single_threaded_blas():
        t_eager = _best_of(eager, repeats)
        t_program = _best_of(lambda: [predict(b) for b in batches], repeats)
    t_onnx = _best_of(lambda: [session.run(None, {"images": b}) for b in batches], repeats)

    # The training step exports as well: loss and every weight's gradient on ONNX Runtime.
    step = ad.onnx.training_step_program(model, F.cross_entropy, x_tr[:batch], y_tr[:batch])
    step_path = os.path.join(folder, "digits_mlp_train_step.onnx")
    ad.onnx.export(step, path=step_path)
    step_args = [x_tr[:batch], y_tr[:batch]] + [p.value for p in model.parameters()]
    step_ours = step(*step_args)
    step_served = ad.onnx.run(step_path, *step_args)
    step_diff = max(float(np.max(np.abs(a - b)) / max(np.max(np.abs(a)), 1e-30))
                    for a, b in zip(step_ours, step_served))

    result = {"history": history, "test_accuracy": history["test_acc"][-1], "onnx_accuracy": onnx_accuracy,
              "max_probability_difference": max_diff, "prediction_agreement": agree,
              "train_step_max_relative_difference": step_diff,
              "seconds": {"eager": t_eager, "program": t_program, "onnxruntime": t_onnx},
              "images": served_images, "paths": [model_path, step_path], "folder": folder}
    if verbose:
        print(f"trained {epochs} epochs: test accuracy {result['test_accuracy']:.2%} (ours), "
              f"{onnx_accuracy:.2%} (ONNX Runtime, all {served_images} test images)")
        print(f"exported {model_path}: predictions agree on {agree:.0%} of images, largest probability "
              f"difference {max_diff:.2e} (float32)")
        print(f"training step {step_path}: loss and {len(step_ours) - 1} gradients agree to "
              f"{step_diff:.2e} (largest difference over each output's largest entry)")
        print(f"\nserving {served_images} images in batches of {batch}, the last of "
              f"{served_images - (len(batches) - 1) * batch} (best of {repeats}):")
        print(f"  {'engine':<28}{'ms':>9}{'images/s':>12}")
        for label, seconds in (("autograd_dag eager Tensors", t_eager), ("autograd_dag traced program", t_program),
                               ("ONNX Runtime (CPU)", t_onnx)):
            print(f"  {label:<28}{seconds * 1e3:>9.2f}{served_images / seconds:>12.0f}")
    return result


def main(argv=None) -> int:
    args = C.parser(__doc__.splitlines()[0], "out/onnx_digits").parse_args(argv)
    run(fast=args.fast, out=args.out, seed=args.seed, epochs=args.epochs, show_progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
