"""Array manipulation as numpy spells it: pad, flip, roll (primitives); tile,
repeat, split, diagonal, trace, triu, tril, outer, dot, tensordot (exact
composites of reshape, broadcast_to, getitem, take, where, matmul and sum);
and the creation helpers zeros, ones, full, zeros_like, ones_like, full_like,
arange, linspace and eye, which return constant Tensors.

What goes here: linear primitives that rearrange whole arrays (no index
chosen by data), each declared by its transpose alone (``defprim(...,
transpose=...)``; no rule reads a value): ``pad``'s is the slice that undoes
it, ``flip``'s ``flip`` itself, ``roll``'s ``roll`` backwards; and composites of
primitives, which need no rules. ``diagonal`` moves the two axes last and
gathers with linalg's one diagonal gather (``ad.linalg.diagonal``'s); ``trace`` sums it.

Example:
    >>> import numpy as np, autograd_dag as ad
    >>> ad.pad(ad.Tensor([1.0, 2.0]), 1).value
    array([0., 1., 2., 0.])
    >>> ad.grad(lambda t: ad.sum(ad.tile(t, 3)))(np.array([1.0, 2.0]))
    array([3., 3.])
    >>> float(np.trace(ad.Tensor(np.eye(3))).value)
    3.0
"""

from __future__ import annotations

import builtins

import numpy as np

from ..core import Tensor, apply, concrete
from ..errors import AutogradDagError, ShapeError
from .elementwise import astype, multiply, where
from .indexing import concatenate, getitem, numpy_operand, take
from .linalg import matmul
from .linalg.products import _diagonal
from .reductions import _ndim
from .batch import shift_axis
from .registry import defprim
from .shapes import fmt, normalize_axes, normalize_axis
from .structure import broadcast_to, reshape, sum, transpose


def _shape(x) -> tuple[int, ...]:
    return tuple(np.shape(x.value if isinstance(x, Tensor) else x))


def _int(name: str, what: str, v) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ShapeError(f"{name}: Expect: an integer {what}. Actual: {v!r}")
    return int(v)

# -------------------------------------------------------------------- pad


def _pad_impl(x, *, pad_width, value):
    return np.pad(x, pad_width, mode="constant", constant_values=value)


def _unpad(ct, pad_width):
    return getitem(ct, tuple(slice(b, d - a) for (b, a), d in zip(pad_width, ct.shape)))


def _pad_batch(prim, args, batched, *, pad_width, value):
    return apply(prim, args[0], pad_width=((0, 0),) + tuple(pad_width), value=value)


PAD = defprim(
    "pad", _pad_impl,
    transpose=(lambda ct, x, *, pad_width, value: _unpad(ct, pad_width),),
    # Affine, not linear, when value != 0: the tangent is padded with zeros, not with value.
    jvp=lambda t, out, x, *, pad_width, value: apply(PAD, t[0], pad_width=pad_width, value=0.0),
    shape=lambda x, *, pad_width, value: (tuple(d + b + a for d, (b, a) in zip(x.shape, pad_width)), x.dtype), batch=_pad_batch)


def _pad_source(n: int, before: int, after: int, mode: str) -> np.ndarray:
    """For each position of the padded axis (-before .. n + after - 1), the entry of x it copies.

    numpy extends an axis periodically in these modes, also when a width exceeds n:
    'wrap' with period n, 'symmetric' (edge repeated) with period 2n, 'reflect' (edge
    not repeated) with period 2n - 2.
    """
    p = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(p, 0, n - 1)
    if mode == "wrap":
        return p % n
    if mode == "symmetric":
        q = p % (2 * n)
        return np.where(q < n, q, 2 * n - 1 - q)
    if n == 1:                                   # reflect of one entry repeats it
        return np.zeros_like(p)
    q = p % (2 * n - 2)
    return np.where(q < n, q, 2 * n - 2 - q)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def pad(x, /, pad_width, mode: str = "constant", *, constant_values=0.0, reflect_type: str = "even") -> Tensor:
    """x padded as ``np.pad`` does, in modes 'constant', 'edge', 'reflect', 'symmetric' and 'wrap'.

    ``pad_width`` is as numpy's: an int, a pair (before, after), or one pair per
    axis. 'constant' surrounds x with ``constant_values`` (one primitive; the
    derivative is the slice that undoes the padding). The other modes copy
    entries of x, axis after axis as numpy does: the copied entries are gathered
    with ``take`` and joined to x with ``concatenate``, so an entry copied k times
    gets k cotangents summed. 'edge' repeats the end entries, 'wrap' continues
    periodically, 'symmetric' mirrors with the edge repeated ([1, 2, 3] ->
    [2, 1 | 1, 2, 3 | 3, 2]) and 'reflect' without it ([3, 2 | 1, 2, 3 | 2, 1]);
    widths larger than the axis continue the pattern, as in numpy.
    Shapes: (d0, ...) -> (d0 + before0 + after0, ...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.pad(ad.Tensor([1., 2.]), 1).value
        array([0., 1., 2., 0.])
        >>> np.pad(ad.Tensor([1., 2., 3.]), (2, 1), mode="reflect").value
        array([3., 2., 1., 2., 3., 2.])
        >>> ad.grad(lambda t: ad.sum(ad.pad(t, 2, "edge")))(np.array([1., 2., 3.]))
        array([3., 1., 3.])
    """
    if mode not in _PAD_MODES:
        raise AutogradDagError(f"pad: mode={mode!r} is not supported on Tensors (modes: "
                               f"{', '.join(map(repr, _PAD_MODES))})")
    if reflect_type != "even":
        raise AutogradDagError(f"pad: reflect_type={reflect_type!r} is not supported on Tensors (only 'even')")
    if isinstance(constant_values, Tensor) or np.ndim(constant_values) != 0:
        raise AutogradDagError("pad: constant_values must be one number (a constant) on Tensors")
    ndim = _ndim(x)
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise ShapeError(f"pad: Expect: integer pad widths. Actual: {pad_width!r}")
    try:
        widths = np.broadcast_to(widths, (ndim, 2))
    except ValueError:
        raise ShapeError(f"pad: Expect: pad widths that broadcast to ({ndim}, 2) (one (before, after) "
                         f"pair per axis). Actual: {pad_width!r}") from None
    if (widths < 0).any():
        raise ShapeError(f"pad: Expect: non-negative pad widths. Actual: {pad_width!r}")
    pairs = tuple((int(b), int(a)) for b, a in widths)
    if mode == "constant":
        # An integer stays a Python int: through float64, 2**53 + 1 would pad an int64 x with 2**53.
        exact = isinstance(constant_values, (int, np.integer)) and not isinstance(constant_values, (bool, np.bool_))
        return apply(PAD, x, pad_width=pairs, value=int(constant_values) if exact else float(constant_values))
    shape = tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)
    for axis, (before, after) in enumerate(pairs):
        n = shape[axis]
        if before == after == 0:
            continue
        if n == 0:
            raise ShapeError(f"pad: Expect: a non-empty axis to extend in mode {mode!r} (numpy's rule). "
                             f"Actual: axis {axis} of shape {fmt(shape)} is empty")
        source = _pad_source(n, before, after, mode)
        parts = ([take(x, source[:before], axis)] if before else []) + [x] + (
            [take(x, source[before + n:], axis)] if after else [])
        x = concatenate(parts, axis)
    return x if isinstance(x, Tensor) else Tensor(x)

# ------------------------------------------------------------------- flip


FLIP = defprim(
    "flip", lambda x, *, axis: np.flip(x, axis),
    transpose=(lambda ct, x, *, axis: apply(FLIP, ct, axis=axis),),
    shape=lambda x, *, axis: (tuple(x.shape), x.dtype), batch=shift_axis())


def flip(x, /, axis=None) -> Tensor:
    """x with the order of entries reversed along ``axis`` (None: every axis), as ``np.flip``.

    Shapes: (*s) -> (*s). Example: ``ad.flip(ad.Tensor([1., 2., 3.])).value`` is ``[3., 2., 1.]``.
    """
    return apply(FLIP, x, axis=normalize_axes("flip", axis, _ndim(x)))


# ------------------------------------------------------------------- roll


def _roll_impl(x, *, shift, axis):
    return np.roll(x, shift, axis)


def _negated(shift):
    return tuple(-s for s in shift) if isinstance(shift, tuple) else -shift


def _roll_batch(prim, args, batched, *, shift, axis):
    x = args[0]
    if axis is None:  # a roll of the flattened example
        flat = reshape(x, (x.shape[0], int(np.prod(x.shape[1:], dtype=np.int64))))
        return reshape(apply(prim, flat, shift=shift, axis=1), x.shape)
    shifted = tuple(a + 1 for a in axis) if isinstance(axis, tuple) else axis + 1
    return apply(prim, x, shift=shift, axis=shifted)


ROLL = defprim(
    "roll", _roll_impl,
    transpose=(lambda ct, x, *, shift, axis: apply(ROLL, ct, shift=_negated(shift), axis=axis),),
    shape=lambda x, *, shift, axis: (tuple(x.shape), x.dtype), batch=_roll_batch)


def roll(x, /, shift, axis=None) -> Tensor:
    """Entries shifted cyclically by ``shift`` along ``axis`` (None: the flattened order), as ``np.roll``.

    ``shift`` and ``axis`` may be tuples of equal length. Shapes: (*s) -> (*s).
    Example: ``ad.roll(ad.Tensor([1., 2., 3.]), 1).value`` is ``[3., 1., 2.]``.
    """
    ndim = _ndim(x)
    if axis is None:
        return apply(ROLL, x, shift=_int("roll", "shift", shift), axis=None)
    if isinstance(axis, (tuple, list)) or isinstance(shift, (tuple, list)):
        axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
        shifts = (shift,) if not isinstance(shift, (tuple, list)) else tuple(shift)
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        if len(axes) == 1:
            axes = axes * len(shifts)
        if len(axes) != len(shifts):
            raise ShapeError(f"roll: Expect: as many shifts as axes. Actual: shift={shift!r}, axis={axis!r}")
        return apply(ROLL, x, shift=tuple(_int("roll", "shift", s) for s in shifts),
                     axis=tuple(normalize_axis("roll", a, ndim) for a in axes))
    return apply(ROLL, x, shift=_int("roll", "shift", shift), axis=normalize_axis("roll", axis, ndim))

# ------------------------------------------------------------ tile, repeat


def tile(x, /, reps) -> Tensor:
    """x repeated ``reps`` times along each axis, as ``np.tile`` (reshape, broadcast_to, reshape).

    Shapes: (*s) -> s times reps (both padded with leading 1s to equal length).
    Example: ``ad.tile(ad.Tensor([1., 2.]), 2).value`` is ``[1., 2., 1., 2.]``.
    """
    reps = (reps,) if not isinstance(reps, (tuple, list)) else tuple(reps)
    reps = tuple(_int("tile", "repetition count", r) for r in reps)
    if builtins.any(r < 0 for r in reps):
        raise ShapeError(f"tile: Expect: non-negative repetition counts. Actual: {reps!r}")
    shape = _shape(x)
    d = builtins.max(len(shape), len(reps))
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    interleaved = tuple(v for pair in zip((1,) * d, shape) for v in pair)
    stretched = tuple(v for pair in zip(reps, shape) for v in pair)
    out = broadcast_to(reshape(x, interleaved), stretched)
    return reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(x, /, repeats, axis=None) -> Tensor:
    """Each entry repeated ``repeats`` times along ``axis`` (None: the flattened tensor), as ``np.repeat``.

    ``repeats`` is an int or one count per entry along the axis (then a gather).
    Shapes: (..., n, ...) -> (..., Σ repeats, ...).
    Example: ``ad.repeat(ad.Tensor([1., 2.]), 2).value`` is ``[1., 1., 2., 2.]``.
    """
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    shape = _shape(x)
    axis = normalize_axis("repeat", axis, len(shape))
    counts = np.asarray(concrete(repeats, "repeat's counts"))
    if counts.dtype.kind not in "iu" or (counts < 0).any():
        raise ShapeError(f"repeat: Expect: non-negative integer repeats. Actual: {repeats!r}")
    if counts.ndim == 0 or counts.size == 1:
        r = int(counts.reshape(()))
        inserted = shape[:axis + 1] + (1,) + shape[axis + 1:]
        stretched = shape[:axis + 1] + (r,) + shape[axis + 1:]
        out = broadcast_to(reshape(x, inserted), stretched)
        return reshape(out, shape[:axis] + (shape[axis] * r,) + shape[axis + 1:])
    if counts.shape != (shape[axis],):
        raise ShapeError(f"repeat: Expect: one count per entry along axis {axis} ({shape[axis]}). "
                         f"Actual: repeats of shape {fmt(counts.shape)}")
    return take(x, np.repeat(np.arange(shape[axis]), counts), axis)

# ------------------------------------------------------------------ split


def split(x, /, indices_or_sections, axis: int = 0) -> list[Tensor]:
    """x cut into pieces along ``axis`` (slices), as ``np.split``.

    An int k cuts into k equal pieces (the length must divide); a list of
    indices cuts before each. Shapes: (..., n, ...) -> a list of (..., n_i, ...).
    Example: ``[p.value for p in ad.split(ad.Tensor([1., 2., 3., 4.]), 2)]`` is ``[[1., 2.], [3., 4.]]``.
    """
    shape = _shape(x)
    if not shape:
        raise ShapeError("split: Expect: an operand with at least one axis. Actual: a 0-d operand")
    axis = normalize_axis("split", axis, len(shape))
    n = shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ShapeError(f"split: Expect: a number of sections that divides the axis length {n}. "
                             f"Actual: {k} (np.array_split allows unequal pieces)")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        cuts = [_int("split", "index", i) for i in indices_or_sections]
        bounds = [0] + cuts + [n]
    lead = (slice(None),) * axis
    return [getitem(x, lead + (slice(a, b),)) for a, b in zip(bounds[:-1], bounds[1:])]


def array_split(x, /, indices_or_sections, axis: int = 0) -> list[Tensor]:
    """As :func:`split`, but k sections need not divide the length (the first n % k pieces are one longer).

    Shapes: (..., n, ...) -> a list of (..., n_i, ...).
    Example: ``[p.shape for p in ad.array_split(ad.Tensor(np.ones(5)), 2)]`` is ``[(3,), (2,)]``.
    """
    if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
        shape = _shape(x)
        if not shape:
            raise ShapeError("array_split: Expect: an operand with at least one axis. Actual: a 0-d operand")
        n, k = shape[normalize_axis("array_split", axis, len(shape))], int(indices_or_sections)
        if k <= 0:
            raise ShapeError(f"array_split: Expect: a positive number of sections. Actual: {k}")
        sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
        indices_or_sections = list(np.cumsum(sizes)[:-1])
    return split(x, indices_or_sections, axis)

# -------------------------------------------------- diagonal, trace, triu, tril


def diagonal(x, /, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The diagonal of ``x`` in the plane (axis1, axis2), shifted by ``offset``, as ``np.diagonal``.

    A gather (getitem with integer arrays) whose transpose scatters back.
    Shapes: the two axes are removed and the diagonal appended last.
    Example: ``ad.diagonal(ad.Tensor(np.arange(4.).reshape(2, 2))).value`` is ``[0., 3.]``.
    """
    shape = _shape(x)
    if len(shape) < 2:
        raise ShapeError(f"diagonal: Expect: at least 2 dimensions. Actual: shape {fmt(shape)}")
    a1, a2 = normalize_axis("diagonal", axis1, len(shape)), normalize_axis("diagonal", axis2, len(shape))
    if a1 == a2:
        raise ShapeError(f"diagonal: Expect: two different axes. Actual: axis1={axis1}, axis2={axis2}")
    offset = _int("diagonal", "offset", offset)
    perm = [a for a in range(len(shape)) if a not in (a1, a2)] + [a1, a2]
    if perm != list(range(len(shape))):
        x = transpose(x, perm)
    return _diagonal(x, offset)   # (the one diagonal gather: ad.linalg.diagonal's too)


def trace(x, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """Sum of the diagonal (see :func:`diagonal`), as ``np.trace``.

    Shapes: the two axes are removed. Example: ``np.trace(ad.Tensor(np.eye(3))).value`` is ``3.0`` (``ad.trace`` records a program).
    """
    return sum(diagonal(x, offset, axis1, axis2), -1)


def _triangle(name, x, k, upper):
    shape = _shape(x)
    if not shape:
        raise ShapeError(f"{name}: Expect: an operand with at least one axis. Actual: a 0-d operand")
    k = _int(name, "diagonal offset k", k)
    rows, cols = shape[-2:] if len(shape) >= 2 else (shape[-1], shape[-1])
    keep = np.tri(rows, cols, k - 1, dtype=bool) if upper else np.tri(rows, cols, k, dtype=bool)
    return where(~keep if upper else keep, x, np.zeros((), x.dtype if hasattr(x, "dtype") else np.float64))


def triu(x, /, k: int = 0) -> Tensor:
    """x with the entries below the k-th diagonal set to 0 (last two axes), as ``np.triu``.

    Shapes: (..., m, n) -> (..., m, n); a vector (n,) gives (n, n), as numpy.
    Example: ``ad.triu(ad.Tensor(np.ones((2, 2)))).value`` is ``[[1., 1.], [0., 1.]]``.
    """
    return _triangle("triu", x, k, True)


def tril(x, /, k: int = 0) -> Tensor:
    """x with the entries above the k-th diagonal set to 0 (last two axes), as ``np.tril``.

    Shapes: (..., m, n) -> (..., m, n); a vector (n,) gives (n, n), as numpy.
    Example: ``ad.tril(ad.Tensor(np.ones((2, 2)))).value`` is ``[[1., 0.], [1., 1.]]``.
    """
    return _triangle("tril", x, k, False)

# ------------------------------------------------------ outer, dot, tensordot


def outer(a, b) -> Tensor:
    """Outer product of the flattened a and b: out[i, j] = a_i b_j, as ``np.outer``.

    Shapes: (*s), (*t) -> (size(s), size(t)).
    Example: ``ad.outer(ad.Tensor([1., 2.]), ad.Tensor([3., 4.])).value`` is ``[[3., 4.], [6., 8.]]``.
    """
    a, b = numpy_operand(a), numpy_operand(b)   # (a Python list as numpy reads it: ints stay int64)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def dot(a, b) -> Tensor:
    """numpy's ``dot``: a product for scalars, ``matmul`` when b has at most 2 axes, else a tensordot
    over a's last and b's second-to-last axes.

    Shapes: (..., k), (k,) -> (...); (..., k), (k, n) -> (..., n); (..., k), (*c, k, n) -> (..., *c, n).
    Example: ``ad.dot(ad.Tensor([1., 2.]), ad.Tensor([3., 4.])).value`` is ``11.0``.
    """
    # (numpy reads a Python number here as a float64 or int64 array: np.dot(x32, 2.0) is float64)
    a, b = numpy_operand(a), numpy_operand(b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        return multiply(a, b)
    if nb <= 2:
        return matmul(a, b)
    return tensordot(a, b, ([na - 1], [nb - 2]))


def tensordot(a, b, axes=2) -> Tensor:
    """Sum of products over the given axes of a and b, as ``np.tensordot`` (a transpose, reshape and matmul).

    ``axes`` is an int n (a's last n with b's first n) or two lists of axes.
    Shapes: a's free axes then b's free axes.
    Example: ``ad.tensordot(ad.Tensor(np.ones((2, 3))), ad.Tensor(np.ones((3, 4))), 1).shape == (2, 4)``.
    """
    a, b = numpy_operand(a), numpy_operand(b)   # (a Python list as numpy reads it: ints stay int64)
    sa, sb = _shape(a), _shape(b)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0 or n > builtins.min(len(sa), len(sb)):
            raise ShapeError(f"tensordot: Expect: 0 <= axes <= {builtins.min(len(sa), len(sb))}. "
                             f"Actual: axes={axes} for {fmt(sa)} and {fmt(sb)}")
        axes_a, axes_b = list(range(len(sa) - n, len(sa))), list(range(n))
    else:
        try:
            axes_a, axes_b = axes
        except (TypeError, ValueError):
            raise ShapeError(f"tensordot: Expect: axes an int or a pair of axis lists. Actual: {axes!r}") from None
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
        if len(axes_a) != len(axes_b):
            raise ShapeError(f"tensordot: Expect: as many axes of a as of b. Actual: {axes!r}")
        axes_a = [normalize_axis("tensordot", i, len(sa)) for i in axes_a]
        axes_b = [normalize_axis("tensordot", i, len(sb)) for i in axes_b]
    for i, j in zip(axes_a, axes_b):
        if sa[i] != sb[j]:
            raise ShapeError(f"tensordot: Expect: equal lengths on the summed axes. Actual: axis {i} of "
                             f"{fmt(sa)} has {sa[i]}, axis {j} of {fmt(sb)} has {sb[j]}")
    free_a = [i for i in range(len(sa)) if i not in axes_a]
    free_b = [j for j in range(len(sb)) if j not in axes_b]
    k = int(np.prod([sa[i] for i in axes_a], dtype=np.int64))
    perm_a, perm_b = free_a + axes_a, axes_b + free_b
    a2 = reshape(transpose(a, perm_a) if perm_a != list(range(len(sa))) else a, (-1, k) if k else
                 (int(np.prod([sa[i] for i in free_a], dtype=np.int64)), 0))
    b2 = reshape(transpose(b, perm_b) if perm_b != list(range(len(sb))) else b, (k, -1) if k else
                 (0, int(np.prod([sb[j] for j in free_b], dtype=np.int64))))
    return reshape(matmul(a2, b2), tuple(sa[i] for i in free_a) + tuple(sb[j] for j in free_b))

# --------------------------------------------------------------- creation


def _dtype(dtype, default=np.float64):
    return np.dtype(default if dtype is None else dtype)


def constant(value, name: str | None = None, dtype=None) -> Tensor:
    """A leaf that programs hold as a *constant*, not as an input: a module's buffer, a fixed table.

    ``Tensor(value)`` is an input of the program extracted from recorded
    Tensors (``ad.render``, ``autograd-dag export``): it is the user's data.
    An array the library (or a layer) makes on its own, such as the
    positional-encoding table or BatchNorm's running statistics, belongs to
    the model: drawn as a constant and written into an ONNX model as an
    initializer. Like any leaf that does not require a gradient, no
    derivative flows to it. Shapes: any -> the same.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> from autograd_dag.render import as_program
        >>> x = ad.Tensor(np.ones(2), name="x")
        >>> [(str(n.op), n.name) for n in as_program(x + ad.constant(np.arange(2.0), name="P")).nodes]
        [('input', 'x'), ('constant', 'P'), ('add', None)]
    """
    t = Tensor(value if dtype is None else np.asarray(value, dtype=dtype), name=name)
    t.source = None  # what marks a lifted constant: extraction keeps leaves with a source line as inputs
    return t


def zeros(shape, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A Tensor of zeros (float64 by default). Shapes: () -> shape.

    Example: ``ad.zeros((2, 3)).shape == (2, 3)``.
    """
    return Tensor(np.zeros(shape, _dtype(dtype)), requires_grad=requires_grad)


def ones(shape, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A Tensor of ones (float64 by default). Shapes: () -> shape.

    Example: ``ad.ones(3).value`` is ``[1., 1., 1.]``.
    """
    return Tensor(np.ones(shape, _dtype(dtype)), requires_grad=requires_grad)


def full(shape, fill_value, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A Tensor of ``shape`` filled with ``fill_value`` (float64 for a Python number). Shapes: () -> shape.

    Example: ``ad.full(2, 7.).value`` is ``[7., 7.]``.
    """
    if isinstance(fill_value, Tensor) and not requires_grad:
        return _broadcast_fill(fill_value, (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape),
                               dtype)
    if isinstance(fill_value, Tensor):
        fill_value = concrete(fill_value, "full's fill_value")
    if dtype is None and isinstance(fill_value, (bool, int, float)):
        dtype = np.float64
    return Tensor(np.full(shape, fill_value, dtype), requires_grad=requires_grad)


def _broadcast_fill(fill_value: Tensor, shape: tuple, dtype) -> Tensor:
    """``fill_value`` (a computed Tensor) repeated to ``shape``: a recorded broadcast.

    A constant made of its number would cut the derivative (each copy carries
    one: the sum over them), and inside jit it would freeze the first call's value.
    """
    if dtype is not None and np.dtype(dtype) != fill_value.dtype:
        fill_value = astype(fill_value, dtype)
    return broadcast_to(fill_value, shape)


def _like_shape_dtype(x, dtype):
    v = x.value if isinstance(x, Tensor) else np.asarray(x)
    return v.shape, (v.dtype if dtype is None else np.dtype(dtype))


def zeros_like(x, /, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A Tensor of zeros with x's shape and dtype (a constant: no derivative). Shapes: (*s) -> (*s).

    Example: ``ad.zeros_like(ad.Tensor([1., 2.])).value`` is ``[0., 0.]``.
    """
    shape, dt = _like_shape_dtype(x, dtype)
    return Tensor(np.zeros(shape, dt), requires_grad=requires_grad)


def ones_like(x, /, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A Tensor of ones with x's shape and dtype (a constant: no derivative). Shapes: (*s) -> (*s).

    Example: ``ad.ones_like(ad.Tensor([1., 2.])).value`` is ``[1., 1.]``.
    """
    shape, dt = _like_shape_dtype(x, dtype)
    return Tensor(np.ones(shape, dt), requires_grad=requires_grad)


def full_like(x, /, fill_value, dtype=None, *, requires_grad: bool = False) -> Tensor:
    """A Tensor filled with ``fill_value``, with x's shape and dtype (a constant). Shapes: (*s) -> (*s).

    Example: ``ad.full_like(ad.Tensor([1., 2.]), 5.).value`` is ``[5., 5.]``.
    """
    shape, dt = _like_shape_dtype(x, dtype)
    if isinstance(fill_value, Tensor) and not requires_grad:
        return _broadcast_fill(fill_value, shape, dt)
    return Tensor(np.full(shape, concrete(fill_value, "full_like's fill_value"), dt),
                  requires_grad=requires_grad)


def arange(start, stop=None, step=None, dtype=None) -> Tensor:
    """Evenly spaced values in [start, stop), as ``np.arange`` (integers stay integers). Shapes: -> (n,).

    Example: ``ad.arange(3).value`` is ``[0, 1, 2]``; ``ad.arange(0., 1., .5).value`` is ``[0., .5]``.
    """
    args = (start,) if stop is None else (start, stop) if step is None else (start, stop, step)
    return Tensor(np.arange(*args, dtype=dtype))


def linspace(start, stop, num: int = 50, endpoint: bool = True, *, dtype=None) -> Tensor:
    """``num`` evenly spaced values from start to stop, as ``np.linspace``. Shapes: -> (num,).

    Example: ``ad.linspace(0., 1., 3).value`` is ``[0., .5, 1.]``.
    """
    return Tensor(np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def eye(N: int, M=None, k: int = 0, dtype=None) -> Tensor:
    """The identity matrix (ones on the k-th diagonal), as ``np.eye``. Shapes: -> (N, M or N).

    Example: ``ad.eye(2).value`` is ``[[1., 0.], [0., 1.]]``.
    """
    return Tensor(np.eye(N, M, k, dtype=_dtype(dtype)))
