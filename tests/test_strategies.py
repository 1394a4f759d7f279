"""autograd_dag.testing.strategies: the promises of each strategy, checked on its draws.

Arrays keep their distance from declared kinks (and the declarations in
primitives/smoothness.py are true of the primitives); SPD matrices are SPD with
bounded eigenvalues, well-conditioned ones have a bounded condition number,
orthogonal ones Q^T Q = I; random programs (with a user's primitive inserted)
run and differentiate; a wrong VJP is shrunk to its smallest failing input.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import autograd_dag as ad
from autograd_dag.primitives import PRIMITIVES
from autograd_dag.primitives.smoothness import SMOOTHNESS
from autograd_dag.testing import GradientMismatch, assert_grads_close
from autograd_dag.testing import strategies as ads

FEW = settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def zone_distance(v, a, b):
    """Distance of each value to the closed interval [a, b]."""
    return np.maximum(np.maximum(a - v, v - b), 0.0)


# ----------------------------------------------- arrays away from declared zones

@FEW
@given(ads.arrays(array_shapes(max_dims=3, max_side=4), away_from=[0.0, (1.0, 2.0), -2.5], distance=0.05))
def test_arrays_keep_their_distance_from_points_and_intervals(x):
    assert x.dtype == np.float64 and np.all(np.abs(x) <= 4.0)
    for a, b in [(0.0, 0.0), (1.0, 2.0), (-2.5, -2.5)]:
        assert np.all(zone_distance(x, a, b) >= 0.05)


@FEW
@given(ads.arrays((5,), np.float32, away_from=[math.pi / 2], period=math.pi, domain=(-3.0, math.inf),
                  distance=0.1, magnitude=6.0))
def test_float32_arrays_keep_their_distance_after_rounding_and_periodic_zones_repeat(x):
    assert x.dtype == np.float32
    v = x.astype(np.float64)
    nearest_pole = math.pi / 2 + np.round((v - math.pi / 2) / math.pi) * math.pi
    assert np.all(np.abs(v - nearest_pole) >= 0.1)
    assert np.all(v >= -3.0 + 0.1) and np.all(v <= 6.0)


def test_arrays_cover_both_sides_of_a_kink_and_refuse_impossible_zones():
    strategy = ads.arrays((3,), away_from=[0.0], distance=0.1)
    assert find(strategy, lambda x: x.min() < 0).min() <= -0.1
    assert find(strategy, lambda x: x.max() > 0).max() >= 0.1
    with pytest.raises(ValueError, match="closer than 2 \\* distance"):
        ads.arrays((3,), away_from=[0.0, 0.1], distance=0.1)
    with pytest.raises(ValueError, match="no room"):
        ads.arrays((3,), domain=(0.0, 0.1), distance=0.1)


# ----------------------------------------------- the primitives' declarations

def arity(prim) -> int:
    """The number of array inputs prim's implementation takes (the fewest it accepts)."""
    if isinstance(prim.impl, np.ufunc):
        return prim.impl.nin
    for n in (1, 2, 3):
        try:
            prim.impl(*[np.ones(2)] * n)
        except (TypeError, ValueError):  # too few inputs (np.clip without bounds: a ValueError)
            continue
        return n
    raise AssertionError(prim.name)


def inputs_of(name) -> int:
    # np.clip(x) runs (both bounds None), yet clip's ties name its bounds: those count too.
    positions = [j for tie in SMOOTHNESS[name].ties for j in tie] + list(SMOOTHNESS[name].inputs)
    return max(arity(PRIMITIVES[name]), 1 + max(positions))


def along(prim, position, base):
    """t ↦ prim's value with input ``position`` set to t, the others at ``base``."""
    def g(t):
        args = [np.array(b) for b in base]
        args[position] = np.array(t)
        with np.errstate(all="ignore"):
            return float(prim.impl(*args))
    return g


def not_smooth_at(g, p, h=1e-6) -> bool:
    """A jump, a pole or a kink at p: a huge difference quotient, or derivatives either side that differ."""
    quotient = (g(p + h) - g(p - h)) / (2 * h)
    if not np.isfinite(quotient) or abs(quotient) > 1e3:
        return True
    left, right = (g(p - h) - g(p - 3 * h)) / (2 * h), (g(p + 3 * h) - g(p + h)) / (2 * h)
    return abs(left - right) > 0.1


def test_every_declaration_names_a_primitive_and_the_known_kinks_are_declared():
    assert set(SMOOTHNESS) <= set(PRIMITIVES)
    assert {"relu", "abs", "maximum", "minimum", "clip", "log", "sqrt", "divide", "reciprocal"} <= set(SMOOTHNESS)


# Avoided though smooth there: trunc is 0 on (-1, 1); its jumps are the other integers, declared
# as every integer (a period) at the cost of avoiding 0 too.
CONSERVATIVE = {("trunc", 0.0)}


@pytest.mark.parametrize("name", sorted(SMOOTHNESS))
def test_each_declaration_is_true_of_its_primitive(name):
    # A declaration that names no real kink would make the strategies avoid nothing in particular.
    prim, rule = PRIMITIVES[name], SMOOTHNESS[name]
    n = inputs_of(name)
    base = [0.0, 0.0, 1.0][:n] if rule.ties else [1.0] * n
    for k in rule.inputs:
        g = along(prim, k, base)
        for p in rule.points:
            for shift in ([0.0] if rule.period is None else [0.0, rule.period, -2 * rule.period]):
                if (name, p + shift) in CONSERVATIVE:
                    continue
                assert not_smooth_at(g, p + shift), f"{name} is smooth at {p + shift} (input {k})"
        low, high = rule.domain
        for outside in [low - 0.5, high + 0.5]:
            if np.isfinite(outside):
                assert np.isnan(g(outside)), f"{name} is defined at {outside}, outside its domain"
    for i, j in rule.ties:
        g = along(prim, i, base)
        assert not_smooth_at(g, base[j]), f"{name} has no kink where inputs {i} and {j} tie"


@pytest.mark.parametrize("name", sorted(SMOOTHNESS))
def test_inputs_drawn_for_a_primitive_keep_away_from_its_kinks_and_check(name):
    prim, rule = PRIMITIVES[name], SMOOTHNESS[name]
    n, d = inputs_of(name), 0.05

    @FEW
    @given(ads.away_from_kinks(name, *[(3,)] * n, distance=d))
    def draws(args):
        for k in rule.inputs:
            v = args[k]
            for p in rule.points:
                nearest = p if rule.period is None else p + np.round((v - p) / rule.period) * rule.period
                assert np.all(np.abs(v - nearest) >= d)
            assert np.all(v >= rule.domain[0] + d) and np.all(v <= rule.domain[1] - d)
        for i, j in rule.ties:
            assert np.all(np.abs(args[j] - args[i]) >= d)
        # Away from the kinks, the primitive's rules agree with finite differences.
        ad.check_grads(lambda *a: ad.sum(prim(*a)), args)
    draws()


def test_inputs_for_a_smooth_primitive_are_plain_arrays_and_a_function_names_its_primitive():
    x, = find(ads.away_from_kinks(ad.tanh, (2, 2)), lambda a: True)
    assert x.shape == (2, 2)
    # The simplest draw (all zeros before untying) has every tie to break.
    x, lo, hi = find(ads.away_from_kinks(ad.clip, (3,), (3,), (3,), distance=0.2), lambda a: True)
    assert np.all(np.abs(x - lo) >= 0.2) and np.all(np.abs(x - hi) >= 0.2) and np.all(np.abs(hi - lo) >= 0.2)


# ----------------------------------------------- matrices

@FEW
@given(ads.spd_matrices(4, batch_shape=(3,), max_condition=50.0, scale=2.0))
def test_spd_matrices_are_symmetric_with_bounded_eigenvalues(a):
    assert a.shape == (3, 4, 4)
    np.testing.assert_array_equal(a, np.swapaxes(a, -1, -2))  # symmetrized exactly, by construction
    lam = np.linalg.eigvalsh(a)
    # eigvalsh's error is a few ulps of the largest eigenvalue (100 here): 1e-10 is far above it.
    assert np.all(lam >= 2.0 - 1e-10) and np.all(lam <= 100.0 + 1e-10)
    assert np.all(lam.max(-1) / lam.min(-1) <= 50.0 * (1 + 1e-10))
    np.linalg.cholesky(a)  # raises if not positive definite


@FEW
@given(st.sampled_from([3, (5, 2), (2, 5)]).flatmap(
    lambda shape: ads.well_conditioned_matrices(shape, batch_shape=(2,), max_condition=20.0)))
def test_well_conditioned_matrices_have_a_bounded_condition_number(a):
    assert a.shape[0] == 2 and a.ndim == 3
    sigma = np.linalg.svd(a, compute_uv=False)
    # The SVD's rounding is ~1e-15 relative: the bound holds to 1e-10.
    assert np.all(sigma.min(-1) >= 1.0 - 1e-10)
    assert np.all(sigma.max(-1) / sigma.min(-1) <= 20.0 * (1 + 1e-10))


@FEW
@given(st.integers(1, 6).flatmap(lambda n: ads.orthogonal_matrices(n, batch_shape=(2, 2))))
def test_orthogonal_matrices_have_orthonormal_columns(q):
    n = q.shape[-1]
    # Q comes from one linear solve with a matrix of condition below ~2n: a few hundred ulps at worst.
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(n), q.shape), atol=1e-12)


def test_orthogonal_matrices_reach_both_determinants():
    assert np.linalg.det(find(ads.orthogonal_matrices(3), lambda q: np.linalg.det(q) < 0)) < 0
    assert np.linalg.det(find(ads.orthogonal_matrices(3), lambda q: np.linalg.det(q) > 0)) > 0


# ----------------------------------------------- random programs with a user's primitive

cube = ad.primitive("cube_strategies_test", lambda x: x ** 3,
                    vjp=lambda ct, out, x: (ct * 3.0 * x * x,),
                    jvp=lambda t, out, x: t[0] * 3.0 * x * x, replace=True)


@settings(max_examples=40, deadline=None, database=None)
@given(ads.recipes({"cube": cube}), ads.arrays((2, 3), magnitude=1.5), ads.arrays((3,), magnitude=1.5))
def test_programs_with_a_users_primitive_run_trace_and_differentiate(recipe, x, y):
    plan = recipe.resolved(x, y)
    assert all(op in plan.ops for op, *_ in plan.steps)
    eager = plan(ad.Tensor(x), ad.Tensor(y)).value
    # The traced program replays the same numpy calls in the same order: equal up to rounding.
    np.testing.assert_allclose(ad.trace(plan, x, y)(x, y), eager, rtol=1e-13, atol=1e-13)
    assert_grads_close(lambda x, y: ad.sum(plan(x, y)), (x, y))


def test_a_users_primitive_is_drawn_into_programs():
    recipe = find(ads.recipes({"cube": cube}), lambda r: any(op == "cube" for op, *_ in r.steps))
    x, y = np.full((2, 3), 0.5), np.full(3, 0.25)
    program = ad.trace(recipe.resolved(x, y), x, y)
    assert "cube_strategies_test" in {node.prim.name for node in program.nodes if node.prim is not None}


# ----------------------------------------------- shrinking to the smallest failing input

def wrong_beyond_one(ct, out, x):
    # 10% too large wherever |x| > 1: right near 0, so only large entries expose it.
    return (ct * 3.0 * x * x * ad.where(ad.abs(x) > 1.0, 1.1, 1.0),)


bad_cube = ad.primitive("bad_cube_strategies_test", lambda x: x ** 3, vjp=wrong_beyond_one,
                        jvp=lambda t, out, x: t[0] * 3.0 * x * x, replace=True)


def bad_loss(x):
    return ad.sum(bad_cube(x))


def assert_smallest(x):
    # Shrunk: one entry (the smallest shape), and the simplest value beyond 1 (hypothesis prefers
    # integers, so 2.0; any value in (1, 2] is as small as a failure gets).
    assert x.shape == (1,), x
    assert 1.0 < abs(x[0]) <= 2.0, x


def test_smallest_gradient_failure_shrinks_a_wrong_vjp_to_one_entry_beyond_one():
    args = st.tuples(ads.arrays(array_shapes(max_dims=2, max_side=6), magnitude=4.0))
    found = ads.smallest_gradient_failure(bad_loss, args, max_examples=300)
    assert found is not None
    assert_smallest(found[0])
    assert ads.smallest_gradient_failure(lambda x: ad.sum(cube(x)), args, max_examples=50) is None


def test_a_given_test_with_assert_grads_close_shrinks_the_same_way():
    failing = []

    @settings(max_examples=300, database=None, deadline=None, derandomize=True)
    @given(ads.arrays(array_shapes(max_dims=2, max_side=6), magnitude=4.0))
    def check(x):
        try:
            assert_grads_close(bad_loss, (x,))
        except GradientMismatch:
            failing.append(x)
            raise

    with pytest.raises(GradientMismatch, match="rev"):
        check()
    assert_smallest(failing[-1])  # hypothesis replays the shrunk example last


# ----------------------------------------------- hypothesis stays a test dependency

def test_the_library_imports_without_hypothesis_and_the_strategies_say_what_to_install():
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ImportError("No module named 'hypothesis' (blocked)")
sys.meta_path.insert(0, Block())
import autograd_dag, autograd_dag.testing
assert "hypothesis" not in sys.modules
try:
    import autograd_dag.testing.strategies
except ImportError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "needs hypothesis" in out and "pip install hypothesis" in out
