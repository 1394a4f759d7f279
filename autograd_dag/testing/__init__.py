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
from ..checking_user import check_gradient, check_hessian, check_jacobian, check_jvp, check_vjp
from ..errors import GradientCheckError

__all__ = ["GradientMismatch", "assert_grads_close", "assert_gradient", "assert_jacobian", "assert_vjp",
           "assert_jvp", "assert_hessian"]


class GradientMismatch(GradientCheckError):
    """Raised by :func:`assert_grads_close`; an ``AssertionError`` (and a ``GradientCheckError``)."""


def assert_grads_close(f: Callable, args: Sequence, *, order: int = 1, modes: Sequence[str] = ("rev", "fwd"),
                       eps: float | None = None, atol: float | None = None, rtol: float | None = None,
                       full: bool = False, seed: int = 0, names: Sequence[str] | None = None,
                       batched: bool = False) -> None:
    """Assert that f's reverse- and forward-mode derivatives match central differences.

    ``args`` is the tuple of f's arguments (arrays, scalars, or nested
    tuples/lists/dicts of them); every float argument is checked in float64,
    integer ones are held fixed. The keywords are those of
    :func:`autograd_dag.check_grads`: ``order=2`` checks second derivatives
    too, ``full=True`` compares the Jacobian entry by entry, ``atol``/``rtol``
    loosen the tolerances (float32 inputs have their own defaults), ``batched=True``
    also compares ``vmap`` of the VJP/JVP with the per-example loop.

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
                    seed=seed, names=names, batched=batched)
    except GradientCheckError as exc:
        raise GradientMismatch(str(exc)) from None


def _asserting(check: Callable, derivative: str) -> Callable:
    """``check`` (a checking_user function) raising :class:`GradientMismatch` with its report, for pytest."""
    def assert_form(f: Callable, derivative_f: Callable, args: Sequence, *, eps: float | None = None,
                    atol: float | None = None, rtol: float | None = None, names: Sequence[str] | None = None,
                    three_way: bool = True) -> None:
        __tracebackhide__ = True
        try:
            check(f, derivative_f, args, eps=eps, atol=atol, rtol=rtol, names=names, three_way=three_way)
        except GradientCheckError as exc:
            raise GradientMismatch(str(exc)) from None
    assert_form.__name__ = assert_form.__qualname__ = check.__name__.replace("check_", "assert_")
    assert_form.__doc__ = (
        f"Assert that a hand-written {derivative} matches finite differences: "
        f":func:`autograd_dag.{check.__name__}` for pytest.\n\n"
        f"    Same arguments, shapes and conventions as :func:`autograd_dag.{check.__name__}`; raises\n"
        f"    :class:`GradientMismatch` (an ``AssertionError``) whose message is the check's report (the\n"
        f"    argument, the worst entries, kinks, and which of hand-written, autodiff and finite\n"
        f"    differences agree), shown by pytest at your test's line.\n\n"
        f"    Example (in a test file)::\n\n"
        f"        import numpy as np\n"
        f"        from autograd_dag.testing import assert_gradient\n\n"
        f"        def test_my_gradient():\n"
        f"            assert_gradient(lambda x: np.sum(x ** 3), lambda x: 3 * x ** 2, (np.arange(3.0),))\n")
    return assert_form


assert_gradient = _asserting(check_gradient, "gradient")
assert_jacobian = _asserting(check_jacobian, "Jacobian")
assert_vjp = _asserting(check_vjp, "vector-Jacobian product")
assert_jvp = _asserting(check_jvp, "Jacobian-vector product")
assert_hessian = _asserting(check_hessian, "Hessian")
