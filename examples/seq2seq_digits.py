"""Encoder–decoders (an RNN and a Transformer) learn to reverse and to sort digit sequences; greedy vs beam.

Run: ``python -m examples.seq2seq_digits`` (full) or ``--fast``; ``--models rnn,transformer``;
``--cell gru|lstm|elman|mlp`` for the RNN.
The source is a sequence of 3 to 6 digits; the target is the same digits
reversed (or sorted) followed by an end-of-sequence token EOS. Two models per
task, trained alike (Adam, teacher forcing on batches of one length, gradient
clipping, a cosine schedule):

* ``rnn``: the recurrent encoder–decoder of §4.7.4 (:class:`ad.nn.EncoderDecoder`):
  one-hot digits, the encoder's last state is the context c, the decoder is
  fed c and its previous token at every step;
* ``transformer``: seed 003's encoder–decoder (:class:`ad.nn.Transformer`), the
  target shifted right behind a BOS token.

A held-out set is decoded from both models with the same functions,
:func:`ad.nn.decoding.greedy` and :func:`ad.nn.decoding.beam_search`, over the
models' shared ``start_state`` / ``step`` protocol; the exact-match accuracies
(the whole sequence and its length right) are printed as a table, and the
training curves and the accuracy per source length go to ``seq2seq_digits.png``.

Measured (full run, ``python -m examples.seq2seq_digits --no-progress``: 330 s
of CPU, 12 minutes on the shared 2-core machine; 500 test sequences per task):

| model | task | greedy exact match | beam (width 4) exact match | batches |
|---|---|---|---|---|
| RNN (GRUCell, H=128) | reverse | 100.0% | 100.0% | 4000×64 |
| RNN (GRUCell, H=128) | sort | 100.0% | 100.0% | 4000×64 |
| Transformer (d=64, 2+2 blocks) | reverse | 100.0% | 100.0% | 2000×64 |
| Transformer (d=64, 2+2 blocks) | sort | 100.0% | 100.0% | 2000×64 |

Both models solve both tasks; beam search cannot improve on a perfect greedy
decoder here (the ``--fast`` models, trained for seconds, are where the two
differ). Decoding costs: beam search with width 4 takes about 3× greedy.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from autograd_dag import nn, optim
from autograd_dag.nn import decoding
from autograd_dag.nn import functional as F

from . import _common as C

DIGITS = 10
EOS = DIGITS       # target tokens 0..9 are digits, 10 ends a sequence
BOS = DIGITS + 1   # the Transformer's start token (the RNN has its own: model.bos)
TASKS = {"reverse": lambda seq: seq[::-1], "sort": lambda seq: np.sort(seq)}
MODELS = ("rnn", "transformer")


def build_model(kind: str = "rnn", *, fast: bool = False, cell: str = "gru", hidden: int | None = None,
                seed: int = 0):
    """The model of one row of the table.

    ``rnn``: encoder cell(10 -> H), decoder cell(H + 11 -> H), head Linear(H, 11); H = ``hidden``.
    ``transformer``: nn.Transformer(10, 12, d_model 64, 4 heads, FFN 128, 2 + 2 blocks) (32, 2, 64, 1 + 1
    with ``fast``), float32.
    Shapes (both, through :func:`loss`): digits (B, L), target (B, L + 1) -> a scalar loss.
    """
    rng = np.random.default_rng(seed)
    if kind == "rnn":
        hidden = hidden or (48 if fast else 128)
        vocab = DIGITS + 1
        encoder = nn.make_cell(cell, DIGITS, hidden, rng=rng)
        decoder = nn.make_cell(cell, hidden + vocab, hidden, rng=rng)
        return nn.EncoderDecoder(encoder, decoder, vocab_size=vocab, eos=EOS, pooling="last", rng=rng)
    if kind == "transformer":
        size = dict(d_model=32, heads=2, hidden=64, layers=1) if fast else dict(d_model=64, heads=4, hidden=128,
                                                                                layers=2)
        return nn.Transformer(DIGITS, DIGITS + 2, **size, rng=rng, dtype=np.float32)
    raise ValueError(f"unknown model {kind!r}; choose from {MODELS}")


def describe(model) -> str:
    """A short name of the model for the table."""
    if isinstance(model, nn.EncoderDecoder):
        return f"RNN ({type(model.encoder.cell).__name__}, H={model.encoder.cell.hidden_size})"
    blocks = len(model.encoder.block)
    return f"Transformer (d={model.d_model}, {blocks}+{len(model.decoder.block)} blocks)"


def make_batch(task: str, batch: int, length: int, rng: np.random.Generator):
    """(digits (B, L), target tokens (B, L + 1) ending with EOS) for sequences of one length."""
    seqs = rng.integers(0, DIGITS, size=(batch, length))
    targets = np.stack([TASKS[task](s) for s in seqs])
    return seqs, np.concatenate([targets, np.full((batch, 1), EOS)], axis=1)


def loss(model, seqs: np.ndarray, target: np.ndarray):
    """Teacher-forced cross-entropy of either model. Shapes: seqs (B, L), target (B, L') -> ()."""
    if isinstance(model, nn.EncoderDecoder):
        return model.loss(np.eye(DIGITS)[seqs], target)
    shifted = np.concatenate([np.full((len(target), 1), BOS), target[:, :-1]], axis=1)
    return F.cross_entropy(model.logits(seqs, shifted), target)


def decoder(model, seq: np.ndarray):
    """(step, start state, bos) of the decoding protocol for one source sequence (L,) of digits."""
    if isinstance(model, nn.EncoderDecoder):
        return model.step, model.start_state(np.eye(DIGITS)[seq]), model.bos
    return model.step, model.start_state(seq), BOS


def decode(model, seq: np.ndarray, method: str, *, max_len: int, width: int = 4) -> list[int]:
    """Greedy or beam-search decoding (``ad.nn.decoding``) of one source; the digits, without EOS."""
    step, state, bos = decoder(model, seq)
    if method == "greedy":
        return decoding.greedy(step, state, bos=bos, eos=EOS, max_len=max_len)
    return decoding.beam_search(step, state, bos=bos, eos=EOS, max_len=max_len, width=width)


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
          show_progress: bool, warmup: int = 0, label: str = "") -> dict:
    """Adam with teacher forcing, gradient clipping and a cosine schedule; returns the loss per step."""
    rng = np.random.default_rng(seed)
    params = model.parameters()
    opt = optim.Adam(params, lr=lr)
    schedule = optim.CosineAnnealingLR(opt, T_max=steps, eta_min=lr / 20, warmup=warmup)
    losses = []
    start = time.perf_counter()
    bar = C.progress(range(steps), f"{label}{task}", show_progress)
    for _ in bar:
        seqs, target = make_batch(task, batch, int(rng.integers(lengths[0], lengths[1] + 1)), rng)
        value = loss(model, seqs, target)
        opt.zero_grad()
        value.backward()
        clip_gradients(params, 5.0)
        opt.step()
        schedule.step()
        losses.append(float(value.value))
        if len(losses) % 20 == 0:
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
    return {"loss": losses, "seconds": time.perf_counter() - start}


def evaluate(model, task: str, n: int, lengths: tuple, seed: int, width: int) -> dict:
    """Exact-match accuracy of greedy and beam decoding on n fresh sequences, overall and per length."""
    rng = np.random.default_rng(seed + 10_000)
    per_length = {m: {} for m in ("greedy", "beam")}
    correct = {"greedy": 0, "beam": 0}
    seconds = {"greedy": 0.0, "beam": 0.0}
    model.eval()
    for _ in range(n):
        length = int(rng.integers(lengths[0], lengths[1] + 1))
        seqs, target = make_batch(task, 1, length, rng)
        expected = target[0, :-1].tolist()
        for method in ("greedy", "beam"):
            t0 = time.perf_counter()
            out = decode(model, seqs[0], method, max_len=length + 3, width=width)
            seconds[method] += time.perf_counter() - t0
            ok = out == expected
            correct[method] += ok
            hits, total = per_length[method].get(length, (0, 0))
            per_length[method][length] = (hits + ok, total + 1)
    model.train()
    return {"greedy": correct["greedy"] / n, "beam": correct["beam"] / n, "per_length": per_length,
            "seconds": seconds, "n": n}


# Training settings per model: (steps, batch, learning rate, warmup) for the full and the fast run.
SETTINGS = {"rnn": {"full": (4000, 64, 0.005, 0), "fast": (200, 32, 0.005, 0)},
            "transformer": {"full": (2000, 64, 0.002, 200), "fast": (200, 32, 0.005, 20)}}


def run(fast: bool = False, out: str = "out/seq2seq_digits", seed: int = 0, epochs: int | None = None,
        models=MODELS, cell: str = "gru", hidden: int | None = None, width: int = 4,
        show_progress: bool = True, verbose: bool = True) -> dict:
    """Train one model of each kind per task and compare greedy and beam decoding; returns the results.

    ``results[kind][task]`` holds ``history``, ``scores`` and ``model``; ``epochs``
    overrides the number of training steps (batches) of every model.
    """
    folder = C.out_dir(out)
    lengths = (2, 4) if fast else (3, 6)
    n_test = 60 if fast else 500
    results: dict = {}
    with C.single_threaded_blas():
        for kind in models:
            steps, batch, lr, warmup = SETTINGS[kind]["fast" if fast else "full"]
            steps = epochs or steps
            results[kind] = {}
            for task in TASKS:
                model = build_model(kind, fast=fast, cell=cell, hidden=hidden, seed=seed)
                history = train(model, task, steps=steps, batch=batch, lengths=lengths, lr=lr, seed=seed,
                                warmup=min(warmup, steps // 10), show_progress=show_progress, label=f"{kind} ")
                history["steps"], history["batch"] = steps, batch
                scores = evaluate(model, task, n_test, lengths, seed, width)
                results[kind][task] = {"history": history, "scores": scores, "model": model}
    table = results_table(results, width, lengths)
    path = plot(results, os.path.join(folder, "seq2seq_digits.png"), width)
    example = example_lines(results)
    if verbose:
        print(table)
        print(example)
        print(f"curves: {path}")
    return {"results": results, "table": table, "picture": path}


def results_table(results: dict, width: int, lengths: tuple) -> str:
    """A Markdown table: model, task, greedy and beam exact-match accuracy, training and decoding time."""
    first = next(iter(next(iter(results.values())).values()))["scores"]
    lines = [f"digit sequences of length {lengths[0]}–{lengths[1]}, {first['n']} test sequences per task", "",
             f"| model | task | greedy exact match | beam (width {width}) exact match | final loss | "
             f"batches | train s | decode s (greedy / beam) |", "|---|---|---|---|---|---|---|---|"]
    for kind, per_task in results.items():
        for task, r in per_task.items():
            s, h = r["scores"], r["history"]
            lines.append(f"| {describe(r['model'])} | {task} | {s['greedy']:.1%} | {s['beam']:.1%} | "
                         f"{np.mean(h['loss'][-50:]):.4f} | {h['steps']}×{h['batch']} | {h['seconds']:.0f} | "
                         f"{s['seconds']['greedy']:.1f} / {s['seconds']['beam']:.1f} |")
    return "\n".join(lines)


def example_lines(results: dict) -> str:
    """One beam-decoded example per model and task."""
    lines = []
    for kind, per_task in results.items():
        rng = np.random.default_rng(123)
        for task, r in per_task.items():
            seqs, target = make_batch(task, 1, 5, rng)
            r["model"].eval()
            out = decode(r["model"], seqs[0], "beam", max_len=8, width=4)
            r["model"].train()
            lines.append(f"{kind} {task}: {seqs[0].tolist()} -> {out} (expected {target[0, :-1].tolist()})")
    return "\n".join(lines)


def plot(results: dict, path: str, width: int) -> str:
    """Teacher-forced loss per batch (smoothed) and exact-match accuracy per source length."""
    plt = C.pyplot()
    tasks = list(TASKS)
    fig, axes = plt.subplots(1, 1 + len(tasks), figsize=(5.5 * (1 + len(tasks)), 4.2))
    for kind, per_task in results.items():
        for task, r in per_task.items():
            loss_curve = np.asarray(r["history"]["loss"])
            k = max(1, len(loss_curve) // 50)
            smooth = np.convolve(loss_curve, np.ones(k) / k, mode="valid")
            axes[0].plot(np.arange(len(smooth)) + k, smooth, label=f"{kind} {task}",
                         linestyle="-" if kind == "rnn" else "--")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("training batch")
    axes[0].set_ylabel("cross-entropy (teacher forcing)")
    axes[0].set_title("training loss")
    axes[0].grid(alpha=0.3)
    axes[0].legend()
    bars = [(kind, method) for kind in results for method in ("greedy", "beam")]
    bar_width = 0.8 / len(bars)
    for ax, task in zip(axes[1:], tasks):
        per_len = sorted(next(iter(results.values()))[task]["scores"]["per_length"]["greedy"])
        x = np.arange(len(per_len))
        for i, (kind, method) in enumerate(bars):
            scores = results[kind][task]["scores"]
            acc = [scores["per_length"][method][n][0] / scores["per_length"][method][n][1] for n in per_len]
            label = f"{kind} {method if method == 'greedy' else f'beam ({width})'}: {scores[method]:.1%}"
            ax.bar(x + (i - (len(bars) - 1) / 2) * bar_width, acc, width=bar_width, label=label)
        ax.set_xticks(x, [str(n) for n in per_len])
        ax.set_ylim(0, 1.45)
        ax.set_xlabel("source length")
        ax.set_ylabel("exact-match accuracy")
        ax.set_title(task)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(loc="upper right", fontsize=8)  # above the bars (y up to 1.45)
    fig.suptitle("digit sequences: encoder–decoders, greedy vs beam search")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    p = C.parser(__doc__.splitlines()[0], "out/seq2seq_digits")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated: rnn, transformer (default both)")
    p.add_argument("--cell", default="gru", choices=["elman", "gru", "lstm", "mlp"], help="the RNN's cell")
    p.add_argument("--hidden", type=int, default=None, help="the RNN's state size (default 128, 48 with --fast)")
    p.add_argument("--width", type=int, default=4, help="beam width")
    args = p.parse_args(argv)
    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        p.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    run(fast=args.fast, out=args.out, seed=args.seed, epochs=args.epochs, models=models, cell=args.cell,
        hidden=args.hidden, width=args.width, show_progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
