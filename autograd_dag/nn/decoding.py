"""Decoding autoregressive models: greedy search, beam search, top-k sampling, and a sliding context.

A model to decode exposes two methods, used here as plain functions:

* ``state = model.start_state(source=None)``: the state before the first token
  (for an encoder–decoder, the encoded source);
* ``logits, state = model.step(state, token)``: feed one ``token`` (an int; the
  first is ``bos``) and get the scores of the next token, a numpy array of
  shape (vocab,), and the new state. States are opaque to this module.

Every function calls ``step`` inside ``ad.no_grad()`` (nothing is recorded)
and returns the generated tokens as a list of ints that **excludes bos and
excludes eos**: generation stops at the first eos, which is not returned. A
sequence that reaches ``max_len`` tokens without eos is returned as it is
(``max_len`` counts the generated tokens, eos included: at most ``max_len``
calls of ``step`` per hypothesis). ``eos=None`` never stops early.

:class:`SlidingContext` wraps a language model whose context is bounded (a
Transformer trained on windows of ``window`` positions) in the same protocol,
so that any of the three functions generates past that length.

Example:
    >>> import numpy as np
    >>> from autograd_dag.nn import decoding
    >>> table = np.log(np.array([[.1, .6, .3],      # after token 0 (bos here)
    ...                          [.1, .1, .8],      # after token 1
    ...                          [.7, .2, .1]]))    # after token 2
    >>> step = lambda state, token: (table[token], state)
    >>> decoding.greedy(step, None, bos=0, eos=0, max_len=10)   # 0 → 1 → 2 → eos
    [1, 2]
"""

from __future__ import annotations

import numpy as np

from ..core import no_grad
from ..errors import AutogradDagError, ShapeError

__all__ = ["greedy", "beam_search", "sample", "log_softargmax", "SlidingContext"]


def log_softargmax(logits) -> np.ndarray:
    """log softargmax of a numpy vector, computed stably (log-probabilities of the next token).

    Shapes: (vocab,) -> (vocab,).
    Example: ``log_softargmax(np.zeros(2))`` is ``[-log 2, -log 2]``.
    """
    z = np.asarray(logits, dtype=np.float64)
    m = np.max(z)
    return z - m - np.log(np.sum(np.exp(z - m)))


def _check(name: str, bos, eos, max_len) -> None:
    for label, value in (("bos", bos), ("max_len", max_len)) + ((("eos", eos),) if eos is not None else ()):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise AutogradDagError(f"{name}: {label} must be an int; got {value!r}")
    if max_len < 0:
        raise AutogradDagError(f"{name}: max_len must be >= 0; got {max_len}")


def _call(name: str, step, state, token: int):
    with no_grad():
        logits, state = step(state, int(token))
    logits = np.asarray(getattr(logits, "value", logits))
    if logits.ndim != 1 or logits.size == 0:
        raise ShapeError(f"{name}: Expect: step(state, token) to return logits of shape (vocab,). "
                         f"Actual: shape {logits.shape}")
    return logits, state


def greedy(step, state, *, bos: int, eos: int | None, max_len: int) -> list[int]:
    """Feed bos, then repeatedly the most likely next token (ties: the lowest id), until eos or max_len.

    Returns the generated tokens without bos and without eos.
    Example: see the module docstring; ``greedy(step, state, bos=0, eos=0, max_len=0) == []``.
    """
    _check("greedy", bos, eos, max_len)
    out: list[int] = []
    token = bos
    for _ in range(max_len):
        logits, state = _call("greedy", step, state, token)
        token = int(np.argmax(logits))
        if eos is not None and token == eos:
            break
        out.append(token)
    return out


def beam_search(step, state, *, bos: int, eos: int | None, max_len: int, width: int = 4,
                length_penalty: float = 1.0) -> list[int]:
    """Keep the ``width`` most likely partial sequences; return the best finished one.

    At each step every live hypothesis is extended by every token; the
    candidates are ranked by their summed log-probability and read in that
    order: among the first ``width``, one ending in eos is finished; the others,
    read on past the first ``width`` if need be, refill the beam to ``width``
    live hypotheses. The answer is the
    finished hypothesis with the highest score

        score = Σ log p(token) / length ** length_penalty,

    where length counts the generated tokens, eos included
    (``length_penalty=0``: plain log-probability; 1: per-token average).
    The search ends when no live hypothesis can still beat the best finished
    one (log-probabilities only fall as a hypothesis grows, so a live one
    scores at most its log-probability over the largest length ** length_penalty
    it can reach), or the beam is empty, or after ``max_len`` tokens, when the
    live ones count as finished. (Stopping as soon as ``width`` hypotheses have
    finished, as some implementations do, lets early short ones end the search
    before a likelier, longer one can finish: worse answers than greedy's.)
    With ``width=1`` and ``length_penalty=0`` this is exactly :func:`greedy`
    (with a length penalty the runner-up of a step whose best is eos goes on,
    and may end with a better average).
    Returns the tokens without bos and without eos.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.nn import decoding
        >>> table = {(): [.0, .6, .4], (1,): [.4, .3, .3], (2,): [.9, .05, .05]}   # token 0 is eos
        >>> def step(prefix, token):
        ...     prefix = prefix if token == 3 else prefix + (token,)
        ...     return np.log(np.array(table.get(prefix, [1., 0., 0.])) + 1e-12), prefix
        >>> decoding.greedy(step, (), bos=3, eos=0, max_len=5), decoding.beam_search(step, (), bos=3, eos=0, max_len=5)
        ([1], [2])
    """
    _check("beam_search", bos, eos, max_len)
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
        raise AutogradDagError(f"beam_search: width must be an int >= 1; got {width!r}")
    if max_len == 0:
        return []
    # a hypothesis: (summed log-probability, tokens, state before its last token is fed)
    live = [(0.0, [], state, bos)]
    finished: list[tuple[float, list[int]]] = []

    def score(logp: float, length: int) -> float:
        return logp / (max(length, 1) ** length_penalty)

    for length in range(1, max_len + 1):
        candidates = []
        for order, (logp, tokens, st, last) in enumerate(live):
            logits, new_state = _call("beam_search", step, st, last)
            values = logp + log_softargmax(logits)
            # A beam of `width` takes at most `width` candidates of one hypothesis besides eos, so its
            # best `width + 1` tokens suffice; ranked by the same values as the merge below (ties:
            # lowest id), so that rounding cannot order a hypothesis's tokens two ways.
            best = np.argsort(-values, kind="stable")[:width + 1]
            for token in best:
                candidates.append((float(values[token]), order, int(token), tokens, new_state))
        # Stable ranking: higher log-probability first, ties by hypothesis then token (as greedy's argmax).
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        next_live = []
        for rank, (logp, _, token, tokens, new_state) in enumerate(candidates):
            if eos is not None and token == eos:
                if rank < width:
                    finished.append((score(logp, length), tokens))
            elif len(next_live) < width:
                next_live.append((logp, tokens + [token], new_state, token))
            if len(next_live) >= width and rank >= width - 1:
                break
        live = next_live
        if not live:
            break
        if finished and length < max_len:
            # The best any live hypothesis can still score: its log-probability (which only falls)
            # over the most favourable length it can reach, length + 1 to max_len.
            reach = max((length + 1) ** length_penalty, max_len ** length_penalty)
            if max(logp for logp, _, _, _ in live) / reach <= max(s for s, _ in finished):
                live = []
                break
    # Stopped by max_len: the live hypotheses compete unfinished.
    finished.extend((score(logp, len(tokens)), tokens) for logp, tokens, _, _ in live)
    best_score = max(s for s, _ in finished)
    return next(tokens for s, tokens in finished if s == best_score)


def sample(step, state, *, bos: int, eos: int | None, max_len: int, top_k: int | None = None,
           temperature: float = 1.0, rng: np.random.Generator) -> list[int]:
    """Draw each next token from softargmax(logits / temperature), restricted to the ``top_k`` best.

    ``top_k=None`` samples from the whole vocabulary; ``top_k=1`` is greedy.
    The k best are found by a stable sort (ties: lower ids first), so exactly k
    tokens can be drawn. ``rng`` (a ``numpy.random.Generator``) makes the draw
    reproducible. Returns the tokens without bos and without eos.

    Example:
        >>> import numpy as np
        >>> from autograd_dag.nn import decoding
        >>> step = lambda state, token: (np.array([0., 1., 2., 3.]), state)
        >>> out = decoding.sample(step, None, bos=0, eos=None, max_len=6, top_k=2, rng=np.random.default_rng(0))
        >>> set(out) <= {2, 3}
        True
    """
    _check("sample", bos, eos, max_len)
    if not isinstance(rng, np.random.Generator):
        raise AutogradDagError(f"sample: rng must be a numpy.random.Generator; got {type(rng).__name__}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
        raise AutogradDagError(f"sample: top_k must be None or an int >= 1; got {top_k!r}")
    if not temperature > 0:
        raise AutogradDagError(f"sample: temperature must be > 0 (use greedy for the limit 0); got {temperature}")
    out: list[int] = []
    token = bos
    for _ in range(max_len):
        logits, state = _call("sample", step, state, token)
        z = np.asarray(logits, dtype=np.float64) / temperature
        ids = np.arange(z.size) if top_k is None else np.argsort(-z, kind="stable")[:top_k]
        p = np.exp(log_softargmax(z[ids]))
        token = int(ids[rng.choice(ids.size, p=p / p.sum())])
        if eos is not None and token == eos:
            break
        out.append(token)
    return out


class SlidingContext:
    """A bounded-context model in the decoding protocol: restart it from its last tokens when the context is full.

    ``model`` exposes ``model.start_state(prefix)`` (the state after consuming the
    token ids ``prefix``, e.g. :meth:`TransformerLM.start_state`) and
    ``model.step``. The wrapped state is (model state, the tokens it has
    consumed). Before a step would feed position ``window`` (the model never saw
    positions that far in training), the model restarts from the last
    ``keep - 1`` tokens (default ``keep = window // 2``), and the step's token
    makes ``keep``: every logit comes from a context of at most ``window``
    tokens. Its :meth:`step` and :meth:`start_state` go to :func:`greedy`,
    :func:`beam_search` or :func:`sample` like a model's.
    Shapes: ``step(state, token)`` -> (logits (vocab,), state), as the model's.

    Example:
        >>> import numpy as np
        >>> from autograd_dag import nn
        >>> from autograd_dag.nn import decoding
        >>> lm = nn.TransformerLM(vocab_size=5, d_model=8, heads=2, hidden=16, layers=1, rng=0)
        >>> bounded = decoding.SlidingContext(lm, window=4)
        >>> state = bounded.start_state([1, 2])          # a prompt 1, 2, 3: feed 3 as the first token
        >>> out = decoding.sample(bounded.step, state, bos=3, eos=None, max_len=10, top_k=2,
        ...                       rng=np.random.default_rng(0))
        >>> len(out), all(0 <= t < 5 for t in out)
        (10, True)
    """

    def __init__(self, model, window: int, keep: int | None = None):
        keep = window // 2 if keep is None else keep
        for label, value in (("window", window), ("keep", keep)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise AutogradDagError(f"SlidingContext: {label} must be an int; got {value!r}")
        if not 1 <= keep <= window:
            raise AutogradDagError(f"SlidingContext: Expect: 1 <= keep <= window. Actual: keep {keep}, "
                                   f"window {window}")
        self.model, self.window, self.keep = model, int(window), int(keep)

    def start_state(self, prefix=()):
        """The model's state after ``prefix`` (token ids, at most ``window - 1`` of them), with the prefix kept."""
        tokens = tuple(int(t) for t in np.asarray(prefix, dtype=np.int64).reshape(-1))
        if len(tokens) >= self.window:
            raise AutogradDagError(f"SlidingContext.start_state: a prefix of {len(tokens)} tokens leaves no "
                                   f"room in a window of {self.window}")
        return self.model.start_state(np.array(tokens, dtype=np.int64)), tokens

    def step(self, state, token: int):
        """Feed ``token``, restarting the model from its last ``keep - 1`` tokens first if the window is full."""
        inner, tokens = state
        if len(tokens) >= self.window:
            tokens = tokens[len(tokens) - (self.keep - 1):]
            inner = self.model.start_state(np.array(tokens, dtype=np.int64))
        logits, inner = self.model.step(inner, int(token))
        return logits, (inner, tokens + (int(token),))
