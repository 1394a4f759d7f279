"""pytest helpers: verify a function's derivatives in your own test suite.

:func:`assert_grads_close` is :func:`autograd_dag.check_grads` shaped for
pytest: it raises a plain assertion failure whose message is the gradient
check's report (which argument, which mode, the worst Jacobian entries with
their analytic and numerical values), and pytest shows that report at your
test's line instead of a traceback through this library.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..checking import check_grads
from ..errors import GradientCheckError

__all__ = ["GradientMismatch", "assert_grads_close"]


class GradientMismatch(GradientCheckError):
    """Raised by :func:`assert_grads_close`; an ``AssertionError`` (and a ``GradientCheckError``)."""


def assert_grads_close(f: Callable, args: Sequence, *, order: int = 1, modes: Sequence[str] = ("rev", "fwd"),
                       eps: float | None = None, atol: float | None = None, rtol: float | None = None,
                       full: bool = False, seed: int = 0, names: Sequence[str] | None = None) -> None:
    """Assert that f's reverse- and forward-mode derivatives match central differences.

    ``args`` is the tuple of f's arguments (arrays, scalars, or nested
    tuples/lists/dicts of them); every float argument is checked in float64,
    integer ones are held fixed. The keywords are those of
    :func:`autograd_dag.check_grads`: ``order=2`` checks second derivatives
    too, ``full=True`` compares the Jacobian entry by entry, ``atol``/``rtol``
    loosen the tolerances (required for float32 inputs).

    Raises :class:`GradientMismatch` (an ``AssertionError``) with the check's
    report: the argument, the mode, and the worst entries (index, analytic,
    numeric, absolute and relative error).

    Example (in a test file)::

        import numpy as np
        import autograd_dag as ad
        from autograd_dag.testing import assert_grads_close

        def test_my_loss_gradients():
            x = np.random.default_rng(0).standard_normal((4, 3))
            w = np.full(3, 0.1)
            assert_grads_close(lambda x, w: ad.tanh(x @ w).sum(), (x, w), order=2)
    """
    __tracebackhide__ = True
    try:
        check_grads(f, args, order=order, modes=modes, eps=eps, atol=atol, rtol=rtol, full=full,
                    seed=seed, names=names)
    except GradientCheckError as exc:
        raise GradientMismatch(str(exc)) from None
