"""Defects found in gradient verification (hunt of 2026-12-03), each test failing on the code before it."""

import importlib.metadata

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.testing import assert_grads_close

pytest_plugins = ["pytester"]
# The plugin by its entry point if installed, else by name (as tests/test_pytest_plugin.py).
_PLUGIN = "autograd_dag.pytest_plugin"
_LOAD = () if any(ep.value == _PLUGIN for ep in importlib.metadata.entry_points(group="pytest11")) else ("-p", _PLUGIN)

# ------------------------------------------- float32: checked at float32's own tolerances


def _layer_norm(h, mean, sqrt):
    c = h - mean(h, axis=-1, keepdims=True)
    return c / sqrt(mean(c * c, axis=-1, keepdims=True) + 1e-5)


_OURS = [ad.tanh, lambda h: ad.exp(ad.tanh(h)), lambda h: ad.log(1 + h * h), lambda h: ad.softmax(h, axis=-1),
         lambda h: _layer_norm(h, ad.mean, ad.sqrt), ad.sin]


def _softmax_np(h):
    e = np.exp(h - np.max(h, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


_NUMPY = [np.tanh, lambda h: np.exp(np.tanh(h)), lambda h: np.log(1 + h * h), _softmax_np,
          lambda h: _layer_norm(h, np.mean, np.sqrt), np.sin]


def _random_chain(k, ops):
    """A float32 point and f = sum(g3(g2(g1(x @ w)))²) with g drawn from ``ops``: a random ordinary function."""
    rng = np.random.default_rng(k)
    n, m = rng.integers(2, 7, size=2)
    x = rng.standard_normal((3, n)).astype(np.float32) * np.float32(rng.choice([0.3, 1.0, 3.0]))
    w = (rng.standard_normal((n, m)) / np.sqrt(n)).astype(np.float32)
    chain = [ops[i] for i in rng.integers(0, len(ops), size=3)]

    def f(x, w):
        h = x @ w
        for g in chain:
            h = g(h)
        return (h * h).sum()
    return f, x, w


def test_check_grads_passes_32_random_float32_functions_at_its_defaults():
    # Before: refused ("inputs of dtype float32 ... pass atol= and rtol="). Now the derivatives are
    # float32, the differences float64 (f computes in float64 when given it), and the tolerance
    # sqrt(eps32) = 3.5e-4 (atol and rtol): no false failure on any of them, at order 2 for 8.
    for k in range(32):
        f, x, w = _random_chain(k, _OURS)
        assert x.dtype == w.dtype == np.float32
        ad.check_grads(f, (x, w), order=2 if k < 8 else 1)


def test_check_gradient_passes_32_random_float32_functions():
    # Before: chain 29 (log(1 + h²), softmax, tanh at |x| ~ 3) failed with a right gradient: its float32
    # differences at step 1.5e-2 gave -18.580 for -18.598 (tolerance 8.4e-3). Now f is differenced in
    # float64 at step 1e-6. The "hand-written" gradient is our autodiff's, in float32.
    for k in range(32):
        f, x, w = _random_chain(k, _NUMPY)
        g = ad.grad(f, argnums=(0, 1))
        ad.check_gradient(f, lambda x, w: tuple(np.asarray(getattr(t, "value", t)) for t in g(x, w)), (x, w))


def _rms_norm(name, vjp_kind, jvp_kind):
    """u ↦ u / r, r = sqrt(mean(u²) + 0.1), with a VJP and a JVP right or wrong in a chosen way."""
    def r(u):
        return ad.sqrt(ad.mean(u * u, axis=-1, keepdims=True) + 0.1)

    def vjp(ct, out, u):
        right = (ct - out * ad.mean(ct * out, axis=-1, keepdims=True)) / r(u)
        return ({"right": right, "1%": right * 1.01, "10%": right * 1.1, "sign": -right,
                 "missing term": ct / r(u)}[vjp_kind],)

    def jvp(t, out, u):
        right = (t[0] - out * ad.mean(t[0] * out, axis=-1, keepdims=True)) / r(u)
        return {"right": right, "1%": right * 1.01, "10%": right * 1.1, "sign": -right,
                "missing term": t[0] / r(u)}[jvp_kind]
    return ad.primitive(name, lambda u: u / np.sqrt(np.mean(u * u, axis=-1, keepdims=True) + 0.1),
                        vjp=vjp, jvp=jvp, replace=True)


@pytest.mark.parametrize("wrong", ["1%", "10%", "sign", "missing term"])
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_check_grads_fails_wrong_float32_rules(mode, wrong):
    # Before: refused without tolerances. A rule 1 % off is 29 times sqrt(eps32) relative: it must fail.
    prim = _rms_norm(f"test_hunt9_rms_{mode}_{wrong}", wrong if mode == "rev" else "right",
                     wrong if mode == "fwd" else "right")
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((5, 5)).astype(np.float32)

    def f(x, w):
        return ad.sum(ad.tanh(prim(x @ w)) * np.arange(5, dtype=np.float32))
    with pytest.raises(ad.GradientCheckError, match="float32"):
        ad.check_grads(f, (x, w), modes=(mode,))
    right = _rms_norm(f"test_hunt9_rms_right_{mode}", "right", "right")
    ad.check_grads(lambda x, w: ad.sum(ad.tanh(right(x @ w)) * np.arange(5, dtype=np.float32)), (x, w),
                   modes=(mode,), order=2)


def test_an_f_that_casts_down_to_float32_is_differenced_in_float32_and_still_fails_a_1_percent_error():
    # Its differences round at eps32·|f| / h: the step is eps32^(1/3) = 4.9e-3, atol grows with |f|.
    for scale, should_pass in ((2.0, True), (2.02, False)):
        down = ad.primitive(f"test_hunt9_down_{scale}", lambda u: np.tanh(u).astype(np.float32) * 2,
                            vjp=lambda ct, out, u, s=scale: (ct * s * (1 - ad.tanh(u) ** 2),),
                            jvp=lambda t, out, u, s=scale: t[0] * s * (1 - ad.tanh(u) ** 2), replace=True)
        x = np.random.default_rng(3).standard_normal(6).astype(np.float32)
        if should_pass:
            assert_grads_close(lambda v: ad.sum(down(v) * np.arange(6.0, dtype=np.float32)), (x,))
        else:
            with pytest.raises(AssertionError, match="disagree"):
                assert_grads_close(lambda v: ad.sum(down(v) * np.arange(6.0, dtype=np.float32)), (x,))


# ------------------------------------------- assert_grads_close and the fixture take batched=, as check_grads


_times_3sq = ad.primitive("test_hunt9_times_3sq", lambda c, x: c * 3.0 * x * x, replace=True)
_cube = ad.primitive("test_hunt9_cube", lambda x: x ** 3, vjp=lambda ct, out, x: (_times_3sq(ct, x),),
                     jvp=lambda t, out, x: _times_3sq(t[0], x), replace=True)


@pytest.fixture
def broken_batching():
    def first_example_for_all(prim, operands, flags, **params):   # wrong on purpose: example 0's cotangent
        c, x = operands
        return ad.Tensor(np.broadcast_to(c.value[:1], c.shape) * 3.0 * x.value ** 2)
    _times_3sq.prim.batch = first_example_for_all
    yield
    _times_3sq.prim.batch = None


def test_assert_grads_close_takes_batched_and_catches_a_wrong_batching_rule(broken_batching):
    # Before: TypeError (unexpected keyword 'batched'): the assert form lacked check_grads' option.
    x = np.array([0.5, -1.0, 2.0])
    assert_grads_close(lambda x: _cube(x), (x,))        # finite differences cannot see a batching rule
    with pytest.raises(AssertionError, match="batched reverse mode"):
        assert_grads_close(lambda x: _cube(x), (x,), batched=True)


def test_the_gradcheck_fixture_takes_batched_from_the_marker(pytester):
    # Before: the marker's batched=True was not a gradcheck setting, and the wrong rule passed.
    pytester.makepyfile(test_inner='''
import numpy as np, pytest, autograd_dag as ad
times = ad.primitive("inner_times_3sq", lambda c, x: c * 3.0 * x * x, replace=True)
cube = ad.primitive("inner_cube", lambda x: x ** 3, vjp=lambda ct, out, x: (times(ct, x),),
                    jvp=lambda t, out, x: times(t[0], x), replace=True)
times.prim.batch = lambda prim, ops, flags, **p: ad.Tensor(
    np.broadcast_to(ops[0].value[:1], ops[0].shape) * 3.0 * ops[1].value ** 2)

@pytest.mark.gradcheck(batched=True)
def test_batched(gradcheck):
    gradcheck(lambda x: cube(x), (np.array([0.5, -1.0, 2.0]),))

def test_unbatched(gradcheck):
    gradcheck(lambda x: cube(x), (np.array([0.5, -1.0, 2.0]),))
''')
    result = pytester.runpytest_inprocess(*_LOAD, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_batched*", "*batched reverse mode*"])


# ------------------------------------------- check_module: every entry of a small parameter; a loss with an offset

from autograd_dag import nn  # noqa: E402

_GAIN_WRONG = np.ones((10, 10))
_GAIN_WRONG[6, 3] = 1.0 + 3e-5          # the VJP for the gain, entry (6, 3) alone, 3e-5 off (tolerance 1.1e-5)
_gained = ad.primitive("test_hunt9_gained", lambda x, s: x * s,
                       vjp=lambda ct, out, x, s: (ct * s, ad.sum(ct * x, axis=0) * _GAIN_WRONG),
                       jvp=lambda t, out, x, s: ((t[0] * s if t[0] is not None else 0.0)
                                                 + (t[1] * x if t[1] is not None else 0.0)), replace=True)


class _Gain(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(np.random.default_rng(4).uniform(0.5, 1.5, (10, 10)))

    def forward(self, x):
        return _gained(x, self.gain)


def test_check_module_checks_every_entry_of_a_100_entry_parameter_and_names_the_wrong_one():
    # Before: 32 random entries of 100 (seed 0 missed (6, 3)) and 4 directions (tolerance 1e-5·|<g, v>|
    # ~ 1e-4, the error 3e-5·|v|): the wrong gradient passed. torch's gradcheck says "Jacobian mismatch
    # for output 0 with respect to input 1" and prints both whole Jacobians.
    model = nn.Sequential(_Gain())
    x = np.random.default_rng(5).uniform(0.8, 1.2, (3, 10, 10))
    with pytest.raises(ad.GradientCheckError) as info:
        nn.check_module(model, x)
    msg = str(info.value)
    assert "WRONG 0.gain (10, 10): all 100 entries" in msg and "1 disagree; worst:" in msg
    assert "0.gain entry (6, 3): analytic  " in msg
    assert "rel err" in msg and "tolerance" in msg


def test_check_module_passes_a_loss_with_a_large_offset():
    # Before: loss = sum(y) + 1e6 + 1e-3·sum(y²) failed 3 of 4 parameters of a right MLP: at step 1e-6 the
    # loss rounds at 1e6·1.1e-16 / 1e-6 ~ 1e-4 (abs err 6.5e-05, tolerance 9.8e-6). Now a disagreement is
    # differenced again at numdiff's adaptive steps, their error estimate counted against the agreement.
    model, x = nn.MLP([3, 4, 2], activation="tanh", rng=0), np.random.default_rng(0).standard_normal((5, 3))
    assert nn.check_module(model, x, loss=lambda y: ad.sum(y) + 1e6 + 1e-3 * ad.sum(y * y)).ok
    # ... and a wrong gradient with the same offset still fails.
    assert nn.check_module(nn.Sequential(_Gain()), np.ones((3, 10, 10)), raise_on_failure=False,
                           loss=lambda y: ad.sum(y) + 1e6).failed


# ------------------------------------------- outputs that are not numbers


def test_an_output_that_is_not_numbers_is_a_clear_error():
    # Before: f returning (loss, None) crashed check_grads with "TypeError: unsupported operand type(s) for -:
    # 'NoneType' and 'NoneType'" (jax's check_grads takes None as an empty subtree; here it is named).
    x = np.array([0.3, 1.2, -0.5])
    with pytest.raises(ad.AutogradDagError, match=r"check_grads\(<lambda>\): output leaf 1 is None"):
        ad.check_grads(lambda x: (ad.sum(x * x), None), (x,))
    with pytest.raises(ad.AutogradDagError, match=r"check_jacobian\(<lambda>\): output leaf 1 is 'aux'"):
        ad.check_jacobian(lambda x: (x * 2, "aux"), lambda x: (2 * np.eye(3), None), (x,))
