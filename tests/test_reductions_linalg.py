"""Reductions, vector activations, matmul and einsum: values, derivative rules, kinks, errors.

The VJP and JVP rules are called directly (the autodiff drivers sit above
this layer) and checked against central finite differences in float64:
for random u (output-shaped) and v (input-shaped),
    <u, (f(x + eps v) - f(x - eps v)) / 2 eps>  ==  sum_i <vjp_i(u), v_i>  ==  <u, jvp(v)>.
"""

import gc

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.core import Tensor
from autograd_dag.errors import NotDifferentiableError, ShapeError
from autograd_dag.primitives import linalg as L
from autograd_dag.primitives import fused as F
from autograd_dag.primitives import reductions as R
from autograd_dag.primitives.registry import PRIMITIVES

from tests.cases_linalg import CASES as LINALG_CASES
from tests.cases_reductions import CASES as REDUCTION_CASES

ALL_CASES = REDUCTION_CASES + LINALG_CASES
EPS = 1e-6


def _ids(cases):
    return [c.id or c.prim for c in cases]


def _wrt(case, args):
    if case.wrt is not None:
        return tuple(case.wrt)
    return tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


def _eval(case, args):
    return np.asarray(case.fn(*[Tensor(a) for a in args]).value, dtype=np.float64)


# ------------------------------------------------------------ (a) values


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_value_matches_reference(case):
    assert case.prim in PRIMITIVES
    args = case.make_args(np.random.default_rng(1))
    out = case.fn(*[Tensor(a) for a in args])
    assert out.prim is PRIMITIVES[case.prim]
    expected = np.asarray(case.ref(*args))
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.value, expected, rtol=1e-10, atol=1e-12)
    # The shape rule agrees with what the implementation produced.
    shape, dtype = out.prim.shape(*out.parents, **(out.params or {}))
    assert tuple(shape) == out.shape and np.dtype(dtype) == out.dtype


# ------------------------------------------- (b) rules vs finite differences


def _is_composite(out):
    # A single primitive applied to leaves has only leaves as parents.
    return any(p.prim is not None for p in out.parents)


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_vjp_and_jvp_rules_match_finite_differences(case):
    rng = np.random.default_rng(2)
    args = tuple(np.asarray(a, dtype=np.float64) for a in case.make_args(rng))
    tensors = [Tensor(a) for a in args]
    out = case.fn(*tensors)
    if _is_composite(out):
        pytest.skip("composite of several primitives: covered by the autodiff-level tests")
    prim, parents, params = out.prim, out.parents, out.params or {}
    wrt = _wrt(case, args)

    u = rng.standard_normal(out.shape)
    v = {i: rng.standard_normal(args[i].shape) for i in wrt}

    def shifted(sign):
        return [a + sign * EPS * v[i] if i in v else a for i, a in enumerate(args)]

    fd = (_eval(case, shifted(+1)) - _eval(case, shifted(-1))) / (2 * EPS)
    expected = float(np.sum(u * fd))

    # Which argument (if any) each parent is: the public fn passes the Tensors through.
    arg_of = [next((i for i, t in enumerate(tensors) if t is p), None) for p in parents]

    cts = prim.vjp(Tensor(u), out, *parents, **params)
    assert isinstance(cts, tuple) and len(cts) == len(parents)
    vjp_total = 0.0
    for k, (ct, p) in enumerate(zip(cts, parents)):
        if k in prim.nondiff:
            assert ct is None, f"nondiff input {k} got a cotangent"
        if ct is None:
            continue
        assert isinstance(ct, Tensor) and ct.shape == p.shape
        if arg_of[k] in v:
            vjp_total += float(np.sum(ct.value * v[arg_of[k]]))

    tangents = tuple(Tensor(v[arg_of[k]]) if arg_of[k] in v and k not in prim.nondiff else None
                     for k in range(len(parents)))
    if all(t is None for t in tangents):
        jvp_total = 0.0
    else:
        t_out = prim.jvp(tangents, out, *parents, **params)
        if t_out is None:
            jvp_total = 0.0
        else:
            assert isinstance(t_out, Tensor) and t_out.shape == out.shape
            jvp_total = float(np.sum(u * t_out.value))

    scale = float(np.sum(np.abs(u * fd))) + 1.0
    assert vjp_total == pytest.approx(expected, rel=1e-6, abs=1e-7 * scale), "VJP"
    assert jvp_total == pytest.approx(expected, rel=1e-6, abs=1e-7 * scale), "JVP"


# ------------------------------------------------------------- (c) kinks


def _vjp(out, ct):
    return out.prim.vjp(Tensor(np.asarray(ct, dtype=float)), out, *out.parents, **(out.params or {}))


def _jvp(out, *tangents):
    return out.prim.jvp(tuple(None if t is None else Tensor(np.asarray(t, dtype=float)) for t in tangents),
                        out, *out.parents, **(out.params or {}))


def test_max_ties_split_gradient_evenly():
    out = R.max(Tensor([1.0, 3.0, 3.0]))
    assert float(out.value) == 3.0
    np.testing.assert_array_equal(_vjp(out, 1.0)[0].value, [0.0, 0.5, 0.5])
    # JVP at the tie averages the tied tangents, the transpose of the VJP.
    assert float(_jvp(out, [10.0, 1.0, 2.0]).value) == 1.5


def test_min_ties_split_gradient_evenly_along_axis():
    x = Tensor([[2.0, 1.0, 1.0, 5.0], [4.0, 4.0, 4.0, 4.0], [0.0, 1.0, 2.0, 3.0]])
    out = R.min(x, axis=1, keepdims=True)
    g = _vjp(out, [[1.0], [2.0], [3.0]])[0].value
    np.testing.assert_array_equal(g, [[0, 0.5, 0.5, 0], [0.5, 0.5, 0.5, 0.5], [3, 0, 0, 0]])


def test_max_all_tied_over_all_axes():
    out = R.max(Tensor(np.full((2, 2), 7.0)))
    np.testing.assert_array_equal(_vjp(out, 4.0)[0].value, np.ones((2, 2)))


def test_max_gradient_is_a_recorded_program():
    x = Tensor([1.0, 3.0, 3.0])
    g = _vjp(R.max(x), 1.0)[0]
    assert g.prim is not None  # built from primitives, not a numpy constant
    names = set()
    stack = [g]
    while stack:
        t = stack.pop()
        if t.prim is not None:
            names.add(t.prim.name)
            stack.extend(t.parents)
    assert "equal" in names and "divide" in names


@pytest.mark.parametrize("gamma", [1.0, 0.5, 1e-3, 10.0])
def test_softargmax_and_logsumexp_stable_at_large_inputs(gamma):
    x = np.array([1e4, -1e4, 1e4, 0.0])
    lse = F.logsumexp(Tensor(x), gamma=gamma)
    p = F.softargmax(Tensor(x), gamma=gamma)
    assert np.isfinite(lse.value) and np.all(np.isfinite(p.value))
    assert float(lse.value) == pytest.approx(1e4 + gamma * np.log(2.0), rel=1e-12)
    np.testing.assert_allclose(p.value, [0.5, 0.0, 0.5, 0.0], atol=1e-300)
    assert np.all(np.isfinite(_vjp(lse, 1.0)[0].value))
    assert np.all(np.isfinite(_vjp(p, [1.0, 2.0, 3.0, 4.0])[0].value))
    neg = F.logsumexp(Tensor(-x), gamma=gamma)
    assert float(neg.value) == pytest.approx(1e4 + gamma * np.log(1.0 + np.exp(-1e4 / gamma)), rel=1e-12)


@pytest.mark.parametrize("gamma", [0.01, 0.1, 1.0, 10.0])
def test_logsumexp_gamma_bounds(gamma):
    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 50):
        u = rng.standard_normal(m) * 5
        lse = float(F.logsumexp(Tensor(u), gamma=gamma).value)
        assert u.max() - 1e-12 <= lse <= u.max() + gamma * np.log(m) + 1e-12
    # Equal entries reach the upper bound: lse_γ(c·1) = c + γ log M.
    assert float(F.logsumexp(Tensor(np.full(4, 2.0)), gamma=gamma).value) == \
        pytest.approx(2.0 + gamma * np.log(4.0), rel=1e-12)


def test_logsumexp_tends_to_max_as_gamma_shrinks():
    u = np.array([0.3, -1.0, 2.5, 2.4])
    gaps = [float(F.logsumexp(Tensor(u), gamma=g).value) - 2.5 for g in (1.0, 0.1, 0.01)]
    assert gaps[0] > gaps[1] > gaps[2] > 0 and gaps[2] < 1e-3


def test_seed_identities_with_softplus_and_logistic():
    # §4.4.2: lse((u, 0)) = softplus(u); §4.4.4: softargmax((u, 0))_1 = logistic(u).
    for u in (-30.0, -1.5, 0.0, 0.7, 30.0):
        pair = Tensor([u, 0.0])
        assert float(F.logsumexp(pair).value) == pytest.approx(np.log1p(np.exp(u)), rel=1e-12)
        assert float(F.softargmax(pair).value[0]) == pytest.approx(1.0 / (1.0 + np.exp(-u)), rel=1e-12)


def test_logsumexp_gradient_is_softargmax():
    x = Tensor([[0.2, -1.0, 3.0], [1.0, 1.0, 1.0]])
    for gamma in (1.0, 0.3):
        g = _vjp(F.logsumexp(x, axis=1, gamma=gamma), [1.0, 1.0])[0].value
        e = np.exp(x.value / gamma)
        np.testing.assert_allclose(g, e / e.sum(1, keepdims=True), rtol=1e-12)


def test_softargmax_lies_in_simplex():
    x = Tensor(np.random.default_rng(4).standard_normal((3, 6)) * 20)
    p = F.softargmax(x, axis=1).value
    assert np.all(p >= 0) and np.all(p <= 1)
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(F.softargmax(Tensor([[3.0], [-2.0]])).value, [[1.0], [1.0]])


def test_logsumexp_edge_values():
    assert float(F.logsumexp(Tensor(np.zeros(0))).value) == -np.inf
    assert float(F.logsumexp(Tensor([-np.inf, -np.inf])).value) == -np.inf
    assert float(F.logsumexp(Tensor([np.inf, 0.0])).value) == np.inf
    assert float(F.logsumexp(Tensor([-np.inf, 1.0])).value) == pytest.approx(1.0)


def test_argmax_one_hot_ties_to_first_index_zero_derivative():
    x = Tensor([[1.0, 3.0, 3.0], [5.0, 5.0, 0.0]], requires_grad=True)
    out = F.argmax(x)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.value, [[0, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(F.argmax(x, axis=0).value, [[0, 0, 1], [1, 1, 0]])
    assert out.prim.nondiff == (0,)
    assert _vjp(out, np.ones((2, 3))) == (None,)
    # No JVP rule (x is nondiff: forward mode never pushes a tangent to it); its tangent is zero.
    assert out.prim.jvp is None
    _, tangent = ad.jvp(lambda t: F.argmax(t), (x.value,), (np.ones((2, 3)),))
    np.testing.assert_array_equal(tangent, np.zeros((2, 3)))
    # The one-hot vector is a vertex of the simplex: argmax is the limit of softargmax_γ.
    np.testing.assert_allclose(F.softargmax(Tensor([1.0, 3.0, 2.0]), gamma=1e-3).value,
                               F.argmax(Tensor([1.0, 3.0, 2.0])).value, atol=1e-12)


def test_mean_and_var_values():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(R.mean(Tensor(x), axis=(0, 1)).value, 5.5)
    np.testing.assert_allclose(R.var(Tensor(x), axis=0).value, np.full(4, 32.0 / 3.0))
    assert np.all(np.isnan(R.mean(Tensor(np.zeros((0, 3))), axis=0).value))
    assert R.mean(Tensor(np.arange(4))).dtype == np.float64


def test_static_params_are_canonical():
    x = Tensor(np.ones((2, 3, 4)))
    assert R.max(x, axis=-1).params == R.max(x, axis=2).params == {"axis": (2,), "keepdims": False}
    assert F.logsumexp(x, axis=(-1, 0), gamma=2).params == {"axis": (0, 2), "keepdims": False, "gamma": 2.0}
    assert F.softargmax(x).params == {"axis": (2,), "gamma": 1.0}
    assert F.argmax(Tensor([1.0, 2.0]), axis=None).params == {"axis": 0}
    assert L.einsum("ij, jk", np.ones((2, 3)), np.ones((3, 4))).params == {"subscripts": "ij,jk->ik"}


@pytest.mark.parametrize("fn", [F.logsumexp, F.softargmax])
@pytest.mark.parametrize("gamma", [0.0, -1.0, float("nan"), float("inf"), "hot"])
def test_bad_gamma_is_a_clear_error(fn, gamma):
    with pytest.raises(ShapeError, match=r"Expect: a finite temperature gamma > 0\. Actual: gamma="):
        fn(Tensor([1.0, 2.0]), gamma=gamma)


def test_einsum_diagonal_is_differentiable():
    # d/dx_jk of (x_00, x_11, x_22)·c is c_j where j == k, 0 elsewhere; forward: the diagonal of t.
    x = Tensor(np.arange(9.0).reshape(3, 3))
    out = L.einsum("ii->i", x)
    np.testing.assert_array_equal(out.value, [0.0, 4.0, 8.0])
    (ct,) = _vjp(out, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(ct.value, np.diag([1.0, 2.0, 3.0]))
    t = np.arange(9.0).reshape(3, 3) * 10
    np.testing.assert_array_equal(_jvp(out, t).value, [0.0, 40.0, 80.0])


def test_einsum_same_tensor_twice():
    # Both parents are x: the two cotangents add up to the gradient 2 x of sum(x*x).
    x = Tensor(np.array([1.0, -2.0, 3.0]))
    out = L.einsum("i,i->", x, x)
    cts = _vjp(out, 1.0)
    np.testing.assert_allclose(cts[0].value + cts[1].value, 2 * x.value)


# ------------------------------------------------------- (d) shape errors


def _recorded_with(anchors: dict[int, str]) -> list[str]:
    """The names of the anchors (by id) that a live Tensor holds as a parent.

    One collection and one walk of the heap for every anchor at once: with torch and JAX loaded
    in the worker, each walk costs ~1 s, and it was one per shape error."""
    gc.collect()
    return [anchors[id(p)] for o in gc.get_objects() if isinstance(o, Tensor) for p in o.parents or ()
            if id(p) in anchors]


SHAPE_ERRORS = pytest.mark.parametrize("call, message", [
    (lambda a: L.matmul(a, Tensor(np.ones((5, 2)))),
     r"matmul: Expect: a\.shape\[-1\] == b\.shape\[-2\]\. Actual: \(3, 4\) @ \(5, 2\)"),
    (lambda a: L.matmul(a, Tensor(np.ones(5))),
     r"Expect: a\.shape\[-1\] == b\.shape\[0\]\. Actual: \(3, 4\) @ \(5,\)"),
    (lambda a: L.matmul(a, Tensor(2.0)), r"Expect: operands with at least 1 dimension"),
    (lambda a: L.matmul(Tensor(np.ones((2, 3, 3))), Tensor(np.ones((4, 3, 3)))),
     r"Expect: batch dimensions that broadcast together\. Actual: \(2,\) and \(4,\)"),
    (lambda a: L.einsum("ij,jk->ik", a, Tensor(np.ones((5, 2)))),
     r"Expect: the axes labelled 'j' to have the same size\. Actual: 4 and 5"),
    (lambda a: L.einsum("ij,jk->ik", a), r"Expect: one subscript term per operand\. Actual: 2"),
    (lambda a: L.einsum("ijk->i", a), r"Expect: 3 dimensions for subscripts 'ijk'\. Actual: shape \(3, 4\)"),
    (lambda a: L.einsum("ij->iz", a), r"Expect: output letters that appear in an input\. Actual: \['z'\]"),
    (lambda a: L.einsum("ij->ii", a), r"Expect: each output letter once"),
    (lambda a: L.einsum("i1->i", a), r"Expect: subscripts made of letters"),
    (lambda a: L.einsum("i...->i", Tensor(np.ones((3, 2)))), r"Expect: '\.\.\.' in the output"),
    (lambda a: L.einsum("ij->i->j", a), r"Expect: at most one '->'"),
    (lambda a: R.max(Tensor(np.ones((0, 3))), axis=0),
     r"max: Expect: a non-empty axis to reduce .*Actual: shape \(0, 3\)"),
    (lambda a: R.min(Tensor(np.ones((3, 0)))), r"min: Expect: a non-empty axis"),
    (lambda a: F.argmax(Tensor(np.ones((3, 0)))), r"argmax: Expect: a non-empty axis"),
    (lambda a: R.mean(a, axis=2), r"mean: axis 2 is out of range"),
    (lambda a: F.logsumexp(a, axis=-3), r"logsumexp: axis -3 is out of range"),
    (lambda a: F.softargmax(a, axis=(0, 0)), r"softargmax: repeated axis"),
], ids=["matmul-k", "matmul-1d", "matmul-0d", "matmul-batch", "einsum-size", "einsum-terms",
        "einsum-ndim", "einsum-outletter", "einsum-outrepeat", "einsum-char", "einsum-ellipsis",
        "einsum-arrows", "max-empty", "min-empty", "argmax-empty", "mean-axis", "lse-axis",
        "softargmax-axis"])


@SHAPE_ERRORS
def test_shape_errors_name_expect_and_actual(call, message):
    with pytest.raises(ShapeError, match=message):
        call(Tensor(np.ones((3, 4))))


def test_shape_errors_record_nothing():
    # Each call of SHAPE_ERRORS on an operand of its own, all kept alive; then one heap walk.
    anchors, kept = {}, []
    for (call, message), name in zip(SHAPE_ERRORS.args[1], SHAPE_ERRORS.kwargs["ids"], strict=True):
        a = Tensor(np.ones((3, 4)))
        with pytest.raises(ShapeError, match=message):
            call(a)
        kept.append(a)
        anchors[id(a)] = name
    assert len(anchors) == 18
    assert _recorded_with(anchors) == []
    # (The walk sees a Tensor recorded from an anchor where there is one.)
    survivor = kept[4] * 2.0
    assert _recorded_with(anchors) == ["einsum-size"]
    del survivor


# The VJP's (x − lse)/γ is −inf for the 0 entry (an overflow numpy warns about): its exp is the right 0.
@pytest.mark.filterwarnings("ignore:overflow encountered in multiply:RuntimeWarning")
@pytest.mark.parametrize("dtype, big, gamma", [(np.float64, 1e308, 0.5), (np.float64, 1e300, 1e-10),
                                               (np.float32, 3e38, 0.1)])
def test_temperature_below_one_does_not_overflow_near_the_largest_float(dtype, big, gamma):
    # x/γ overflowed before the shift: lse_γ([big, big, 0]) was inf and softargmax_γ NaN,
    # although lse_γ = big + γ·log 2 is a finite number (big, after rounding) and the
    # distribution is (1/2, 1/2, 0). Shifting by the max before dividing by γ keeps both.
    x = np.array([big, big, 0.0], dtype=dtype)
    lse = F.logsumexp(Tensor(x), gamma=gamma)
    p = F.softargmax(Tensor(x), gamma=gamma)
    assert lse.value.dtype == dtype and float(lse.value) == pytest.approx(big, rel=1e-6)
    np.testing.assert_allclose(p.value, [0.5, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(_vjp(lse, 1.0)[0].value, [0.5, 0.5, 0.0], atol=1e-7)


@pytest.mark.parametrize("x, gamma", [([1e6, 1e6], 1e-10), ([1e4, 1e4, 3.0], 1e-12), ([1.0, 1.0, -1.0], 1e-17)])
def test_logsumexp_gradient_is_softargmax_at_small_temperatures(x, gamma):
    # ∇lse_γ = softargmax_γ (§4.4.4). It was read off the output as exp((x − lse_γ)/γ), and
    # lse_γ = max + γ·log 2 rounds to max when γ is below the max's ulp: the gradient was
    # [1, 1] (summing to 2) instead of the tied maxima's [1/2, 1/2].
    x = np.array(x)
    expected = np.where(x == x.max(), 1.0, 0.0) / np.sum(x == x.max())  # two tied maxima, others e^-huge
    lse = F.logsumexp(Tensor(x), gamma=gamma)
    np.testing.assert_allclose(_vjp(lse, 1.0)[0].value, expected, atol=1e-12)
    import autograd_dag as ad
    _, tangent = ad.jvp(lambda t: F.logsumexp(t, gamma=gamma), (x,), (np.ones_like(x),))
    assert float(tangent) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axis, keepdims", [
    ((1024, 128), 0, False),          # a bias's cotangent: one BLAS product
    ((16, 64, 128), (0, 1), False),   # two leading axes
    ((16, 64, 128), (0, 1), True),
    ((3, 1), 0, True),
    ((4, 5), 1, False),               # not leading: numpy's sum
    ((4, 5), (0, 1), False),          # every axis: numpy's sum
    ((2, 0, 3), 0, False),            # empty
])
def test_sum_over_leading_axes(dtype, shape, axis, keepdims):
    # ones @ x adds in the array's dtype as np.sum does, associated otherwise: each result within
    # (rows − 1)·ε·Σ|x| of the float64 sum (the bound of any order of float additions).
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    got = ad.sum(Tensor(x), axis=axis, keepdims=keepdims).value
    exact = np.sum(x.astype(np.float64), axis=axis, keepdims=keepdims)
    rows = x.size // max(exact.size, 1)
    assert got.dtype == dtype and got.shape == exact.shape
    bound = max(rows - 1, 0) * np.finfo(dtype).eps * np.sum(np.abs(x.astype(np.float64)), axis=axis,
                                                             keepdims=keepdims)
    assert np.all(np.abs(got - exact) <= bound)
    # Not contiguous (a transposed view): numpy's own sum, the same numbers as np.sum.
    xt = np.ascontiguousarray(np.swapaxes(x, 0, -1)).swapaxes(0, -1)
    if not xt.flags.c_contiguous:
        np.testing.assert_array_equal(ad.sum(Tensor(xt), axis=axis, keepdims=keepdims).value,
                                      np.sum(xt, axis=axis, keepdims=keepdims))


def test_sum_over_leading_axes_keeps_non_finite_entries():
    x = np.ones((4, 3), np.float32)
    x[1, 0], x[2, 1], x[3, 2] = np.inf, np.nan, -np.inf
    np.testing.assert_array_equal(ad.sum(Tensor(x), axis=0).value, np.array([np.inf, np.nan, -np.inf], np.float32))
    # Integers are numpy's sum (no BLAS): exact.
    assert ad.sum(Tensor(np.arange(6).reshape(3, 2)), axis=0).value.tolist() == [6, 9]
