"""Decoding (autograd_dag.nn.decoding): greedy, beam search and top-k sampling on hand-made step
functions whose answers are known, on a random model, and against brute-force enumeration."""

import itertools

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.nn import decoding

BOS, EOS = 9, 0


def np_log_softmax(z):
    z = np.asarray(z, dtype=np.float64)
    return z - np.log(np.exp(z - z.max()).sum()) - z.max()


class Table:
    """A step function over prefixes: logits = table[prefix] (default: a fixed random function of the prefix).

    The state is the prefix of generated tokens; ``calls`` logs every (prefix, token) fed.
    """

    def __init__(self, vocab, table=None, seed=0):
        self.vocab, self.table, self.seed, self.calls = vocab, table or {}, seed, []

    def logits(self, prefix):
        if prefix in self.table:
            return np.log(np.asarray(self.table[prefix], dtype=np.float64) + 1e-300)
        key = hash((self.seed,) + prefix) % (2 ** 32)
        return np.random.default_rng(key).normal(scale=2.0, size=self.vocab)

    def __call__(self, prefix, token):
        assert not ad.is_recording()
        self.calls.append((prefix, token))
        prefix = prefix if token == BOS else prefix + (token,)
        return self.logits(prefix), prefix

    def logprob(self, tokens, eos=EOS):
        """Σ log p of tokens followed by eos."""
        seq, total = (), 0.0
        for t in list(tokens) + [eos]:
            total += np_log_softmax(self.logits(seq))[t]
            seq = seq + (t,)
        return total


def test_greedy_follows_the_argmax_and_stops_at_eos():
    table = Table(3, {(): [.1, .6, .3], (1,): [.1, .1, .8], (1, 2): [.7, .2, .1]})
    assert decoding.greedy(table, (), bos=BOS, eos=EOS, max_len=10) == [1, 2]
    # three calls: bos, 1, 2; nothing is fed after eos was produced
    assert table.calls == [((), BOS), ((), 1), ((1,), 2)]
    assert decoding.greedy(table, (), bos=BOS, eos=EOS, max_len=1) == [1]
    assert decoding.greedy(table, (), bos=BOS, eos=EOS, max_len=0) == []
    out = decoding.greedy(table, (), bos=BOS, eos=None, max_len=4)  # eos=None: token 0 is just a token
    assert out[:3] == [1, 2, 0] and len(out) == 4


def test_without_eos_generation_runs_to_max_len():
    table = Table(3, {(): [.9, .05, .05]})
    out = decoding.greedy(table, (), bos=BOS, eos=None, max_len=4)
    assert len(out) == 4 and out[0] == 0
    assert len(decoding.beam_search(table, (), bos=BOS, eos=None, max_len=4, width=3)) == 4
    assert len(decoding.sample(table, (), bos=BOS, eos=None, max_len=4, rng=np.random.default_rng(0))) == 4


def test_beam_search_finds_a_likelier_sequence_than_greedy():
    # Greedy takes 1 (0.6) then eos (0.4): 0.24. Beam keeps 2 (0.4), then eos (0.9): 0.36.
    table = Table(3, {(): [0., .6, .4], (1,): [.4, .3, .3], (2,): [.9, .05, .05],
                      (1, 1): [1., 0., 0.], (1, 2): [1., 0., 0.], (2, 1): [1., 0., 0.], (2, 2): [1., 0., 0.]})
    g = decoding.greedy(table, (), bos=BOS, eos=EOS, max_len=5)
    b = decoding.beam_search(table, (), bos=BOS, eos=EOS, max_len=5, width=2, length_penalty=0.0)
    assert g == [1] and b == [2]
    assert table.logprob(b) > table.logprob(g)
    np.testing.assert_allclose(np.exp([table.logprob(g), table.logprob(b)]), [.24, .36])


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_beam_search_does_not_stop_when_width_short_hypotheses_have_finished(length_penalty):
    # eos (token 0) ranks second after bos and after 1: with width 2, two short hypotheses finish
    # ([] with p .3, [1] with p .21) before the likelier [1, 1] (p .49) can. Stopping at `width`
    # finished hypotheses returned one of them; the search must go on while [1, 1] can still win.
    table = Table(4, {(): [.3, .7, 0., 0.], (1,): [.3, .7, 0., 0.], (1, 1): [1., 0., 0., 0.]})
    assert decoding.greedy(table, (), bos=BOS, eos=EOS, max_len=5) == [1, 1]
    assert decoding.beam_search(table, (), bos=BOS, eos=EOS, max_len=5, width=2,
                                length_penalty=length_penalty) == [1, 1]


def test_beam_width_one_is_greedy_on_random_step_functions():
    for seed in range(30):
        table = Table(5, seed=seed)
        for eos in (EOS, None):
            g = decoding.greedy(table, (), bos=BOS, eos=eos, max_len=8)
            # length_penalty=0: with a per-token average a runner-up kept beside a finished one may win
            assert decoding.beam_search(table, (), bos=BOS, eos=eos, max_len=8, width=1, length_penalty=0.0) == g


def test_beam_width_one_is_greedy_on_a_random_encoder_decoder():
    V = 6
    model = nn.EncoderDecoder(nn.GRUCell(4, 8, rng=0), nn.LSTMCell(8 + V, 8, rng=1), vocab_size=V, eos=5, rng=2)
    rng = np.random.default_rng(3)
    for p in model.parameters():
        p.value = rng.normal(scale=1.0, size=p.shape)
    model.head.bias.value[:] = 0  # varied outputs; some end with eos, others at max_len
    lengths = []
    for _ in range(10):
        source = rng.normal(size=(rng.integers(1, 6), 4))
        state = model.start_state(source)
        g = decoding.greedy(model.step, state, bos=model.bos, eos=model.eos, max_len=12)
        assert decoding.beam_search(model.step, state, bos=model.bos, eos=model.eos, max_len=12, width=1,
                                    length_penalty=0.0) == g
        assert model.generate(source, max_len=12) == g
        lengths.append(len(g))
    assert min(lengths) < 12 and max(lengths) == 12  # both endings occur
    assert decoding.beam_search(model.step, model.start_state(source), bos=model.bos, eos=model.eos, max_len=12,
                                width=4) == model.generate(source, max_len=12, method="beam", width=4)


@pytest.mark.parametrize("length_penalty", [0.0, 1.0, 0.6])
def test_a_wide_beam_is_exhaustive_search(length_penalty):
    """With a beam wider than all hypotheses, beam search returns the best-scoring sequence of all."""
    V, max_len = 3, 4  # tokens 0 (eos), 1, 2
    for seed in range(5):
        table = Table(V, seed=100 + seed)
        best, best_score = None, -np.inf
        for n in range(max_len + 1):
            for seq in itertools.product([1, 2], repeat=n):
                if n < max_len:  # ended by eos: n + 1 tokens scored
                    score = table.logprob(seq) / (n + 1) ** length_penalty
                else:  # cut at max_len, no eos
                    s, total = (), 0.0
                    for t in seq:
                        total += np_log_softmax(table.logits(s))[t]
                        s = s + (t,)
                    score = total / n ** length_penalty
                if score > best_score:
                    best, best_score = list(seq), score
        got = decoding.beam_search(table, (), bos=BOS, eos=EOS, max_len=max_len, width=100,
                                   length_penalty=length_penalty)
        assert got == best


def test_eos_is_neither_returned_nor_followed_by_more_calls():
    table = Table(4, {(): [.9, .05, .03, .02]})
    for fn, kw in ((decoding.greedy, {}), (decoding.beam_search, {"width": 1}),
                   (decoding.sample, {"top_k": 1, "rng": np.random.default_rng(0)})):
        table.calls.clear()
        assert fn(table, (), bos=BOS, eos=EOS, max_len=5, **kw) == []
        assert table.calls == [((), BOS)]


def test_sampling_is_reproducible_and_stays_in_the_top_k():
    table = Table(8, seed=7)
    outs = [decoding.sample(table, (), bos=BOS, eos=EOS, max_len=20, top_k=3, rng=np.random.default_rng(s))
            for s in (11, 11, 12)]
    assert outs[0] == outs[1]
    seen = set()
    for seed in range(40):
        table.calls.clear()
        out = decoding.sample(table, (), bos=BOS, eos=EOS, max_len=10, top_k=3, temperature=2.0,
                              rng=np.random.default_rng(seed))
        chosen_tokens = out + ([] if len(out) == 10 else [EOS])
        assert len(table.calls) == len(chosen_tokens)
        assert [token for _, token in table.calls[1:]] == chosen_tokens[:-1]  # each draw is fed back
        for (prefix, token), chosen in zip(table.calls, chosen_tokens):
            prefix = prefix if token == BOS else prefix + (token,)
            top3 = set(np.argsort(-table.logits(prefix))[:3].tolist())
            assert chosen in top3
            seen.add((prefix, chosen))
    assert len(seen) > 40  # it does sample, not always the argmax


def test_sampling_frequencies_follow_the_tempered_distribution():
    logits = np.array([0.0, 1.0, 2.0, 0.5])
    step = lambda state, token: (logits, state)  # noqa: E731
    rng = np.random.default_rng(0)
    n = 4000
    for temperature, top_k in ((1.0, None), (0.5, 2)):
        draws = [decoding.sample(step, None, bos=BOS, eos=None, max_len=1, top_k=top_k, temperature=temperature,
                                 rng=rng)[0] for _ in range(n)]
        p = np.exp(logits / temperature)
        if top_k:
            p[np.argsort(-logits)[top_k:]] = 0
        p /= p.sum()
        np.testing.assert_allclose(np.bincount(draws, minlength=4) / n, p, atol=0.03)
    assert decoding.sample(step, None, bos=BOS, eos=None, max_len=3, top_k=1, rng=rng) == [2, 2, 2]


def test_argument_errors():
    step = Table(3)
    with pytest.raises(ad.AutogradDagError, match="width must be an int >= 1"):
        decoding.beam_search(step, (), bos=BOS, eos=EOS, max_len=3, width=0)
    with pytest.raises(ad.AutogradDagError, match="temperature must be > 0"):
        decoding.sample(step, (), bos=BOS, eos=EOS, max_len=3, temperature=0, rng=np.random.default_rng(0))
    with pytest.raises(ad.AutogradDagError, match="top_k must be None or an int >= 1"):
        decoding.sample(step, (), bos=BOS, eos=EOS, max_len=3, top_k=0, rng=np.random.default_rng(0))
    with pytest.raises(ad.AutogradDagError, match="rng must be a numpy.random.Generator"):
        decoding.sample(step, (), bos=BOS, eos=EOS, max_len=3, rng=0)
    with pytest.raises(ad.AutogradDagError, match="max_len must be >= 0"):
        decoding.greedy(step, (), bos=BOS, eos=EOS, max_len=-1)
    with pytest.raises(ad.ShapeError, match=r"logits of shape \(vocab,\). Actual: shape \(1, 3\)"):
        decoding.greedy(lambda s, t: (np.zeros((1, 3)), s), None, bos=BOS, eos=EOS, max_len=2)

# ------------------------------------------------------------ sliding context


class Context:
    """A bounded-context model: state = the tuple of tokens consumed; logits depend on the whole context."""

    def __init__(self, vocab=6, window=5):
        self.vocab, self.window, self.contexts = vocab, window, []

    def start_state(self, prefix):
        return tuple(int(t) for t in prefix)

    def step(self, state, token):
        context = state + (token,)
        assert len(context) <= self.window, f"position {len(context) - 1} is past the window"
        self.contexts.append(context)
        key = hash(context) % (2 ** 32)
        return np.random.default_rng(key).normal(size=self.vocab), context


@pytest.mark.parametrize("keep", [1, 2, None, 5])
def test_sliding_context_restarts_from_the_last_tokens_and_stays_in_the_window(keep):
    model = Context(window=5)
    bounded = decoding.SlidingContext(model, window=5, keep=keep)
    keep = 5 // 2 if keep is None else keep
    out = decoding.sample(bounded.step, bounded.start_state([4, 1]), bos=2, eos=None, max_len=12,
                          rng=np.random.default_rng(0))
    history = [4, 1, 2] + out
    assert len(out) == 12 and len(model.contexts) == 12
    # Each step sees a suffix of the history ending at the token fed, of at most `window` tokens,
    # and one that starts over with `keep` tokens exactly when the previous context was full.
    previous = 2
    for i, context in enumerate(model.contexts):
        fed = 2 + i  # index in history of the token fed at this step
        assert list(context) == history[fed - len(context) + 1:fed + 1]
        assert len(context) == (keep if previous == 5 else previous + 1)
        previous = len(context)


def test_sliding_context_agrees_with_the_model_while_the_window_is_not_full():
    lm = nn.TransformerLM(vocab_size=7, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    bounded = decoding.SlidingContext(lm, window=16)
    kwargs = dict(bos=3, eos=None, max_len=10)
    assert (decoding.greedy(bounded.step, bounded.start_state([1, 5]), **kwargs)
            == decoding.greedy(lm.step, lm.start_state(np.array([1, 5])), **kwargs))
    with pytest.raises(ad.AutogradDagError, match="keep"):
        decoding.SlidingContext(lm, window=4, keep=5)
    with pytest.raises(ad.AutogradDagError, match="no room"):
        bounded.start_state(np.arange(16) % 7)


# ------------------------------------------------- beam search against references written here


def test_beam_search_keeps_width_live_hypotheses_when_eos_ranks_among_a_hypothesis_best():
    # Step 1: eos (.40), [1] (.35), [2] (.25). eos finishes [] (score log .40); the beam of 2 must
    # still hold [1] and [2]. Step 2: [2] + eos has p .25 over 2 tokens: score log .25 / 2 = -0.693,
    # better than [] (-0.916) and [1, 1] (log(.35 * .33) / 3 = -0.720). Taking each hypothesis's
    # top `width` tokens before setting eos aside dropped [2] and returned [1, 1].
    table = {(): [.40, .35, .25, 0.], (1,): [.01, .33, .33, .33], (2,): [1., 0, 0, 0]}

    def step(prefix, tok):
        prefix = prefix if tok == 4 else prefix + (tok,)
        return np.log(np.array(table.get(prefix, [1., 0, 0, 0])) + 1e-300), prefix

    assert decoding.beam_search(step, (), bos=4, eos=0, max_len=3, width=2) == [2]


class RandomTable:
    """Random next-token distributions per prefix (peaked Dirichlet draws, some exact zeros), vocab V, eos 0."""

    def __init__(self, V, seed):
        self.V, self.seed, self.cache = V, seed, {}

    def logprobs(self, prefix):
        if prefix not in self.cache:
            rng = np.random.default_rng([self.seed, len(prefix)] + list(prefix))
            p = rng.dirichlet(np.full(self.V, 0.7))
            p[rng.random(self.V) < 0.15] = 0.0
            p = p / p.sum() if p.sum() > 0 else np.full(self.V, 1 / self.V)
            with np.errstate(divide="ignore"):
                self.cache[prefix] = np.log(p)
        return self.cache[prefix]

    def step(self, prefix, token):
        prefix = prefix if token == BOS else prefix + (token,)
        # finite logits: -inf would make every candidate after it a NaN-free but meaningless tie
        return np.maximum(self.logprobs(prefix), -700.0), prefix

    def logp(self, seq):
        total, prefix = 0.0, ()
        for t in seq:
            total += np_log_softmax(np.maximum(self.logprobs(prefix), -700.0))[t]
            prefix = prefix + (t,)
        return total


def reference_beam(table, max_len, width, length_penalty):
    """The documented algorithm, written plainly: every live hypothesis × every token, ranked by summed
    log-probability (ties: hypothesis, then token); eos candidates among the first `width` finish; the
    first `width` other candidates are the next beam; after max_len the live ones compete unfinished.
    Returns (tokens, score) of the best finished one (ties: the first finished)."""
    live, finished = [((), 0.0)], []
    for length in range(1, max_len + 1):
        cands = []
        for order, (seq, logp) in enumerate(live):
            lp = np_log_softmax(np.maximum(table.logprobs(seq), -700.0))
            cands += [(logp + lp[t], order, t, seq) for t in range(table.V)]
        cands.sort(key=lambda c: (-c[0], c[1], c[2]))
        for logp, _, t, seq in cands[:width]:
            if t == EOS:
                finished.append((list(seq), logp / length ** length_penalty))
        live = [(seq + (t,), logp) for logp, _, t, seq in cands if t != EOS][:width]
    finished += [(list(seq), logp / max(len(seq), 1) ** length_penalty) for seq, logp in live]
    best = max(s for _, s in finished)
    return next((seq, s) for seq, s in finished if s == best)


def exhaustive(table, max_len, length_penalty):
    """Every sequence of non-eos tokens of length < max_len followed by eos, and every one of max_len tokens."""
    best, best_score = None, -np.inf
    for n in range(max_len + 1):
        for seq in itertools.product(range(1, table.V), repeat=n):
            if n < max_len:
                score = table.logp(seq + (EOS,)) / (n + 1) ** length_penalty
            else:
                score = table.logp(seq) / max(n, 1) ** length_penalty
            if score > best_score:
                best, best_score = list(seq), score
    return best, best_score


@pytest.mark.parametrize("length_penalty", [0.0, 0.6, 1.0])
def test_beam_search_is_the_documented_algorithm_on_random_tables(length_penalty):
    """Against reference_beam for widths below the vocabulary, and exhaustive search for a beam wide
    enough to hold every sequence. Scores are compared within 1e-12: the reference's log-softmax and
    the library's round differently (a few ulps of values near 1)."""
    narrow = 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        V, max_len = int(rng.integers(2, 6)), int(rng.integers(1, 5))
        table = RandomTable(V, seed)
        for width in (1, 2, 3):
            tokens, score = reference_beam(table, max_len, width, length_penalty)
            got = decoding.beam_search(table.step, (), bos=BOS, eos=EOS, max_len=max_len, width=width,
                                       length_penalty=length_penalty)
            assert got == tokens, (seed, V, max_len, width)
            narrow += width < V
        n_sequences = sum((V - 1) ** n for n in range(max_len + 1))
        tokens, score = exhaustive(table, max_len, length_penalty)
        got = decoding.beam_search(table.step, (), bos=BOS, eos=EOS, max_len=max_len, width=n_sequences,
                                   length_penalty=length_penalty)
        assert got == tokens, (seed, V, max_len)
        got_len = len(got) if len(got) == max_len else len(got) + 1
        assert abs(table.logp(got + ([] if len(got) == max_len else [EOS])) / max(got_len, 1) ** length_penalty
                   - score) < 1e-12
    assert narrow > 100
