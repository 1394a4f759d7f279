"""Linear and bilinear primitives declared by their transposes (``defprim``/``ad.primitive(transpose=...)``).

The VJP and the JVP are derived from the one declaration; these tests check the
derivation itself on users' primitives (the built-in ones are checked through
the case tables and the mutation test): both modes against finite differences
to second order, a missing tangent of a variadic primitive, nondiff indices,
what recording keeps, and the refusals.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd_dag as ad

RNG = np.random.default_rng(26)


def _gather_pair(name):
    """gather(x, idx) = x[idx] and scatter(v, idx, size), each declared as the other's transpose."""
    gather = ad.primitive(f"{name}_gather", lambda x, idx: x[idx], nondiff=(1,),
                          transpose=(lambda ct, x, idx: scatter(ct, idx, size=x.shape[0]), None))

    def scatter_impl(v, idx, *, size):
        out = np.zeros((size,) + v.shape[1:], v.dtype)
        np.add.at(out, idx, v)
        return out
    scatter = ad.primitive(f"{name}_scatter", scatter_impl, nondiff=(1,),
                           transpose=(lambda ct, v, idx, *, size: gather(ct, idx), None))
    return gather, scatter


def test_a_transpose_pair_with_indices_differentiates_to_second_order():
    gather, scatter = _gather_pair("pair26")
    idx = np.array([2, 0, 2, 1])
    x = RNG.standard_normal(3)
    ad.check_grads(lambda x: ad.sum(ad.sin(gather(x, idx)) ** 2), (x,), order=2)
    ad.check_grads(lambda v: ad.sum(ad.tanh(scatter(v, idx, size=5))), (RNG.standard_normal(4),), order=2)


def test_the_derived_jvp_is_the_primitive_on_the_tangent():
    gather, _ = _gather_pair("jvp26")
    idx = np.array([1, 1, 0])
    _, tangent = ad.jvp(lambda x: gather(x, idx), (np.zeros(2),), (np.array([10.0, 20.0]),))
    np.testing.assert_array_equal(tangent, [20.0, 20.0, 10.0])


def test_a_variadic_linear_primitive_fills_a_missing_tangent_with_zeros():
    def split_back(ct, *xs):
        bounds = np.cumsum([0] + [x.shape[0] for x in xs])
        return tuple(ct[a:b] for a, b in zip(bounds[:-1], bounds[1:]))
    join = ad.primitive("join26", lambda *xs: np.concatenate(xs), transpose=split_back)
    a, b = np.array([1.0, 2.0]), np.array([3.0])
    ad.check_grads(lambda a, b: ad.sum(join(a, b, a) ** 3), (a, b), order=2)
    # Only b has a tangent: a's two blocks are zeros.
    _, tangent = ad.jvp(lambda b: join(a, b, a), (b,), (np.array([5.0]),))
    np.testing.assert_array_equal(tangent, [0.0, 0.0, 5.0, 0.0, 0.0])


def test_a_bilinear_primitive_sums_one_term_per_operand():
    outer = ad.primitive("outer26", np.multiply.outer, bilinear=True, transpose=(
        lambda ct, a, b: ad.matmul(ct, b), lambda ct, a, b: ad.matmul(a, ct)))
    a, b = RNG.standard_normal(3), RNG.standard_normal(2)
    ad.check_grads(lambda a, b: ad.sum(ad.sin(outer(a, b))), (a, b), order=2)
    ta, tb = RNG.standard_normal(3), RNG.standard_normal(2)
    _, tangent = ad.jvp(outer, (a, b), (ta, tb))
    # Two products summed against one expression of them: rounding may differ in the last place.
    np.testing.assert_allclose(tangent, np.multiply.outer(ta, b) + np.multiply.outer(a, tb), rtol=1e-14)


def test_recording_copies_what_the_transposes_read_and_nothing_else():
    idx = np.array([0, 2])
    gather, _ = _gather_pair("reads26")
    x = ad.Tensor(np.arange(3.0), requires_grad=True)
    out = gather(x, idx)
    assert out.parents[1].value is not idx  # the indices choose where the cotangent goes: kept as they were
    shift = ad.primitive("shift26", np.add, transpose=(lambda ct, a, b: ct, lambda ct, a, b: ct))
    b = np.ones(3)
    assert shift(x, b).parents[1].value is b  # linear in b: no rule reads its numbers
    scale = ad.primitive("scale26", np.multiply, bilinear=True, transpose=(
        lambda ct, a, b: ct * b, lambda ct, a, b: ct * a))
    y = scale(x, b)
    assert y.parents[1].value is not b  # a's cotangent reads b
    b[:] = 5.0  # changed in place after recording: the gradient is at the recorded numbers
    y.backward(np.ones(3))
    np.testing.assert_array_equal(x.grad, np.ones(3))


def test_a_primitive_without_a_differentiable_input_declares_the_zero_map():
    # Two inputs, both nondiff: transpose=() states that no derivative flows through it.
    rank_sum = ad.primitive("rank_sum26", lambda x, y: np.argsort(np.argsort(x + y)).astype(float),
                            nondiff=(0, 1), transpose=())
    x, y = np.array([0.3, -1.0, 2.0]), np.array([0.0, 0.5, -4.0])
    ranks = np.array([2.0, 1.0, 0.0])  # x + y = [0.3, -0.5, -2.0]
    np.testing.assert_array_equal(ad.grad(lambda x: ad.sum(x * rank_sum(x, y)))(x), ranks)
    _, tangent = ad.jvp(lambda x: x * rank_sum(x, y), (x,), (np.ones(3),))
    np.testing.assert_array_equal(tangent, ranks)
    assert rank_sum.prim.vjp(np.ones(3), None, x, y) == (None, None)  # one (absent) cotangent per input
    recorded = rank_sum(ad.Tensor(x, requires_grad=True), y)
    assert recorded.parents[1].value is y  # no rule reads it: not copied


def test_a_declaration_is_refused_when_it_says_two_things():
    with pytest.raises(ad.AutogradDagError, match="transpose or its VJP, not both"):
        ad.primitive("both26", np.negative, vjp=lambda ct, out, x: (-ct,),
                     transpose=(lambda ct, x: -ct,))
    with pytest.raises(ad.AutogradDagError, match="bilinear=True needs the transpose"):
        ad.primitive("bilinear26", np.multiply, bilinear=True)
    with pytest.raises(ad.AutogradDagError, match="transpose must be a function"):
        ad.primitive("notfn26", np.negative, transpose=(3,))
