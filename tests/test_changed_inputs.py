"""A numpy array the user changes in place after recording never changes the recorded gradient.

``x = np.ones((1, 3)); l = ad.sum(ad.tanh(x @ w)); x[...] = 5; l.backward()``
gave ``w.grad`` at x = 5 (matmul's VJP read the user's array, which the
recorded node held by reference) with no error. A numpy operand of a node that
will be differentiated is now copied when the node is recorded (core._lift):
the gradient is the one at the values the forward pass computed with.
Parameters changed by an optimizer are refused instead (test_changed_in_place.py),
and a Tensor's own array is the user's to keep (README, "changed in place").
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.primitives.fused import masked_softargmax
from tests.helpers import central_gradient, line_of
from tests.test_primitives_table import ALL_CASES, case_id, make_args, wrt_positions


def _tanh_layer_grad(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """∂/∂w of Σ tanh(x w), written with numpy."""
    return x.T @ (1.0 - np.tanh(x @ w) ** 2)


def test_the_issues_reproduction_gives_the_gradient_at_the_recorded_values():
    w0 = np.random.default_rng(0).standard_normal((3, 2))
    w = ad.Tensor(w0.copy(), requires_grad=True)
    x = np.ones((1, 3))
    loss = ad.sum(ad.tanh(x @ w))
    x[...] = 5
    loss.backward()
    np.testing.assert_allclose(w.grad.value, _tanh_layer_grad(np.ones((1, 3)), w0), rtol=1e-13)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "power", "matmul", "maximum",
                                "minimum", "arctan2"])
@pytest.mark.parametrize("numpy_side", ["left", "right"])
def test_a_numpy_operand_on_either_side_of_a_binary_op(op, numpy_side):
    rng = np.random.default_rng(1)
    a0 = rng.uniform(0.5, 2.0, (3, 3))
    w0 = rng.uniform(0.5, 2.0, (3, 3))
    f = getattr(ad, op)
    npf = getattr(np, op)
    a = a0.copy()
    w = ad.Tensor(w0.copy(), requires_grad=True)
    out = f(a, w) if numpy_side == "left" else f(w, a)
    loss = ad.sum(ad.sin(out))
    a[...] = a0[::-1, ::-1] + 0.3
    loss.backward()
    reference = central_gradient(lambda v: np.sin(npf(a0, v) if numpy_side == "left" else npf(v, a0)).sum(), w0)
    # Central differences with a step of 1e-6: about 1e-9 of truncation and rounding.
    np.testing.assert_allclose(w.grad.value, reference, rtol=1e-6, atol=1e-8)


_VIEWS = {
    "reshape": lambda a: ad.reshape(ad.reshape(a, (3, 2)), (2, 3)),
    "transpose": lambda a: ad.transpose(ad.transpose(a)),
    "slice": lambda a: ad.getitem(a, (slice(None), slice(None))),
    "expand_dims, squeeze": lambda a: ad.squeeze(ad.expand_dims(a, 0), 0),
    "swapaxes": lambda a: ad.swapaxes(ad.swapaxes(a, 0, 1), 0, 1),
    "ravel": lambda a: ad.reshape(ad.ravel(a), (2, 3)),
    "flip": lambda a: ad.flip(ad.flip(a, 0), 0),
    "broadcast_to": lambda a: ad.broadcast_to(a[:1], (2, 3)),
}


@pytest.mark.parametrize("view", list(_VIEWS), ids=list(_VIEWS))
def test_a_view_of_a_numpy_array_made_by_an_operation_is_not_the_users_array(view):
    # ad.reshape(x, s) is a constant whose value numpy makes a view of x: a later
    # x[...] = 5 reached the product's VJP through it (it is no ndarray operand there).
    a0 = np.arange(6.0).reshape(2, 3) + 1
    w0 = np.full((3, 2), 0.3)
    a = a0.copy()
    w = ad.Tensor(w0.copy(), requires_grad=True)
    loss = ad.sum(ad.tanh(_VIEWS[view](a) @ w))
    a[...] = -7
    loss.backward()
    v0 = a0[:1].repeat(2, axis=0) if view == "broadcast_to" else a0
    np.testing.assert_allclose(w.grad.value, _tanh_layer_grad(v0, w0), rtol=1e-13)


def test_python_operators_with_an_ndarray_on_the_left():
    # ndarray.__mul__ defers to Tensor.__rmul__ (__array_priority__): the operand is lifted there too.
    a0 = np.array([1.0, 2.0, 3.0])
    a = a0.copy()
    w = ad.Tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    loss = ad.sum(a * w * w)
    a *= 10
    loss.backward()
    np.testing.assert_allclose(w.grad.value, 2 * a0 * np.array([0.5, -1.0, 2.0]), rtol=1e-15)


@pytest.mark.parametrize("op, position", [
    (lambda w, a: ad.add(w, a), 1), (lambda w, a: ad.subtract(a, w), 0),
    (lambda w, a: ad.where(a > 0, w, a), 2),
    (lambda w, a: masked_softargmax(w, a), 1)], ids=["add", "subtract", "where", "masked_softargmax"])
def test_a_numpy_operand_that_the_rules_read_only_by_shape_is_not_copied(op, position):
    # Their derivative rules read these operands' shapes only (Primitive.reads): a copy
    # would cost memory for nothing (an attention mask on every call).
    a = np.ones(4)
    w = ad.Tensor(np.zeros(4), requires_grad=True)
    assert op(w, a).parents[position].value is a
    assert ad.multiply(w, a).parents[1].value is not a


def test_nothing_is_copied_when_no_gradient_will_flow():
    a = np.ones(4)
    assert ad.multiply(ad.Tensor(np.zeros(4)), a).parents[1].value is a
    with ad.no_grad():
        assert ad.multiply(ad.Tensor(np.zeros(4), requires_grad=True), a).parents == ()


def test_unary_ops_keep_fresh_arrays_only():
    # exp keeps its output, sin its input: when the input is a numpy array, nothing is
    # differentiated through them; their results are arrays of the node's own.
    x0 = np.array([0.1, 0.2, 0.3])
    x = x0.copy()
    w = ad.Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    loss = ad.sum(ad.exp(x) * ad.sin(x) * w * w)
    x[...] = 7
    loss.backward()
    np.testing.assert_allclose(w.grad.value, 2 * np.exp(x0) * np.sin(x0) * w.value, rtol=1e-14)


def test_grad_and_value_and_grad_of_a_function_that_changes_a_closure_array_after_use():
    # The function itself changes the array between the operation and the sweep.
    x0 = np.array([[1.0, 2.0, 3.0]])
    w0 = np.random.default_rng(2).standard_normal((3, 2))
    for transform in (ad.grad, lambda f: (lambda w: ad.value_and_grad(f)(w)[1])):
        x = x0.copy()

        def f(w):
            loss = ad.sum(ad.tanh(x @ w))
            x[...] = -4.0
            return loss
        np.testing.assert_allclose(transform(f)(w0), _tanh_layer_grad(x0, w0), rtol=1e-13)


def test_a_jitted_function_called_on_tensors_records_with_a_copy():
    # Called on Tensors, jit records f eagerly: its numpy arguments are operands like any other.
    x0 = np.array([[1.0, -2.0, 0.5]])
    w0 = np.random.default_rng(4).standard_normal((3, 2))
    layer = ad.jit(lambda w, x: ad.sum(ad.tanh(x @ w)))
    w = ad.Tensor(w0.copy(), requires_grad=True)
    x = x0.copy()
    loss = layer(w, x)
    x[...] = 3.0
    loss.backward()
    np.testing.assert_allclose(w.grad.value, _tanh_layer_grad(x0, w0), rtol=1e-13)


def test_jit_still_reads_a_closure_array_by_identity():
    # A traced program's constants are read by identity on every call (README, jit): an array
    # changed in place between calls is seen, so tracing must not copy it.
    c = np.array([1.0, 2.0])
    fast_grad = ad.jit(ad.grad(lambda w: ad.sum(w * c * w)))
    w0 = np.array([3.0, 4.0])
    np.testing.assert_allclose(fast_grad(w0), 2 * c * w0, rtol=1e-15)
    c *= 10
    np.testing.assert_allclose(fast_grad(w0), 2 * c * w0, rtol=1e-15)


# ------------------------------------------- every primitive of the table, one operand a numpy array


def _reversed(a: np.ndarray) -> np.ndarray:
    """Another array of ``a``'s shape and dtype (its entries in reverse order: indices stay valid)."""
    return a.reshape(-1)[::-1].reshape(a.shape)


def _pairs():
    """(case, numpy position): each array argument of a case beside a differentiable one, if changing it changes it."""
    pairs = []
    for case in ALL_CASES:
        args = make_args(case)
        wrt = wrt_positions(case, args)
        for j, a in enumerate(args):
            if not isinstance(a, np.ndarray) or a.size == 0 or np.array_equal(_reversed(a), a, equal_nan=True) \
                    or not [i for i in wrt if i != j]:
                continue
            if _gradients(case, args, j, np.array(a)) is not None:
                pairs.append((case, j))
    return pairs



def _gradients(case, args, j, numpy_operand, change_after=None):
    """Gradients of Σ u ⊙ case.fn(...) in the differentiable args, argument j passed as the ndarray given."""
    wrt = [i for i in wrt_positions(case, args) if i != j]
    full = [ad.Tensor(a) for a in args]
    for i in wrt:
        full[i] = ad.Tensor(np.asarray(args[i], dtype=np.float64), requires_grad=True)
    full[j] = numpy_operand
    try:
        out = case.fn(*full)
    except (TypeError, AttributeError):
        return None  # (a case whose function calls a method of its argument: it takes Tensors only)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    weight = np.random.default_rng(7)
    loss = 0.0
    for o in outs:
        if o.requires_grad and o.dtype.kind == "f":
            loss = loss + ad.sum(o * weight.uniform(0.5, 1.5, o.shape))
    if not isinstance(loss, ad.Tensor):
        return None
    if change_after is not None:
        change_after()
    loss.backward()
    return [np.zeros(np.shape(args[i])) if full[i].grad is None else full[i].grad.value for i in wrt]


PAIRS = _pairs()


@pytest.mark.parametrize("case, j", PAIRS, ids=[f"{case_id(c)}-arg{j}" for c, j in PAIRS])
def test_changing_a_numpy_operand_after_recording_leaves_the_gradient(case, j):
    args = make_args(case)
    expected = _gradients(case, args, j, np.array(args[j]))
    operand = np.array(args[j])
    changed = _reversed(operand).copy()

    def change():
        operand[...] = changed
    got = _gradients(case, args, j, operand, change_after=change)
    for g, e in zip(got, expected):
        # The same computation run twice on the same numbers: equal up to BLAS's
        # choice of kernel for the (unchanged) shapes, so a few ulps at most.
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


# ------------------------------------------- a Tensor's own array: the user stamps a change made by hand


def test_a_change_to_a_tensors_array_made_by_hand_is_refused_once_stamped():
    # A Tensor shares its array (t.value, the ndarray it was made from) and no copy is made on
    # record; ad.changed_in_place(t) after a change by hand refuses graphs recorded before it,
    # as an optimizer's step does.
    a = np.array([0.5, 1.0])
    w = ad.Tensor(a, requires_grad=True, name="w")
    loss = ad.sum(ad.sin(w))  # ad.changed_in_place refuses this line
    a[...] = 5.0
    ad.changed_in_place(w)
    with pytest.raises(ad.ChangedInPlaceError,
                       match=r"backward: 'w' \(shape \(2,\)\) was changed in place .*ad\.changed_in_place.*"
                             rf"after 'sin' \(at .*test_changed_inputs\.py:{line_of('refuses this line', __name__)}\)"):
        loss.backward()
    assert w.grad is None
    ad.sum(ad.sin(w)).backward()  # recorded after the change: its gradient is at the new values
    np.testing.assert_allclose(w.grad.value, np.cos([5.0, 5.0]), rtol=1e-15)


def test_changed_in_place_refuses_a_computed_tensor():
    y = ad.exp(ad.Tensor(np.ones(2), requires_grad=True))
    with pytest.raises(ad.AutogradDagError, match=r"changed_in_place: only a leaf .* computed by 'exp'"):
        ad.changed_in_place(y)
