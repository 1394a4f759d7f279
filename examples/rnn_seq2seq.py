"""An RNN encoder–decoder (§4.7.4) learns to reverse and to sort digit sequences; greedy vs beam search.

Run: ``python -m examples.rnn_seq2seq`` (full) or ``--fast``; ``--cell gru|lstm|elman``.
The source is a sequence of 3 to 6 digits (one-hot vectors); the target is the
same digits reversed (or sorted) followed by an end-of-sequence token. The
encoder's last state is the context c; the decoder, fed c and its previous
token at every step, is trained with teacher forcing on batches of one length.
A held-out set is decoded with greedy search and with beam search, and the
exact-match accuracies (the whole sequence and its length right) are printed
as a table; the training curves and the accuracy per length go to a PNG.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from autograd_dag import nn, optim

from . import _common as C

DIGITS = 10
EOS = DIGITS  # tokens 0..9 are digits, 10 ends a sequence
TASKS = {"reverse": lambda seq: seq[::-1], "sort": lambda seq: np.sort(seq)}


def build_model(cell: str = "gru", hidden: int = 128, seed: int = 0) -> nn.EncoderDecoder:
    """Encoder cell(10 -> H), decoder cell(H + 11 -> H), head Linear(H, 11).

    Shapes: source (B, L, 10), target (B, L') -> logits (B, L', 11).
    """
    rng = np.random.default_rng(seed)
    vocab = DIGITS + 1
    encoder = nn.make_cell(cell, DIGITS, hidden, rng=rng)
    decoder = nn.make_cell(cell, hidden + vocab, hidden, rng=rng)
    return nn.EncoderDecoder(encoder, decoder, vocab_size=vocab, eos=EOS, pooling="last", rng=rng)


def make_batch(task: str, batch: int, length: int, rng: np.random.Generator):
    """(source one-hots (B, L, 10), target tokens (B, L + 1) ending with EOS) for sequences of one length."""
    seqs = rng.integers(0, DIGITS, size=(batch, length))
    targets = np.stack([TASKS[task](s) for s in seqs])
    return np.eye(DIGITS)[seqs], np.concatenate([targets, np.full((batch, 1), EOS)], axis=1), seqs


def clip_gradients(params, max_norm: float) -> float:
    """Rescale the gradients so that their global norm is at most ``max_norm``; returns the norm before."""
    grads = [np.asarray(getattr(p.grad, "value", p.grad)) for p in params if p.grad is not None]
    norm = float(np.sqrt(sum(float(np.sum(g * g)) for g in grads)))
    if norm > max_norm:
        for p in params:
            if p.grad is not None:
                p.grad = np.asarray(getattr(p.grad, "value", p.grad)) * (max_norm / norm)
    return norm


def train(model, task: str, *, steps: int, batch: int, lengths: tuple, lr: float, seed: int,
          show_progress: bool) -> dict:
    """Adam with teacher forcing, gradient clipping and a cosine schedule; returns the loss per step."""
    rng = np.random.default_rng(seed)
    params = model.parameters()
    opt = optim.Adam(params, lr=lr)
    schedule = optim.CosineAnnealingLR(opt, T_max=steps, eta_min=lr / 20)
    losses = []
    start = time.perf_counter()
    bar = C.progress(range(steps), f"{task}", show_progress)
    for _ in bar:
        source, target, _ = make_batch(task, batch, int(rng.integers(lengths[0], lengths[1] + 1)), rng)
        loss = model.loss(source, target)
        opt.zero_grad()
        loss.backward()
        clip_gradients(params, 5.0)
        opt.step()
        schedule.step()
        losses.append(float(loss.value))
        if show_progress and len(losses) % 20 == 0:
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
    return {"loss": losses, "seconds": time.perf_counter() - start}


def evaluate(model, task: str, n: int, lengths: tuple, seed: int, width: int) -> dict:
    """Exact-match accuracy of greedy and beam decoding on n fresh sequences, overall and per length."""
    rng = np.random.default_rng(seed + 10_000)
    per_length = {m: {} for m in ("greedy", "beam")}
    correct = {"greedy": 0, "beam": 0}
    seconds = {"greedy": 0.0, "beam": 0.0}
    for _ in range(n):
        length = int(rng.integers(lengths[0], lengths[1] + 1))
        source, target, _ = make_batch(task, 1, length, rng)
        expected = target[0, :-1].tolist()
        for method, kw in (("greedy", {}), ("beam", {"width": width})):
            t0 = time.perf_counter()
            out = model.generate(source[0], max_len=length + 3, method=method, **kw)
            seconds[method] += time.perf_counter() - t0
            ok = out == expected
            correct[method] += ok
            hits, total = per_length[method].get(length, (0, 0))
            per_length[method][length] = (hits + ok, total + 1)
    return {"greedy": correct["greedy"] / n, "beam": correct["beam"] / n, "per_length": per_length,
            "seconds": seconds, "n": n}


def run(fast: bool = False, out: str = "out/rnn_seq2seq", seed: int = 0, epochs: int | None = None,
        cell: str = "gru", hidden: int | None = None, width: int = 4, show_progress: bool = True,
        verbose: bool = True) -> dict:
    """Train one encoder–decoder per task and compare greedy and beam decoding; returns the results.

    ``epochs`` overrides the number of training steps (batches).
    """
    folder = C.out_dir(out)
    lengths = (2, 4) if fast else (3, 6)
    steps = epochs or (200 if fast else 4000)
    hidden = hidden or (48 if fast else 128)
    n_test = 60 if fast else 500
    results = {}
    with C.single_threaded_blas():
        for task in TASKS:
            model = build_model(cell, hidden, seed)
            history = train(model, task, steps=steps, batch=32 if fast else 64, lengths=lengths, lr=0.005,
                            seed=seed, show_progress=show_progress)
            scores = evaluate(model, task, n_test, lengths, seed, width)
            results[task] = {"history": history, "scores": scores, "model": model}
    table = results_table(results, cell, hidden, width, steps, lengths)
    path = plot(results, os.path.join(folder, "rnn_seq2seq.png"), cell, width)
    example = example_lines(results)
    if verbose:
        print(table)
        print(example)
        print(f"curves: {path}")
    return {"results": results, "table": table, "picture": path}


def results_table(results: dict, cell: str, hidden: int, width: int, steps: int, lengths: tuple) -> str:
    """A Markdown table: task, greedy and beam exact-match accuracy, training time."""
    first = next(iter(results.values()))["scores"]
    lines = [f"{cell} encoder–decoder, hidden size {hidden}, {steps} training batches, lengths "
             f"{lengths[0]}–{lengths[1]}, {first['n']} test sequences", "",
             f"| task | greedy exact match | beam (width {width}) exact match | final loss | train s | "
             f"decode s (greedy / beam) |", "|---|---|---|---|---|---|"]
    for task, r in results.items():
        s, h = r["scores"], r["history"]
        lines.append(f"| {task} | {s['greedy']:.1%} | {s['beam']:.1%} | {np.mean(h['loss'][-50:]):.4f} | "
                     f"{h['seconds']:.0f} | {s['seconds']['greedy']:.1f} / {s['seconds']['beam']:.1f} |")
    return "\n".join(lines)


def example_lines(results: dict) -> str:
    """One decoded example per task."""
    rng = np.random.default_rng(123)
    lines = []
    for task, r in results.items():
        source, target, seq = make_batch(task, 1, 5, rng)
        out = r["model"].generate(source[0], max_len=8, method="beam", width=4)
        lines.append(f"{task}: {seq[0].tolist()} -> {out} (expected {target[0, :-1].tolist()})")
    return "\n".join(lines)


def plot(results: dict, path: str, cell: str, width: int) -> str:
    """Teacher-forced loss per batch (smoothed) and exact-match accuracy per source length."""
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 1 + len(results), figsize=(5 * (1 + len(results)), 4))
    for task, r in results.items():
        loss = np.asarray(r["history"]["loss"])
        k = max(1, len(loss) // 50)
        smooth = np.convolve(loss, np.ones(k) / k, mode="valid")
        axes[0].plot(np.arange(len(smooth)) + k, smooth, label=task)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("training batch")
    axes[0].set_ylabel("cross-entropy (teacher forcing)")
    axes[0].set_title("training loss")
    axes[0].grid(alpha=0.3)
    axes[0].legend()
    for ax, (task, r) in zip(axes[1:], results.items()):
        per = r["scores"]["per_length"]
        lengths = sorted(per["greedy"])
        x = np.arange(len(lengths))
        for offset, method in ((-0.2, "greedy"), (0.2, "beam")):
            acc = [per[method][n][0] / per[method][n][1] for n in lengths]
            label = method if method == "greedy" else f"beam (width {width})"
            ax.bar(x + offset, acc, width=0.4, label=f"{label}: {r['scores'][method]:.1%}")
        ax.set_xticks(x, [str(n) for n in lengths])
        ax.set_ylim(0, 1.3)
        ax.set_xlabel("source length")
        ax.set_ylabel("exact-match accuracy")
        ax.set_title(task)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(loc="upper right")  # above the bars (y up to 1.3)
    fig.suptitle(f"{cell} encoder–decoder (context = last encoder state)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    p = C.parser(__doc__.splitlines()[0], "out/rnn_seq2seq")
    p.add_argument("--cell", default="gru", choices=["elman", "gru", "lstm", "mlp"], help="recurrent cell")
    p.add_argument("--hidden", type=int, default=None, help="state size (default 128, 48 with --fast)")
    p.add_argument("--width", type=int, default=4, help="beam width")
    args = p.parse_args(argv)
    run(fast=args.fast, out=args.out, seed=args.seed, epochs=args.epochs, cell=args.cell, hidden=args.hidden,
        width=args.width, show_progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
