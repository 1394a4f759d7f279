"""Weight initialisation: Glorot (Xavier) and He (Kaiming), from a numpy Generator or a seed.

Every function takes ``rng``: a ``numpy.random.Generator``, an int seed, or
None (a fresh, unseeded generator). Passing one Generator to every layer of a
model makes the whole model reproducible from one seed.
"""

from __future__ import annotations

import numpy as np

from ..errors import AutogradDagError, ShapeError

__all__ = ["as_generator", "size", "fans", "glorot_uniform", "glorot_normal", "he_uniform", "he_normal",
           "uniform", "zeros", "ones", "initialise"]


def as_generator(rng=None) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a Generator (returned as is), an int seed, or None.

    Example: ``as_generator(0).standard_normal()`` is the same number every run.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise AutogradDagError(f"init: rng must be a numpy.random.Generator, an int seed or None; "
                           f"got {type(rng).__name__}")


def size(owner: str, what: str, value) -> int:
    """A layer size (features, channels, heads, ...) as a Python int; a fractional or non-numeric one is refused.

    ``int()`` would floor 10.5 (e.g. ``7 * 1.5`` hidden units) to 10 silently,
    where PyTorch refuses the float; a whole float such as ``d / 2`` = 4.0 is taken.
    Example: ``size("Linear", "in_features", 4.0) == 4``.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    raise ShapeError(f"{owner}: Expect: {what} a whole number. Actual: {value!r}")


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of ``shape``: (out, in) for a matrix, (out, in, kh, kw) for a kernel.

    Example: ``fans((6, 1, 5, 5)) == (25, 150)``.
    """
    shape = tuple(shape)
    if len(shape) < 2:
        raise AutogradDagError(f"init: fans need a weight with at least 2 axes (out, in, ...); got {shape}")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def glorot_uniform(shape, rng=None, dtype=np.float64, gain: float = 1.0) -> np.ndarray:
    """U(-a, a) with a = gain·√(6 / (fan_in + fan_out)) (Glorot & Bengio 2010).

    Keeps activation and gradient variances level across layers for tanh and logistic.

    Shapes: shape (out, in, ...) -> array of that shape.
    Example: ``glorot_uniform((3, 2), rng=0).shape == (3, 2)``.
    """
    fan_in, fan_out = fans(shape)
    a = gain * np.sqrt(6.0 / (fan_in + fan_out))
    return as_generator(rng).uniform(-a, a, size=shape).astype(dtype)


def glorot_normal(shape, rng=None, dtype=np.float64, gain: float = 1.0) -> np.ndarray:
    """N(0, σ²) with σ = gain·√(2 / (fan_in + fan_out)).

    Shapes: shape (out, in, ...) -> array of that shape.
    Example: ``glorot_normal((3, 2), rng=0).dtype == np.float64``.
    """
    fan_in, fan_out = fans(shape)
    return (gain * np.sqrt(2.0 / (fan_in + fan_out)) * as_generator(rng).standard_normal(shape)).astype(dtype)


def he_uniform(shape, rng=None, dtype=np.float64) -> np.ndarray:
    """U(-a, a) with a = √(6 / fan_in) (He et al. 2015): variance 2/fan_in, suited to ReLU.

    Shapes: shape (out, in, ...) -> array of that shape.
    Example: ``he_uniform((4, 3), rng=0).shape == (4, 3)``.
    """
    fan_in, _ = fans(shape)
    a = np.sqrt(6.0 / fan_in)
    return as_generator(rng).uniform(-a, a, size=shape).astype(dtype)


def he_normal(shape, rng=None, dtype=np.float64) -> np.ndarray:
    """N(0, 2 / fan_in) (He et al. 2015), suited to ReLU.

    Shapes: shape (out, in, ...) -> array of that shape.
    Example: ``he_normal((4, 3), rng=0).std()`` is about ``√(2/3)``.
    """
    fan_in, _ = fans(shape)
    return (np.sqrt(2.0 / fan_in) * as_generator(rng).standard_normal(shape)).astype(dtype)


def uniform(shape, bound: float, rng=None, dtype=np.float64) -> np.ndarray:
    """U(-bound, bound). Example: ``uniform((3,), 0.1, rng=0)``."""
    return as_generator(rng).uniform(-bound, bound, size=shape).astype(dtype)


def zeros(shape, dtype=np.float64) -> np.ndarray:
    """All zeros (biases). Example: ``zeros((3,))``."""
    return np.zeros(shape, dtype=dtype)


def ones(shape, dtype=np.float64) -> np.ndarray:
    """All ones (normalisation scales γ). Example: ``ones((3,))``."""
    return np.ones(shape, dtype=dtype)


_SCHEMES = {"glorot": glorot_uniform, "glorot_uniform": glorot_uniform, "xavier": glorot_uniform,
            "glorot_normal": glorot_normal, "he": he_normal, "he_normal": he_normal,
            "kaiming": he_normal, "he_uniform": he_uniform}


def initialise(scheme: str, shape, rng=None, dtype=np.float64) -> np.ndarray:
    """A weight array by scheme name: 'glorot' (uniform), 'glorot_normal', 'he' (normal), 'he_uniform'.

    Example: ``initialise("he", (8, 4), rng=0).shape == (8, 4)``.
    """
    try:
        fn = _SCHEMES[scheme]
    except KeyError:
        raise AutogradDagError(f"init: unknown scheme {scheme!r}; choose one of {sorted(_SCHEMES)}") from None
    return fn(shape, rng=rng, dtype=dtype)
