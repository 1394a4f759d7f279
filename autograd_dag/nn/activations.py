"""PyTorch's other activations as compositions of recorded primitives (also ``F.<name>``).

Each is written once, as a composition, so its derivative of any order, its JVP, vmap and
ONNX/JAX export come from the primitives'. At a kink the derivative is PyTorch's: where a
function switches branches at a point, ``where(condition, ...)`` sends the cotangent to the
branch PyTorch's backward uses there (leaky_relu'(0) = negative_slope, elu'(0) = α,
hardtanh'(min) = hardtanh'(max) = 0, softshrink'(±λ) = 0). The one exception, hardswish at ±3,
is said in its docstring. Branches not taken are computed on a clipped operand (expm1 of
min(x, 0)), so a large x never makes an inf that a zero cotangent would turn into NaN.
"""

from __future__ import annotations

from ..errors import AutogradDagError, ShapeError
from ..primitives.elementwise import (abs, add, divide, greater, greater_equal, less, less_equal, logistic,
                                      multiply, negative, softplus, subtract, tanh, where)
from ..primitives.indexing import getitem
from ..primitives.mathfuncs import expm1

__all__ = ["leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardtanh", "relu6", "hardsigmoid",
           "hardswish", "softsign", "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "glu"]

# SELU's constants (Klambauer et al., 2017), as PyTorch's to the last digit.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def leaky_relu(x, negative_slope: float = 0.01):
    """x where x > 0, else negative_slope·x; derivative negative_slope at 0 (PyTorch's). Shapes: (*s) -> (*s).

    Example: ``F.leaky_relu(ad.Tensor([-2., 3.]), 0.1).value`` is ``[-0.2, 3.]``.
    """
    return where(greater(x, 0.0), x, multiply(x, negative_slope))


def _negative_part(x):
    """x where x <= 0, else 0: the operand of an exponential branch, never large."""
    return where(greater(x, 0.0), 0.0, x)


def elu(x, alpha: float = 1.0):
    """x where x > 0, else α·(eᕽ − 1); derivative α at 0 (PyTorch's). Shapes: (*s) -> (*s).

    Example: ``F.elu(ad.Tensor([0., 1.])).value`` is ``[0., 1.]``.
    """
    return where(greater(x, 0.0), x, multiply(expm1(_negative_part(x)), alpha))


def selu(x):
    """scale·elu(x, α) with SELU's self-normalising constants. Shapes: (*s) -> (*s).

    Example: ``F.selu(ad.Tensor([1.])).value`` is ``[1.0507...]``.
    """
    return multiply(elu(x, SELU_ALPHA), SELU_SCALE)


def celu(x, alpha: float = 1.0):
    """x where x > 0, else α·(e^(x/α) − 1): derivative 1 at 0. Shapes: (*s) -> (*s).

    Example: ``F.celu(ad.Tensor([-1.]), 2.0).value`` is ``[2·(e^-0.5 − 1)]``.
    """
    if alpha == 0:
        raise AutogradDagError("celu: Expect: alpha != 0 (it divides x). Actual: 0")
    return where(greater(x, 0.0), x, multiply(expm1(divide(_negative_part(x), alpha)), alpha))


def silu(x):
    """x·σ(x) (swish). Shapes: (*s) -> (*s). Example: ``F.silu(ad.Tensor([0.])).value`` is ``[0.]``."""
    return multiply(x, logistic(x))


def mish(x):
    """x·tanh(softplus(x)) (Misra, 2019). Shapes: (*s) -> (*s).

    Example: ``F.mish(ad.Tensor([0.])).value`` is ``[0.]``.
    """
    return multiply(x, tanh(softplus(x)))


def hardtanh(x, min_val: float = -1.0, max_val: float = 1.0):
    """x clipped to [min_val, max_val]; derivative 1 strictly inside, 0 at and beyond the bounds (PyTorch's).

    ``np.clip``'s derivative is 1 at a bound (numpy's and JAX's convention); this is PyTorch's.
    Shapes: (*s) -> (*s). Example: ``F.hardtanh(ad.Tensor([-3., 0.5])).value`` is ``[-1., 0.5]``.
    """
    if not min_val < max_val:
        raise AutogradDagError(f"hardtanh: Expect: min_val < max_val. Actual: {min_val} and {max_val}")
    return where(less_equal(x, min_val), min_val, where(greater_equal(x, max_val), max_val, x))


def relu6(x):
    """min(max(x, 0), 6): hardtanh(x, 0, 6). Shapes: (*s) -> (*s).

    Example: ``F.relu6(ad.Tensor([-1., 7.])).value`` is ``[0., 6.]``.
    """
    return hardtanh(x, 0.0, 6.0)


def hardsigmoid(x):
    """relu6(x + 3) / 6: derivative 1/6 strictly inside (−3, 3). Shapes: (*s) -> (*s).

    Example: ``F.hardsigmoid(ad.Tensor([0.])).value`` is ``[0.5]``.
    """
    return divide(relu6(add(x, 3.0)), 6.0)


def hardswish(x):
    """x·relu6(x + 3)/6 (Howard et al., 2019). Shapes: (*s) -> (*s).

    At x = ±3 the derivative is the product rule's with hardsigmoid's 0 there (0 at −3, 1 at 3, as
    JAX's ``hard_swish``); PyTorch's backward gives −0.5 and 1.5, the slopes of the other side.
    Example: ``F.hardswish(ad.Tensor([3.])).value`` is ``[3.]``.
    """
    return multiply(x, hardsigmoid(x))


def softsign(x):
    """x / (1 + |x|). Shapes: (*s) -> (*s). Example: ``F.softsign(ad.Tensor([1.])).value`` is ``[0.5]``."""
    return divide(x, add(abs(x), 1.0))


def logsigmoid(x):
    """log σ(x) = −softplus(−x), computed stably for x ≪ 0. Shapes: (*s) -> (*s).

    Example: ``F.logsigmoid(ad.Tensor([0.])).value`` is ``[-log 2]``.
    """
    return negative(softplus(negative(x)))


def tanhshrink(x):
    """x − tanh(x). Shapes: (*s) -> (*s). Example: ``F.tanhshrink(ad.Tensor([0.])).value`` is ``[0.]``."""
    return subtract(x, tanh(x))


def _check_lambd(name, lambd):
    if not lambd >= 0:
        raise AutogradDagError(f"{name}: Expect: lambd >= 0. Actual: {lambd}")


def softshrink(x, lambd: float = 0.5):
    """x − λ above λ, x + λ below −λ, 0 between; derivative 0 at ±λ (PyTorch's). Shapes: (*s) -> (*s).

    Example: ``F.softshrink(ad.Tensor([1., 0.2])).value`` is ``[0.5, 0.]``.
    """
    _check_lambd("softshrink", lambd)
    return where(greater(x, lambd), subtract(x, lambd), where(less(x, -lambd), add(x, lambd), 0.0))


def hardshrink(x, lambd: float = 0.5):
    """x where |x| > λ, else 0; derivative 0 at ±λ (PyTorch's). Shapes: (*s) -> (*s).

    Example: ``F.hardshrink(ad.Tensor([1., 0.2])).value`` is ``[1., 0.]``.
    """
    _check_lambd("hardshrink", lambd)
    return where(greater(abs(x), lambd), x, 0.0)


def glu(x, axis: int = -1):
    """The gated linear unit a·σ(b), a and b the two halves of x along ``axis`` (PyTorch's ``dim``).

    Shapes: (..., 2n, ...) -> (..., n, ...). Example: ``F.glu(ad.Tensor([1., 0.])).value`` is ``[0.5]``.
    """
    size = x.shape[axis]
    if size % 2:
        raise ShapeError(f"glu: Expect: an even size along axis {axis}. Actual: {size} (shape {tuple(x.shape)})")
    axis = axis % x.ndim
    half = size // 2
    a = getitem(x, (slice(None),) * axis + (slice(None, half),))
    b = getitem(x, (slice(None),) * axis + (slice(half, None),))
    return multiply(a, logistic(b))

