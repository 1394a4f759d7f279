"""Derivatives that came out silently wrong at particular values: now exact, or refused.

A library used to verify gradients must give the right derivative or raise a
library error naming the operation, the values and the user's line. Each test
compares against an independent computation (central differences in float64,
a numpy formula) or asserts the refusal, in eager mode, under ``jit`` (a
program recorded on good values, run on bad ones) and under ``vmap``.
"""

import inspect

import numpy as np
import pytest

import autograd_dag as ad

L = ad.linalg


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def _line_of(marker: str) -> int:
    """The line number in this file of the source line containing ``marker``."""
    lines = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text and "_line_of" not in text)

# ------------------------------------------------------------- qr, rank-deficient


_W = np.random.default_rng(7).standard_normal((3, 5))


def _r_loss(a):
    k = min(a.shape[-2:])
    return ad.sum(L.qr(a)[1] * _W[:k, :a.shape[-1]])     # qr-loss-line


def _r_loss_np(a):
    r = np.linalg.qr(a)[1]
    k = min(a.shape[-2:])
    return float(np.sum(r * _W[:k, :a.shape[-1]]))


def _rank_deficient(shape, seed=0):
    """A matrix whose leading min(m, n) square block is singular (one column a combination of two)."""
    a = np.random.default_rng(seed).standard_normal(shape)
    k = min(shape)
    a[:, k - 1] = a[:, 0] - 2.0 * a[:, 1] if k > 2 else 3.0 * a[:, 0]
    return a


@pytest.mark.parametrize("shape", [(2, 4), (3, 5), (4, 3), (3, 3)], ids=["wide", "wide3", "tall", "square"])
def test_qr_of_a_rank_deficient_leading_block_refuses_its_derivative(shape):
    # The solves with R divided by an r_ii of 1e-17: the gradient came back off by O(1) with
    # no error (wide 2x4: 6.4 away from central differences).
    a = _rank_deficient(shape)
    line = _line_of("# qr-loss-line")
    tangent = np.ones_like(a)
    attempts = {
        "grad": lambda: ad.grad(_r_loss)(a),
        "backward": lambda: _r_loss(ad.Tensor(a, requires_grad=True)).backward(),
        "jvp": lambda: ad.jvp(_r_loss, (a,), (tangent,)),
        "hessian": lambda: ad.hessian(_r_loss)(a),
        "vmap": lambda: ad.vmap(ad.grad(_r_loss))(np.stack([a + 0.5 * np.eye(*shape), a])),
    }
    for how, attempt in attempts.items():
        with pytest.raises(ad.UndefinedDerivativeError) as info:
            attempt()
        message = str(info.value)
        assert "qr" in message and "full rank" in message and f"test_silent_grads.py:{line}" in message, (how, message)
    # A program recorded on a full-rank matrix refuses the singular one when it runs.
    compiled = ad.jit(ad.grad(_r_loss))
    good = np.random.default_rng(1).standard_normal(shape)
    np.testing.assert_allclose(compiled(good), _fd_grad(_r_loss_np, good), atol=1e-6)
    with pytest.raises(ad.UndefinedDerivativeError, match=f"qr.*test_silent_grads.py:{line}"):
        compiled(a)


def test_qr_rank_test_is_relative_to_the_norm():
    # R is homogeneous of degree 1 in A, so d/dA Σ W∘R is the same at A and at 1e-200·A;
    # a tiny but full-rank matrix keeps its derivative, a near-singular one (gap 1e-6) too.
    a = np.random.default_rng(3).standard_normal((3, 5))
    expected = _fd_grad(_r_loss_np, a)
    np.testing.assert_allclose(ad.grad(_r_loss)(a * 1e-200), expected, atol=1e-6)
    near = _rank_deficient((3, 5))
    near[:, 2] += 1e-6 * np.random.default_rng(4).standard_normal(3)
    np.testing.assert_allclose(ad.grad(_r_loss)(near), _fd_grad(_r_loss_np, near, eps=1e-9),
                               rtol=1e-3, atol=1e-3)
