"""Data passed to a jitted or traced function is an input of its program, never a baked constant.

``ad.jit`` traces with the first call's arrays and reruns the program on later
ones. A library function that read an input's value at trace time (class
indices, token ids, masks) would leave that value in the program as a
constant, and every later call would silently compute with the first batch's
data: wrong losses and gradients, no error. Each test traces with one batch,
calls with another, and compares with the eager computation on the second.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.errors import TracingError
from autograd_dag.nn import functional as F
from autograd_dag.nn import Logits

RNG = np.random.default_rng(7)


def assert_jit_follows_data(f, first: tuple, second: tuple) -> None:
    """jit(value_and_grad(f)) traced on ``first`` and called on ``second`` equals the eager result on ``second``."""
    step = ad.jit(ad.value_and_grad(f))
    step(*first)
    loss, grads = step(*second)
    want_loss, want_grads = ad.value_and_grad(f)(*second)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    np.testing.assert_allclose(grads, want_grads, rtol=1e-12, atol=1e-14)
    stale_loss = ad.value_and_grad(f)(*first)[0]
    assert not np.isclose(want_loss, stale_loss), "the two batches must give different losses"


W = RNG.standard_normal((4, 5))
X = RNG.standard_normal((6, 4))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_cross_entropy_class_indices(dtype):
    y1 = np.array([0, 1, 2, 3, 4, 0], dtype=dtype)
    y2 = np.array([4, 4, 3, 0, 1, 2], dtype=dtype)
    assert_jit_follows_data(lambda w, x, y: F.cross_entropy(x @ w, y), (W, X, y1), (W, X, y2))


def test_cross_entropy_probabilities():
    p1 = np.full((6, 5), 0.2)
    p2 = RNG.dirichlet(np.ones(5), 6)
    assert_jit_follows_data(lambda w, x, p: F.cross_entropy(x @ w, p), (W, X, p1), (W, X, p2))


def test_nll_loss_class_indices():
    y1, y2 = np.array([0, 1, 2, 3, 4, 0]), np.array([4, 4, 3, 0, 1, 2])
    assert_jit_follows_data(lambda w, x, y: F.nll_loss(F.log_softargmax(x @ w), y), (W, X, y1), (W, X, y2))


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_embedding_ids(dtype):
    emb = nn.Embedding(7, 3, rng=0)

    def f(table, ids):
        return ad.sum(ad.tanh(nn.functional_call(emb, {"weight": table}, ids)) * np.arange(3.0))
    ids1 = np.array([[0, 1, 2], [3, 4, 5]], dtype=dtype)
    ids2 = np.array([[6, 6, 1], [0, 2, 2]], dtype=dtype)
    assert_jit_follows_data(f, (emb.weight.value, ids1), (emb.weight.value, ids2))


@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_attention_mask(kind):
    q = RNG.standard_normal((2, 3, 4))
    m1 = np.tril(np.ones((3, 3), dtype=bool))
    m2 = np.ones((3, 3), dtype=bool)
    m2[0, 2] = m2[2, 0] = False
    if kind == "additive":
        m1, m2 = (np.where(m, 0.0, -np.inf) for m in (m1, m2))

    def f(q, mask):
        return ad.sum(nn.attention(q, q, q, mask=mask) ** 2)
    assert_jit_follows_data(f, (q, m1), (q, m2))


def test_transformer_lm_tokens_and_targets():
    model = nn.TransformerLM(11, d_model=8, heads=2, hidden=16, layers=1, rng=0)
    params = {k: p.value for k, p in model.named_parameters()}

    wrapper = Logits(model)

    def f(p, tokens, targets):
        return F.cross_entropy(nn.functional_call(wrapper, {"inner." + k: v for k, v in p.items()}, tokens),
                               targets)
    t1 = RNG.integers(0, 11, (2, 6))
    t2 = RNG.integers(0, 11, (2, 6))
    step = ad.jit(ad.value_and_grad(f))
    step(params, t1[:, :-1], t1[:, 1:])
    loss, grads = step(params, t2[:, :-1], t2[:, 1:])
    want_loss, want = ad.value_and_grad(f)(params, t2[:, :-1], t2[:, 1:])
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    for k in want:
        np.testing.assert_allclose(grads[k], want[k], rtol=1e-10, atol=1e-13)


def test_trace_program_follows_data():
    prog = ad.trace(lambda x, y: F.cross_entropy(x, y), X @ W, np.array([0, 1, 2, 3, 4, 0]))
    y2 = np.array([4, 4, 3, 0, 1, 2])
    np.testing.assert_allclose(prog(X @ W, y2), F.cross_entropy(ad.Tensor(X @ W), y2).value, rtol=1e-12)


def test_numpy_conversion_of_an_integer_input_is_refused():
    def f(w, y):
        return ad.sum(w[np.asarray(y)])
    with pytest.raises(TracingError, match="reuse them on every later call"):
        ad.jit(f)(np.ones(3), np.array([0, 2]))


def test_an_input_value_read_into_a_constant_is_refused():
    def f(w, y):
        return ad.sum(ad.take(w, y.value))   # .value: the trace-time number, on purpose or not
    with pytest.raises(TracingError, match="holds the numbers of input 'x1'"):
        ad.jit(f)(np.ones(3), np.array([0, 2]))


def test_embedding_padding_follows_data():
    emb = nn.Embedding(5, 2, padding_idx=0, rng=0)

    def f(table, ids):
        return ad.sum(nn.functional_call(emb, {"weight": table}, ids) ** 2)
    table = emb.weight.value + 1.0      # a nonzero padding row shows whether it is masked
    assert_jit_follows_data(f, (table, np.array([1, 2, 3])), (table, np.array([0, 2, 0])))


def test_encoder_decoder_loss_follows_targets():
    model = nn.EncoderDecoder(nn.GRUCell(3, 4, rng=0), nn.GRUCell(4 + 5, 4, rng=1), vocab_size=5, eos=4, rng=2)
    params = {k: p.value for k, p in model.named_parameters()}
    source = RNG.standard_normal((2, 3, 3))

    def f(p, target):
        return F.cross_entropy(nn.functional_call(model, p, source, target), target)
    t1, t2 = np.array([[1, 2, 4], [0, 4, 4]]), np.array([[3, 3, 4], [2, 1, 4]])
    step = ad.jit(ad.value_and_grad(f))
    step(params, t1)
    loss, grads = step(params, t2)
    want_loss, want = ad.value_and_grad(f)(params, t2)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    for k in want:
        np.testing.assert_allclose(grads[k], want[k], rtol=1e-10, atol=1e-13)


def test_bert_hidden_states_follow_tokens_and_padding():
    model = nn.BERT(9, d_model=8, heads=2, hidden=16, layers=1, max_length=6, rng=0)

    def f(tokens):
        return ad.sum(ad.tanh(model.hidden_states(tokens)))
    t1 = np.array([[2, 3, 4, 5], [6, 7, 0, 0]])
    t2 = np.array([[8, 0, 0, 0], [2, 2, 3, 0]])
    prog = ad.jit(f)
    prog(t1)
    np.testing.assert_allclose(prog(t2), f(t2).value, rtol=1e-12)


def test_cls_appended_after_padding_is_refused_under_jit():
    model = nn.TransformerClassifier(9, 3, d_model=8, heads=2, hidden=16, layers=1, cls_position="append",
                                     rng=0)
    with pytest.raises(TracingError, match=r"insert_cls\('append'\)"):
        ad.jit(lambda tokens: ad.sum(model(tokens)))(np.array([[2, 3, 0], [4, 0, 0]]))


def test_vmap_refuses_reading_an_example_as_numbers():
    with pytest.raises(TracingError, match="vmap"):
        ad.vmap(lambda w, y: ad.sum(w[np.asarray(y)]), in_axes=(None, 0))(np.ones(3), np.array([[0], [2]]))



def test_vmap_per_example_labels_ids_and_masks():
    # vmap records on the first example: a label, id or mask read as numbers
    # there would be the first example's for the whole batch.
    y = np.array([0, 1, 2, 3, 4, 0])
    g = ad.vmap(ad.grad(lambda w, x, t: F.cross_entropy((x @ w)[None], t[None])), in_axes=(None, 0, 0))(W, X, y)
    for i in range(len(y)):
        np.testing.assert_allclose(g[i], ad.grad(lambda w: F.cross_entropy((X[i] @ w)[None], y[i:i + 1]))(W),
                                   rtol=1e-12)
    emb = nn.Embedding(7, 3, padding_idx=0, rng=0)
    table = emb.weight.value + 1.0
    ids = np.array([[1, 0, 3], [0, 2, 2]])
    out = ad.vmap(lambda i: nn.functional_call(emb, {"weight": table}, i))(ids)
    # The padding row is looked up (as PyTorch's) and gets no gradient, at each example's own padding.
    grads = ad.vmap(ad.grad(lambda t, i: ad.sum(nn.functional_call(emb, {"weight": t}, i))), in_axes=(None, 0))(
        table, ids)
    for i in range(len(ids)):
        np.testing.assert_allclose(out[i], table[ids[i]], rtol=0)
        counts = np.bincount(ids[i], minlength=7) * (np.arange(7) != 0)
        np.testing.assert_allclose(grads[i], np.repeat(counts[:, None], 3, axis=1), rtol=0)
    q = RNG.standard_normal((3, 2, 4))
    masks = np.array([np.tril(np.ones((2, 2), bool)), np.ones((2, 2), bool), np.eye(2, dtype=bool)])
    out = ad.vmap(lambda q, m: nn.attention(q, q, q, mask=m))(q, masks)
    for i in range(len(q)):
        np.testing.assert_allclose(out[i], nn.attention(q[i], q[i], q[i], mask=masks[i]).value, rtol=1e-12)


# ------------------------------------------- model state read from outside the arguments
# A jitted forward reads the model's parameters and buffers from a closure and its
# mode from the modules: before, eval() after the first call, BatchNorm's running
# statistics and load_state_dict (both rebound their arrays) were silently stale.


def _batchnorm_model():
    return nn.Sequential(nn.Linear(3, 4, rng=0), nn.BatchNorm(4))


def test_jit_follows_train_and_eval():
    m, x = _batchnorm_model(), RNG.standard_normal((8, 3))
    forward = ad.jit(lambda x: m(x))
    train_out = forward(x)
    m.eval()
    np.testing.assert_allclose(forward(x), m(x).value, rtol=1e-12)
    assert not np.allclose(forward(x), train_out)
    m.train()
    np.testing.assert_allclose(forward(x), train_out, rtol=1e-12)
    # train() on a model already training changes nothing: the program is kept.
    program = next(iter(forward.programs.values()))
    m.train()
    forward(x)
    assert next(iter(forward.programs.values())) is program


def test_jit_in_eval_mode_reads_the_running_statistics_as_they_are_now():
    m, x = _batchnorm_model(), RNG.standard_normal((8, 3))
    m.eval()
    forward = ad.jit(lambda x: m(x))
    before = forward(x)
    m.train()
    for _ in range(3):
        m(x + RNG.standard_normal((8, 3)))  # updates the running statistics
    m.eval()
    np.testing.assert_allclose(forward(x), m(x).value, rtol=1e-12)
    assert not np.allclose(forward(x), before)
    assert int(m[1].num_batches_tracked) == 3


def test_jit_sees_a_loaded_state_dict():
    m, x = nn.MLP([3, 4, 2], rng=0), RNG.standard_normal((5, 3))
    forward = ad.jit(lambda x: m(x))
    forward(x)
    weight = m.layers[0].weight.value
    m.load_state_dict(nn.MLP([3, 4, 2], rng=1).state_dict())
    assert m.layers[0].weight.value is weight  # copied into, so a traced program sees it
    np.testing.assert_allclose(forward(x), nn.MLP([3, 4, 2], rng=1)(x).value, rtol=1e-12)


# --------------------------------------------- data checked on every run, not only at trace time


@pytest.mark.parametrize("bad", [-1, 4])
def test_jit_refuses_a_class_index_out_of_range_on_a_later_call(bad):
    # numpy reads -1 as the last class: before, the loss silently used it.
    step = ad.jit(ad.value_and_grad(lambda w, x, y: F.cross_entropy(x @ w, y)))
    x = RNG.standard_normal((2, 3))
    step(RNG.standard_normal((3, 4)), x, np.array([0, 1]))
    with pytest.raises(ad.ShapeError, match=rf"program .*: node %\d+: .*cross_entropy: index {bad} is out of "
                                            rf"range for 4 classes. Expect: indices in \[0, 4\)"):
        step(RNG.standard_normal((3, 4)), x, np.array([0, bad]))


@pytest.mark.parametrize("bad", [-1, 10])
def test_jit_refuses_an_embedding_id_out_of_range_on_a_later_call(bad):
    emb = nn.Embedding(10, 4, rng=0)
    lookup = ad.jit(lambda ids: emb(ids))
    lookup(np.array([1, 2]))
    with pytest.raises(ad.ShapeError, match=rf"Embedding\(10, 4\): index {bad} is out of range for 10 ids"):
        lookup(np.array([1, bad]))


def test_a_traced_tensor_index_or_slice_bound_is_refused():
    # getitem's index is a parameter: x[i] with i an input used to keep the first call's i
    # (jit(lambda i, x: x[i]) returned x[1] when called with i=3; vmap used example 0's i for all).
    x = np.arange(5.0) * 10
    with pytest.raises(TracingError, match=r"jit: an index x\[i\]"):
        ad.jit(lambda i, x: x[i])(np.array(1), x)
    with pytest.raises(TracingError, match=r"slice bound"):
        ad.jit(lambda i, x: x[i:])(np.array(1), x)
    with pytest.raises(TracingError, match="vmap"):
        ad.vmap(lambda i, x: x[i], in_axes=(0, None))(np.array([2, 0, 1]), x)
    # Outside a trace a Tensor index is read as numbers, and ad.take follows the data under jit.
    np.testing.assert_array_equal(ad.Tensor(x)[ad.Tensor(np.array([3, 1]))].value, [30.0, 10.0])
    take = ad.jit(lambda i, x: ad.take(x, i))
    take(np.array(1), x)
    np.testing.assert_array_equal(take(np.array(3), x), 30.0)


@pytest.mark.parametrize("f, what", [
    (lambda x: ad.take(x, np.argmax(x)), "np.argmax"),
    (lambda x: ad.take(x, x.argmax()), "Tensor.argmax"),
    (lambda x: x * np.count_nonzero(x > 2.0), "np.count_nonzero"),
    (lambda x: x * float(x[0]), r"float\(t\)"),
    (lambda x: x * int(x[1]), r"int\(t\)"),
    (lambda x: x * x[0].item(), r"Tensor.item\(\)"),
    (lambda x: x * 2.0 if x[0] > 2.0 else x * 3.0, "truth value"),
    (lambda x: x * max(x[0], x[1]), "truth value"),
])
def test_numbers_read_from_a_traced_tensor_are_refused(f, what):
    # Each of these ran on the trace-time values and froze the result into the program:
    # jit(lambda x: ad.take(x, np.argmax(x))) returned x[0] for x = [1, 5, 2] after tracing on [3, 1, 2].
    with pytest.raises(TracingError, match=what):
        ad.jit(f)(np.array([3.0, 1.0, 2.0]))
    with pytest.raises(TracingError, match="vmap"):
        ad.vmap(f)(np.array([[3.0, 1.0, 2.0], [1.0, 5.0, 2.0]]))
    f(ad.Tensor(np.array([1.0, 5.0, 2.0])))     # eager code reads the numbers as before


def test_numpy_functions_of_shapes_only_work_inside_jit():
    f = ad.jit(lambda x: x * np.shape(x)[0] + np.ndim(x) + np.size(x))
    f(np.ones(3))
    np.testing.assert_array_equal(f(np.arange(4.0)), np.arange(4.0) * 4 + 1 + 4)


def test_select_conditions_follow_data_and_value_reads_are_refused():
    # ad.select read its Tensor conditions' numbers: jit kept the first call's branches.
    def f(x):
        return ad.select([x < 0, x > 1], [-x, x * 10], default=x)
    prog = ad.jit(f)
    prog(np.array([-2.0, 0.5, 3.0]))
    x = np.array([2.0, -0.5, -3.0])
    np.testing.assert_array_equal(prog(x), f(ad.Tensor(x)).value)
    np.testing.assert_array_equal(ad.vmap(f)(np.stack([x, -x]))[0], [20.0, 0.5, 3.0])
    # Functions whose result depends on numbers that cannot be an operand refuse them under jit.
    for g, what in [(lambda x: np.gradient(x, x[0]), "spacing")]:
        with pytest.raises(TracingError, match=what):
            ad.jit(g)(np.array([-2.0, 0.5, 3.0]))
    # A computed fill value is an operand (a recorded broadcast): it follows the data.
    fill = ad.jit(lambda x: ad.full(3, x[0]) * x)
    fill(np.array([-2.0, 0.5, 3.0]))
    np.testing.assert_array_equal(fill(x), 2.0 * x)
    with pytest.raises(TracingError, match="repeat's counts"):
        ad.jit(lambda x, r: ad.repeat(x, r))(np.ones(3), np.array(2))


def test_partition_under_jit_follows_each_call():
    # Before, the arrangement chosen on the traced call's numbers was reused on every call.
    f = ad.jit(ad.value_and_grad(lambda x: ad.sum(ad.partition(x, 1) * np.arange(4.0))))
    f(np.array([3.0, 1.0, 2.0, 0.5]))
    x = np.array([9.0, 8.0, 7.0, 1.0])
    value, grad = f(x)
    part = np.partition(x, 1)
    assert part[1] == np.sort(x)[1] and value == pytest.approx(np.sort(x) @ np.arange(4.0))
    np.testing.assert_array_equal(grad, [3.0, 2.0, 1.0, 0.0])  # each entry's weight is its sorted position


@pytest.mark.parametrize("transform", [
    lambda f: ad.jit(f)(np.ones(3), 2),
    lambda f: ad.trace(f, np.ones(3), 2),
    lambda f: ad.jit(ad.grad(f))(np.ones(3), 2),
])
def test_a_traced_int_used_as_a_count_is_a_tracing_error(transform):
    # range(n) with n an input of the program raised Python's bare "'Tensor' object cannot
    # be interpreted as an integer", saying neither why nor what to do.
    def f(x, n):
        return sum(ad.sin(x[i]) for i in range(n))
    with pytest.raises(ad.TracingError, match=r"an integer \(range\(n\), an index\).*test_jit_data.py:\d+"):
        transform(f)


def test_an_integer_tensor_outside_a_trace_is_an_integer():
    assert list(range(ad.Tensor(np.int64(3)))) == [0, 1, 2]
    assert [10, 20, 30][ad.Tensor(np.array(1))] == 20
    # Of shape (1,) it is an index array, not an integer: numpy's [10, 20, 30][np.array([1])] raises too
    # (issue 24: ndarray[Tensor(np.array([2]))] dropped the axis numpy keeps).
    with pytest.raises(TypeError):
        [10, 20, 30][ad.Tensor(np.array([1]))]
    with pytest.raises(TypeError):
        range(ad.Tensor(2.0))


@pytest.mark.parametrize("extra", ["tanh", None, ad.tanh])
@pytest.mark.parametrize("transform", ["jit", "trace"])
def test_an_argument_that_is_not_a_number_is_refused_by_name(extra, transform):
    # jit(f)(x, "tanh") made the string a program input: getattr(ad, act) raised
    # "attribute name must be string, not 'Tensor'"; a function gave "cannot make a
    # numeric array of a function"; trace's str became a Tensor whose == was traced.
    def f(x, act):
        return (getattr(ad, act) if isinstance(act, str) else act or ad.sin)(x).sum()
    with pytest.raises(ad.TracingError, match=rf"{transform}: argument 1 is {type(extra).__name__}.*close over it"):
        if transform == "jit":
            ad.jit(f)(np.ones(3), extra)
        else:
            ad.trace(f, np.ones(3), extra)
