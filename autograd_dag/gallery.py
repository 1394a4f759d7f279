"""The gallery in ``viz/``: a list of named programs, each drawn as SVG with its DOT source.

Each entry is one line in :data:`GALLERY`: a name, a title, a function that
builds the program, the views to draw and render options. Later features
append theirs (``GALLERY.append(Entry("lenet", "LeNet-5", build_lenet))``).
``autograd-dag gallery`` (or :func:`build_gallery`) regenerates the folder.
"""

from __future__ import annotations

import os
import time
import types
from typing import Callable, NamedTuple

import numpy as np

from . import circuits, jitting, named, nn, overlays, text
from .autodiff import grad_program
from .core import Tensor, name_scope
from .primitives.elementwise import exp, sqrt, tanh
from .primitives.linalg import matmul
from .primitives import fused, reductions
from .primitives.structure import sum as ad_sum
from .program import Program
from .render import as_program, render, save


class Entry(NamedTuple):
    """One gallery picture set: ``{name}_{view}.svg`` and ``.dot`` for each view."""

    name: str
    title: str
    build: Callable[[], Program]
    views: tuple = ("dag", "bipartite")
    options: dict = {}


# A recorded node's source line is the first frame outside the package, which
# for the gallery's own code (inside the package) would be whoever started it:
# `<frozen runpy>:88` or the console script. Its builders therefore run under
# a package-relative file name, so that pictures name the gallery's lines and
# regenerating them gives the same bytes wherever the package is installed.
GALLERY_FILE = "autograd_dag/gallery.py"


def _relabelled(code: types.CodeType) -> types.CodeType:
    consts = tuple(_relabelled(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=GALLERY_FILE, co_consts=consts)


def gallery_source(func):
    """Decorator: nodes recorded by ``func`` (and functions defined in it) name its lines.

    Example:
        >>> book_program().nodes[2].source
        ('autograd_dag/gallery.py', 67)
    """
    func.__code__ = _relabelled(func.__code__)
    return func


@gallery_source
def book_program() -> Program:
    """The book's example (Fig. 4.3): f(x1, x2) = x2·e^{x1}·√(x1 + x2·e^{x1})."""
    def f(x1, x2):
        a = x2 * exp(x1)  # computed once and used twice, as in the figure
        return a * sqrt(x1 + a)
    return jitting.trace(f, 1.0, 2.0)


@gallery_source
def book_gradient() -> Program:
    """The gradient program of :func:`book_program` (both partial derivatives)."""
    return grad_program(book_program())


@gallery_source
def mlp_program(widths=(4, 16, 16, 16, 3), batch: int = 8) -> Program:
    """A small MLP with a softmax cross-entropy loss, each layer in its own ``name_scope``.

    Written with raw Tensor operations (W, b as leaves requiring gradients) so
    that it depends on nothing but the core; shapes (batch, widths[0]) -> ().
    """
    rng = np.random.default_rng(0)
    params = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        params.append((Tensor(rng.normal(0, a ** -0.5, (a, b)), requires_grad=True, name=f"W{i}"),
                       Tensor(np.zeros(b), requires_grad=True, name=f"b{i}")))
    labels = np.eye(widths[-1])[rng.integers(0, widths[-1], batch)]

    def mlp(x):
        for i, (w, b) in enumerate(params):
            with name_scope(f"layer{i}"):
                x = matmul(x, w) + b
                if i < len(params) - 1:
                    x = tanh(x)
        with name_scope("loss"):
            return reductions.mean(fused.logsumexp(x, axis=-1) - ad_sum(x * labels, axis=-1))
    return jitting.trace(mlp, rng.normal(size=(batch, widths[0])))


@gallery_source
def mlp_gradient() -> Program:
    """The gradient program of :func:`mlp_program` with respect to its input."""
    return grad_program(mlp_program())


@gallery_source
def nn_mlp_program() -> Program:
    """``nn.MLP([4, 16, 16, 3])`` with cross-entropy on a batch of 8: the layer library's own scopes."""
    model = nn.MLP([4, 16, 16, 3], activation="tanh", rng=0)
    x = Tensor(np.random.default_rng(0).normal(size=(8, 4)), name="x")
    loss = nn.functional.cross_entropy(model(x), np.arange(8) % 3)  # from logits, as in training
    loss.name = "loss"
    return as_program(loss)


@gallery_source
def lenet_program() -> Program:
    """``nn.LeNet`` on a batch of two 28×28 images, with cross-entropy."""
    model = nn.LeNet(rng=0)
    x = Tensor(np.zeros((2, 1, 28, 28)), name="images")
    loss = nn.functional.cross_entropy(model(x), np.array([0, 1]))  # from logits, as in training
    loss.name = "loss"
    return as_program(loss)


@gallery_source
def sgns_program() -> Program:
    """word2vec's skip-gram negative-sampling loss (seed 003 §13.1): 4 (centre, context) pairs, 3 negatives each.

    ``nn.SkipGram`` over a 12-word vocabulary with 5-dimensional vectors; the
    lookups are ``take`` nodes whose gradients are ``take_add`` scatter-adds.
    """
    model = nn.SkipGram(12, 5, rng=0)
    model.output_embeddings.weight.value[...] = np.random.default_rng(1).normal(0, 0.1, (12, 5))
    centres = Tensor(np.array([1, 2, 2, 3]), name="centres")
    contexts = Tensor(np.array([2, 1, 3, 2]), name="contexts")
    negatives = Tensor(np.random.default_rng(0).integers(1, 12, (4, 3)), name="negatives")
    loss = model(centres, contexts, negatives)
    loss.name = "loss"
    return as_program(loss)


@gallery_source
def rnn_program(steps: int = 3) -> Program:
    """``nn.SequenceToVector`` (a GRU cell, mean pooling, a linear head) on 3 steps, with cross-entropy.

    Each step of the recursion records in its own ``name_scope("step<l>")``, so
    the drawing shows one cluster per step, all using the same shared weights.
    Shapes: x (2, steps, 3) -> ().
    """
    model = nn.SequenceToVector(nn.GRUCell(3, 4, rng=0), pooling="mean", head=nn.Linear(4, 2, rng=1))
    x = Tensor(np.random.default_rng(0).normal(size=(2, steps, 3)), name="x")
    loss = nn.functional.cross_entropy(model(x), np.array([0, 1]))
    loss.name = "loss"
    return as_program(loss)


@gallery_source
def transformer_program() -> Program:
    """``nn.TransformerLM`` (seed 000: 2 blocks, 2 heads) on a batch of two 5-token sequences, with cross-entropy."""
    model = nn.TransformerLM(vocab_size=12, d_model=8, heads=2, hidden=16, layers=2, rng=0)
    tokens = np.array([[1, 5, 2, 7, 3], [4, 4, 9, 0, 11]])
    # Next-token prediction: position t is scored against token t + 1.
    loss = nn.functional.cross_entropy(model.logits(tokens[:, :-1]), tokens[:, 1:])
    loss.name = "loss"
    return as_program(loss)


@gallery_source
def chain_program(n_ops: int = 1000, width: int = 8) -> Program:
    """A 1,000-op program without scopes: an unrolled tanh recurrence with shared weights.

    h_t = tanh(W h_{t-1} + U x_t + b) for about n_ops / 5 steps, loss = Σ h_T:
    every step reuses W, U and b, so the drawing has long edges, the hard case
    for Graphviz. Shapes: x (T, width) -> ().
    """
    steps = max(1, n_ops // 5)
    rng = np.random.default_rng(1)
    w = Tensor(rng.normal(0, 0.3, (width, width)), requires_grad=True, name="W")
    u = Tensor(rng.normal(0, 0.3, (width, width)), requires_grad=True, name="U")
    b = Tensor(np.zeros(width), requires_grad=True, name="b")

    def rnn(xs):
        h = tanh(xs[0])
        for t in range(1, steps):
            h = tanh(matmul(w, h) + matmul(u, xs[t]) + b)
        return ad_sum(h)
    return jitting.trace(rnn, rng.normal(size=(steps, width)))


@gallery_source
def circuit_program() -> Program:
    """The arithmetic circuit (x + y)·(x + y) + 3x (§4.1.4 of the book): the parser shares x + y."""
    return circuits.parse("(x + y) * (x + y) + 3*x", name="f").to_program("circuit")


@gallery_source
def circuit_gradient() -> Program:
    """Its gradient circuit: f and both partial derivatives, built by reverse mode and simplified."""
    c = circuits.parse("(x + y) * (x + y) + 3*x", name="f")
    return circuits.gradient_circuit(c).to_program("grad_f")


@gallery_source
def named_transformer_program() -> Program:
    """The ``transformer`` entry's model written in named form (``ad.named.seed000``), with cross-entropy.

    The same parameters as :func:`transformer_program`; every node a named
    operation made shows its axes with sizes (``batch:2 × seq:4 × layer:8``)
    instead of a bare shape. loss = mean_{batch,seq}(logsumexp_vocab(L) − L ⊙_vocab Y).
    """
    model = named.seed000.TransformerLM.from_positional(
        nn.TransformerLM(vocab_size=12, d_model=8, heads=2, hidden=16, layers=2, rng=0))
    tokens = np.array([[1, 5, 2, 7, 3], [4, 4, 9, 0, 11]])
    L = model.logits(named.seed000.one_hot(tokens[:, :-1], 12))
    Y = named.seed000.one_hot(tokens[:, 1:], 12)
    loss = named.nmean(named.logsumexp(L, "vocab") - named.ndot(L, Y, "vocab"), ("batch", "seq"))
    loss.name = "loss"
    return named.program_of(loss)


@gallery_source
def bert_program() -> Program:
    """``nn.BERT`` (2 blocks, 2 heads) pretraining on two ``[CLS] A [SEP] B [SEP]`` pairs: MLM + NSP losses.

    The embeddings, each block, the MLM head (scoring against the tied token
    embeddings), the pooler and the NSP head each render as a cluster.
    """
    model = nn.BERT(12, d_model=8, heads=2, hidden=16, layers=2, max_length=8, rng=0)
    tokens = np.array([[2, 6, 7, 3, 8, 3], [2, 9, 3, 10, 11, 3]])
    segments = np.array([[0, 0, 0, 0, 1, 1], [0, 0, 0, 1, 1, 1]])
    selected = np.zeros(tokens.shape, bool)
    selected[0, 2] = selected[1, 4] = True        # the MLM positions
    masked = np.where(selected, 4, tokens)       # [MASK] is id 4 in a text.Vocabulary
    batch = text.PretrainingBatch(masked, segments, tokens != 0, tokens, selected, np.array([1, 0]))
    loss = model.loss(batch).total
    loss.name = "loss"
    return as_program(loss)


@gallery_source
def transformer_gradient() -> Program:
    """The gradient program of :func:`transformer_program`'s model with respect to its parameters."""
    model = nn.TransformerLM(vocab_size=12, d_model=8, heads=2, hidden=16, layers=2, rng=0)
    tokens = np.array([[1, 5, 2, 7, 3], [4, 4, 9, 0, 11]])
    loss = nn.functional.cross_entropy(model.logits(tokens[:, :-1]), tokens[:, 1:])
    loss.name = "loss"
    return grad_program(as_program(loss, parameters_as_inputs=True))



@gallery_source
def lm40_gradient() -> Program:
    """The gradient program of a 40-block ``nn.TransformerLM`` (the benchmarks' large model, ~4,500 nodes)."""
    model = nn.TransformerLM(vocab_size=12, d_model=8, heads=2, hidden=16, layers=40, rng=0)
    tokens = np.array([[1, 5, 2, 7, 3], [4, 4, 9, 0, 11]])
    loss = nn.functional.cross_entropy(model.logits(tokens[:, :-1]), tokens[:, 1:])
    loss.name = "loss"
    return grad_program(as_program(loss, parameters_as_inputs=True))


def _deep_mlp_batch():
    rng = np.random.default_rng(0)
    return rng.normal(size=(16, 8)), np.arange(16) % 4


@gallery_source
def deep_mlp_program() -> Program:
    """A plain MLP of 10 sigmoid blocks of width 8 (untrained, seeded) with cross-entropy on a batch of 16."""
    x, y = _deep_mlp_batch()
    model = nn.Sequential(nn.Linear(8, 8, rng=0),
                          *[nn.Sequential(nn.Linear(8, 8, rng=1 + i), nn.Sigmoid()) for i in range(10)],
                          nn.Linear(8, 4, rng=11))
    loss = nn.functional.cross_entropy(model(Tensor(x, name="x")), y)
    loss.name = "loss"
    return as_program(loss)


def deep_mlp_gradient_norms(program: Program):
    """The overlay of :func:`deep_mlp_program`: the norm of the loss's gradient at every node, one backward pass."""
    return overlays.gradient_norms(program, _deep_mlp_batch()[0])


def render_options(entry: Entry, program: Program) -> dict:
    """The keywords ``render`` gets for ``entry``'s built ``program``: its options, an ``overlay`` given as a
    function of the program (numbers from running it) replaced by that function's result.

    Example:
        >>> e = GALLERY[-1]
        >>> type(render_options(e, e.build())["overlay"]).__name__
        'Overlay'
    """
    overlay = entry.options.get("overlay")
    return {**entry.options, "overlay": overlay(program)} if callable(overlay) else dict(entry.options)


GALLERY: list[Entry] = [
    Entry("book", "f(x1, x2) = x2 e^x1 sqrt(x1 + x2 e^x1), Fig. 4.3 of the book", book_program),
    Entry("book_grad", "its gradient program (reverse mode)", book_gradient),
    Entry("mlp", "MLP with softmax cross-entropy, one name_scope per layer", mlp_program),
    Entry("mlp_collapsed", "the same MLP at depth=0: layers collapsed, identical ones folded",
          mlp_program, options={"depth": 0}),
    Entry("mlp_grad", "the MLP's gradient program with respect to its input", mlp_gradient, views=("dag",)),
    Entry("nn_mlp", "nn.MLP([4, 16, 16, 3]) from the layer library, with cross-entropy", nn_mlp_program),
    Entry("lenet", "nn.LeNet on 28x28 images, with cross-entropy", lenet_program),
    Entry("sgns", "word2vec skip-gram negative-sampling loss (nn.SkipGram): 4 pairs, 3 negatives each",
          sgns_program),
    Entry("circuit", "arithmetic circuit (x + y)(x + y) + 3x, x + y computed once: size 8 (10 written out), "
          "depth 3", circuit_program),
    Entry("circuit_grad", "its gradient circuit (f, df/dx, df/dy): size 12, ratio 1.5", circuit_gradient),
    Entry("transformer", "nn.TransformerLM (seed 000) with cross-entropy: one cluster per block and per "
          "attention head group", transformer_program, views=("dag",)),
    Entry("transformer_collapsed", "the same TransformerLM at depth=0: its two blocks folded into block × 2",
          transformer_program, views=("dag",), options={"depth": 0}),
    Entry("named_transformer", "the same TransformerLM in named form (ad.named.seed000, one line per seed "
          "equation): nodes and edges show axis names with sizes", named_transformer_program, views=("dag",),
          options={"edge_labels": "shape"}),
    Entry("transformer_drill", "drill-down: the derivative of block 1's attention alone, one scope of the "
          "TransformerLM's gradient program; values entering and leaving it marked", transformer_gradient,
          views=("dag",), options={"scope": "backward pass.block.1.attention"}),
    Entry("bert", "nn.BERT pretraining loss (MLM + NSP): clusters for the embeddings, each encoder block "
          "and each head (MLM with tied output embeddings, pooler, NSP)", bert_program, views=("dag",)),
    Entry("rnn", "nn.SequenceToVector: a GRU cell unrolled 3 steps (one cluster per step), mean pooling, "
                 "cross-entropy", rnn_program),
    Entry("chain_1000", "1,000-op unrolled recurrence (layout-speed test case)", chain_program),
    Entry("lm40_grad", "a large model at the default node budget: the gradient program of a 40-block "
          "nn.TransformerLM (~4,500 nodes), its 40 blocks folded", lm40_gradient),
    Entry("deep_mlp_grad_norms", "overlay: the gradient norm of every node of a 10-block sigmoid MLP "
          "(ad.overlays.gradient_norms, one batch; each block's box shows the largest inside it): the "
          "gradient shrinks block by block towards the input", deep_mlp_program, views=("dag",),
          options={"depth": 0, "fold": False, "overlay": deep_mlp_gradient_norms}),
]


def build_gallery(out_dir: str = "viz", only=None, *, verbose: bool = False) -> list[str]:
    """Draw every gallery entry (or those named in ``only``) into ``out_dir``; returns the files.

    Writes ``{name}_{view}.svg`` and ``{name}_{view}.dot`` per entry and view,
    and ``README.md`` listing every entry.

    Example:
        >>> files = build_gallery("/tmp/viz", only=["book"])  # doctest: +SKIP
    """
    os.makedirs(out_dir, exist_ok=True)
    wanted = set(only) if only else None
    if wanted:
        unknown = wanted - {e.name for e in GALLERY}
        if unknown:
            raise ValueError(f"gallery: unknown entries {sorted(unknown)}; known: {[e.name for e in GALLERY]}")
    written = []
    for entry in GALLERY:
        if wanted and entry.name not in wanted:
            continue
        program = entry.build()
        for view in entry.views:
            t0 = time.perf_counter()
            graph = render(program, view, **render_options(entry, program))
            stem = os.path.join(out_dir, f"{entry.name}_{view}")
            written.append(save(graph, stem + ".dot"))
            written.append(save(graph, stem + ".svg"))
            if verbose:
                print(f"{stem}.svg  ({len(program.nodes)} program nodes, {time.perf_counter() - t0:.2f} s)")
    readme = os.path.join(out_dir, "README.md")
    with open(readme, "w", encoding="utf-8") as fh:
        fh.write(gallery_readme())
    written.append(readme)
    return written


def gallery_readme() -> str:
    """The text of ``viz/README.md``: one line per picture, with its DOT source."""
    lines = ["# Gallery", "",
             "Programs drawn by `autograd_dag.render` (`ad.render`). Regenerate with "
             "`autograd-dag gallery` (or `python -m autograd_dag.cli gallery`).", "",
             "Each picture comes with its Graphviz source (`.dot`). Views: `dag` draws one node per "
             "function and its output variable; `bipartite` draws variables (ellipses) and functions "
             "(boxes) apart (§4.1.3 of Blondel & Roulet, *The Elements of Differentiable Programming*).", "",
             "| entry | what | files |", "|---|---|---|"]
    for entry in GALLERY:
        files = ", ".join(f"[{entry.name}_{v}.svg]({entry.name}_{v}.svg) ([dot]({entry.name}_{v}.dot))"
                          for v in entry.views)
        options = ", ".join(f"{k}={v.__name__ + '(program)' if callable(v) else repr(v)}"
                            for k, v in entry.options.items())
        lines.append(f"| `{entry.name}` | {entry.title}{f' (`{options}`)' if options else ''} | {files} |")
    return "\n".join(lines) + "\n"
