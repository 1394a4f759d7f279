"""numpy's joining, reshaping and rearranging functions, as composites of recorded primitives.

hstack, vstack, dstack, column_stack, append, atleast_1d/2d/3d, ravel, diag,
kron, inner, cross, rot90, flipud, fliplr, moveaxis, rollaxis,
hsplit, vsplit, dsplit, gradient (numpy's finite differences), select and partition. None of them
needs a primitive of its own: each is exactly a concatenate, reshape,
transpose, getitem (and its transpose index_add), multiply, matmul or where,
so their derivatives are those primitives' rules, to any order.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..core import Tensor, parameter, traced
from ..errors import ShapeError
from .elementwise import add, astype, multiply, subtract, where
from .arrays import split
from .indexing import concatenate, getitem, index_add, numpy_operand, stack
from .linalg import matmul
from .numeric import sort
from .shapes import fmt, normalize_axis
from .structure import broadcast_to, reshape, transpose


def _shape(x) -> tuple[int, ...]:
    return tuple(np.shape(x.value if isinstance(x, Tensor) else x))


def _array_like(x):
    """An operand given as a (nested) list or tuple that holds Tensors, stacked into one Tensor.

    numpy would convert such a list with ``np.asarray``, losing the derivative;
    stacking records it. Anything else is returned as it is.
    """
    if isinstance(x, (list, tuple)) and any(isinstance(v, (Tensor, list, tuple)) for v in x):
        return stack([_array_like(v) for v in x])
    return x


def _items(tup, name: str) -> list:
    if isinstance(tup, (Tensor, np.ndarray)):
        # numpy iterates an array over its first axis: its rows are the sequence.
        if not _shape(tup):
            raise ShapeError(f"{name}: Expect: a sequence of arrays. Actual: a 0-d array")
        return [getitem(tup, i) for i in range(_shape(tup)[0])]
    items = [numpy_operand(a) for a in tup]
    if not items:
        raise ShapeError(f"{name}: Expect: at least one array. Actual: none")
    return items

# ---------------------------------------------------------------- atleast


def _atleast(x, ndim: int):
    s = _shape(x)
    if len(s) >= ndim:
        return x if isinstance(x, Tensor) else Tensor(x)
    if ndim == 1:
        return reshape(x, (1,))
    if ndim == 2:
        return reshape(x, (1,) * (2 - len(s)) + s)
    # numpy's atleast_3d: () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1).
    return reshape(x, {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


def atleast_1d(*arys):
    """Each input with at least one axis (a reshape), as ``np.atleast_1d``.

    One input gives one Tensor, several give a list. Shapes: () -> (1,); others unchanged.

    Example:
        >>> import autograd_dag as ad
        >>> ad.atleast_1d(ad.Tensor(2.0)).shape
        (1,)
    """
    out = [_atleast(a, 1) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """Each input with at least two axes, as ``np.atleast_2d``: () -> (1, 1), (n,) -> (1, n).

    One input gives one Tensor, several give a list.

    Example:
        >>> import autograd_dag as ad
        >>> ad.atleast_2d(ad.Tensor([1.0, 2.0])).shape
        (1, 2)
    """
    out = [_atleast(a, 2) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """Each input with at least three axes, as ``np.atleast_3d``.

    () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1). One input gives
    one Tensor, several give a list.

    Example:
        >>> import autograd_dag as ad
        >>> ad.atleast_3d(ad.Tensor([[1.0, 2.0]])).shape
        (1, 2, 1)
    """
    out = [_atleast(a, 3) for a in arys]
    return out[0] if len(out) == 1 else out


def ravel(x, /) -> Tensor:
    """The entries of x as a vector, in row-major order (a reshape). Shapes: (*s) -> (prod(s),).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.ravel(ad.Tensor(np.ones((2, 3)))).shape
        (6,)
    """
    return reshape(x, (-1,))

# ---------------------------------------------------------------- joining


def hstack(tup) -> Tensor:
    """Join along the second axis (the first for 1-D inputs), as ``np.hstack``: a concatenate.

    Shapes: (n_i,) -> (sum n_i,); (m, n_i, ...) -> (m, sum n_i, ...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.hstack([ad.Tensor(np.ones((2, 1))), ad.Tensor(np.zeros((2, 3)))]).shape
        (2, 4)
    """
    arrs = [_atleast(a, 1) for a in _items(tup, "hstack")]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1)


def vstack(tup) -> Tensor:
    """Join along the first axis after making inputs at least 2-D, as ``np.vstack``: a concatenate.

    Shapes: (n,) rows -> (k, n); (m_i, n, ...) -> (sum m_i, n, ...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.vstack([ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0])]).shape
        (2, 2)
    """
    return concatenate([_atleast(a, 2) for a in _items(tup, "vstack")], 0)


def dstack(tup) -> Tensor:
    """Join along the third axis after making inputs at least 3-D, as ``np.dstack``.

    Shapes: (m, n) each -> (m, n, k).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.dstack([ad.Tensor(np.ones((2, 3))), ad.Tensor(np.ones((2, 3)))]).shape
        (2, 3, 2)
    """
    return concatenate([_atleast(a, 3) for a in _items(tup, "dstack")], 2)


def column_stack(tup) -> Tensor:
    """1-D inputs as columns, 2-D inputs as they are, joined along the second axis (``np.column_stack``).

    Shapes: (m,) and (m, n_i) -> (m, k); 0-d inputs are (1, 1) columns.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.column_stack([ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0])]).value
        array([[1., 3.],
               [2., 4.]])
    """
    cols = []
    for a in _items(tup, "column_stack"):
        s = _shape(a)
        cols.append(reshape(a, s + (1,) if s else (1, 1)) if len(s) < 2 else a)
    return concatenate(cols, 1)


def append(arr, values, axis=None) -> Tensor:
    """``values`` appended to ``arr``, as ``np.append``: both flattened when ``axis`` is None.

    A list holding Tensors is stacked first (numpy would convert it).
    Shapes: axis None -> (arr.size + values.size,); else a concatenate along ``axis``.

    Example:
        >>> import autograd_dag as ad
        >>> ad.append(ad.Tensor([1.0, 2.0]), ad.Tensor([3.0])).value
        array([1., 2., 3.])
    """
    arr, values = numpy_operand(_array_like(arr)), numpy_operand(_array_like(values))
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)

# ------------------------------------------------------------------- diag


def _diag_indices(n_rows: int, n_cols: int, k: int):
    rows = np.arange(builtins.max(0, -k), n_rows)
    cols = rows + k
    keep = (cols >= 0) & (cols < n_cols)
    return rows[keep], cols[keep]


def diag(v, k: int = 0) -> Tensor:
    """The k-th diagonal of a matrix, or a matrix with a vector on its k-th diagonal (``np.diag``).

    2-D (m, n) -> the diagonal (d,), a getitem; 1-D (n,) -> (n + |k|, n + |k|)
    with zeros off the diagonal, an index_add (getitem's transpose).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.diag(ad.Tensor([[1.0, 2.0], [3.0, 4.0]])).value
        array([1., 4.])
        >>> ad.diag(ad.Tensor([1.0, 2.0]), 1).value
        array([[0., 1., 0.],
               [0., 0., 2.],
               [0., 0., 0.]])
    """
    s = _shape(v)
    k = int(k)
    if len(s) == 2:
        return getitem(v, _diag_indices(s[0], s[1], k))
    if len(s) == 1:
        n = s[0] + builtins.abs(k)
        return index_add(v, (n, n), _diag_indices(n, n, k))
    raise ShapeError(f"diag: Expect: a 1-D or 2-D operand. Actual: shape {fmt(s)}")

# ---------------------------------------------------------- kron, inner


def kron(a, b) -> Tensor:
    """Kronecker product, as ``np.kron``: blocks a[i] * b (a broadcast multiply and a reshape).

    Shapes: (a0, a1, ...), (b0, b1, ...) (padded with leading 1s to equal
    length) -> (a0*b0, a1*b1, ...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.kron(ad.Tensor([1.0, 2.0]), ad.Tensor([1.0, 10.0])).value
        array([ 1., 10.,  2., 20.])
    """
    a, b = numpy_operand(a), numpy_operand(b)   # (a Python list as numpy reads it: ints stay int64)
    sa, sb = _shape(a), _shape(b)
    nd = builtins.max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a2 = reshape(a, tuple(d for x in sa for d in (x, 1)))
    b2 = reshape(b, tuple(d for x in sb for d in (1, x)))
    return reshape(multiply(a2, b2), tuple(x * y for x, y in zip(sa, sb)))


def inner(a, b) -> Tensor:
    """Inner product over the last axes, as ``np.inner`` (a matmul; a multiply for a scalar).

    Shapes: (..., k), (..., k) -> a.shape[:-1] + b.shape[:-1].

    Example:
        >>> import autograd_dag as ad
        >>> float(ad.inner(ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0])).value)
        11.0
    """
    a, b = numpy_operand(a), numpy_operand(b)   # (a Python list as numpy reads it: ints stay int64)
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return multiply(a, b)
    if sa[-1] != sb[-1]:
        raise ShapeError(f"inner: Expect: equal last dimensions. Actual: {fmt(sa)} and {fmt(sb)}")
    k = sa[-1]
    # (Row counts, not -1: with k = 0 there is no row length to infer them from.)
    rows_a, rows_b = int(np.prod(sa[:-1], dtype=np.int64)), int(np.prod(sb[:-1], dtype=np.int64))
    prod = matmul(reshape(a, (rows_a, k)), transpose(reshape(b, (rows_b, k))))
    return reshape(prod, sa[:-1] + sb[:-1])

# ------------------------------------------------------------------ cross


def _moved_last(x, axis: int, name: str):
    s = _shape(x)
    ax = normalize_axis(name, axis, len(s))
    if ax == len(s) - 1:
        return x
    order = tuple(i for i in range(len(s)) if i != ax) + (ax,)
    return transpose(x, order)


def linalg_cross(x1, x2, *, axis: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``axis``, as ``np.linalg.cross`` (numpy 2).

    Unlike :func:`cross` (``np.cross``), 2-vectors are refused, as numpy refuses them.
    Shapes: (..., 3), (..., 3) -> (..., 3) with the batch axes broadcast.

    Example:
        >>> import autograd_dag as ad
        >>> ad.linalg.cross(ad.Tensor([1.0, 0.0, 0.0]), ad.Tensor([0.0, 1.0, 0.0])).value
        array([0., 0., 1.])
    """
    sa, sb = _shape(x1), _shape(x2)
    ax = axis if isinstance(axis, (int, np.integer)) else None
    na = sa[normalize_axis("cross", ax, len(sa))] if sa and ax is not None else None
    nb = sb[normalize_axis("cross", ax, len(sb))] if sb and ax is not None else None
    if na != 3 or nb != 3:
        raise ShapeError(f"linalg.cross: Expect: 3-dimensional vectors along axis {axis!r}. "
                         f"Actual: shapes {fmt(sa)} and {fmt(sb)}")
    return cross(x1, x2, axis=axis)


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None) -> Tensor:
    """Cross product of 3-vectors (or the z component for 2-vectors), as ``np.cross``.

    A composite of getitem, multiply, subtract and stack. ``axis`` overrides
    the three others. Shapes: (..., 3), (..., 3) -> (..., 3) with the batch
    axes broadcast; 2-vectors give (...).

    Example:
        >>> import autograd_dag as ad
        >>> ad.cross(ad.Tensor([1.0, 0.0, 0.0]), ad.Tensor([0.0, 1.0, 0.0])).value
        array([0., 0., 1.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _moved_last(a, axisa, "cross")
    b = _moved_last(b, axisb, "cross")
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ShapeError(f"cross: Expect: vectors of dimension 2 or 3 along the chosen axes. "
                         f"Actual: {na} and {nb}")

    def comp(x, i):
        return getitem(x, (Ellipsis, i))

    a0, a1, b0, b1 = comp(a, 0), comp(a, 1), comp(b, 0), comp(b, 1)
    z = subtract(multiply(a0, b1), multiply(a1, b0))
    if na == 2 and nb == 2:
        return z
    if na == 3 and nb == 3:
        a2, b2 = comp(a, 2), comp(b, 2)
        x = subtract(multiply(a1, b2), multiply(a2, b1))
        y = subtract(multiply(a2, b0), multiply(a0, b2))
    elif na == 2:   # a's z component is 0
        b2 = comp(b, 2)
        x, y = multiply(a1, b2), multiply(multiply(a0, b2), -1.0)
    else:           # b's z component is 0
        a2 = comp(a, 2)
        x, y = multiply(multiply(a2, b1), -1.0), multiply(a2, b0)
    shape = np.broadcast_shapes(_shape(x), _shape(y), _shape(z))
    out = stack([broadcast_to(c, shape) for c in (x, y, z)], -1)
    nd = len(shape) + 1
    cax = normalize_axis("cross", axisc, nd)
    if cax != nd - 1:
        order = list(range(nd - 1))
        order.insert(cax, nd - 1)
        out = transpose(out, tuple(order))
    return out

# ------------------------------------------------------ flips and rot90


def _flip(x, axis: int) -> Tensor:
    """x reversed along one axis (a getitem with a step of -1). Shapes: (*s) -> (*s)."""
    nd = len(_shape(x))
    ax = normalize_axis("flip", axis, nd)
    return getitem(x, (slice(None),) * ax + (slice(None, None, -1),))


def flipud(m) -> Tensor:
    """Rows in reverse order (axis 0), as ``np.flipud``. Shapes: (*s) -> (*s), at least 1-D.

    Example:
        >>> import autograd_dag as ad
        >>> ad.flipud(ad.Tensor([1.0, 2.0, 3.0])).value
        array([3., 2., 1.])
    """
    if len(_shape(m)) < 1:
        raise ShapeError("flipud: Expect: an operand with at least 1 dimension. Actual: shape ()")
    return _flip(m, 0)


def fliplr(m) -> Tensor:
    """Columns in reverse order (axis 1), as ``np.fliplr``. Shapes: (*s) -> (*s), at least 2-D.

    Example:
        >>> import autograd_dag as ad
        >>> ad.fliplr(ad.Tensor([[1.0, 2.0]])).value
        array([[2., 1.]])
    """
    if len(_shape(m)) < 2:
        raise ShapeError(f"fliplr: Expect: an operand with at least 2 dimensions. Actual: shape {fmt(_shape(m))}")
    return _flip(m, 1)


def rot90(m, k: int = 1, axes=(0, 1)) -> Tensor:
    """Rotate by 90° k times in the plane of ``axes`` (first towards second), as ``np.rot90``.

    A composite of flips (getitem) and a transpose. Shapes: (*s) -> s with the
    two axes exchanged for odd k.

    Example:
        >>> import autograd_dag as ad
        >>> ad.rot90(ad.Tensor([[1.0, 2.0], [3.0, 4.0]])).value
        array([[2., 4.],
               [1., 3.]])
    """
    nd = len(_shape(m))
    axes = tuple(axes)
    if len(axes) != 2 or nd < 2:
        raise ShapeError(f"rot90: Expect: two axes of an operand with at least 2 dimensions. "
                         f"Actual: axes={axes!r}, shape {fmt(_shape(m))}")
    a0, a1 = normalize_axis("rot90", axes[0], nd), normalize_axis("rot90", axes[1], nd)
    if a0 == a1:
        raise ShapeError(f"rot90: Expect: two different axes. Actual: axes={axes!r}")
    k = int(k) % 4
    if k == 0:
        return getitem(m, (Ellipsis,))
    if k == 2:
        return _flip(_flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(_flip(m, a1), tuple(perm))
    return _flip(transpose(m, tuple(perm)), a1)

# ---------------------------------------------------- moveaxis, rollaxis


def moveaxis(a, source, destination) -> Tensor:
    """Axes moved to new positions, the others keeping their order (a transpose), as ``np.moveaxis``.

    ``source`` and ``destination``: ints or equally long sequences of ints.
    Shapes: a permutation of a's shape.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.moveaxis(ad.Tensor(np.zeros((2, 3, 4))), 0, -1).shape
        (3, 4, 2)
    """
    nd = len(_shape(a))
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise ShapeError(f"moveaxis: Expect: as many destination axes as source axes. "
                         f"Actual: source={source!r}, destination={destination!r}")
    src = [normalize_axis("moveaxis", s, nd) for s in src]
    dst = [normalize_axis("moveaxis", d, nd) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError(f"moveaxis: Expect: no repeated axis. Actual: source={source!r}, "
                         f"destination={destination!r}")
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, tuple(order))


def rollaxis(a, axis: int, start: int = 0) -> Tensor:
    """Axis ``axis`` moved to just before position ``start`` (a transpose), as ``np.rollaxis``.

    Shapes: a permutation of a's shape.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.rollaxis(ad.Tensor(np.zeros((2, 3, 4))), 2).shape
        (4, 2, 3)
    """
    nd = len(_shape(a))
    axis = normalize_axis("rollaxis", axis, nd)
    start = int(start)
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise ShapeError(f"rollaxis: Expect: start in [{-nd}, {nd}]. Actual: {start}")
    if axis < start:
        start -= 1
    order = [i for i in range(nd) if i != axis]
    order.insert(start, axis)
    return transpose(a, tuple(order))

# ------------------------------------------------------------- splitting


def hsplit(x, /, indices_or_sections) -> list:
    """x cut along its second axis (the first for 1-D), as ``np.hsplit``; an int must divide the length.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> [p.shape for p in ad.hsplit(ad.Tensor(np.ones((2, 4))), 2)]
        [(2, 2), (2, 2)]
    """
    return split(x, indices_or_sections, 0 if len(_shape(x)) == 1 else 1)


def vsplit(x, /, indices_or_sections) -> list:
    """x cut along its first axis (at least 2-D), as ``np.vsplit``; an int must divide the length.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> [p.shape for p in ad.vsplit(ad.Tensor(np.ones((4, 2))), [1])]
        [(1, 2), (3, 2)]
    """
    if len(_shape(x)) < 2:
        raise ShapeError(f"vsplit: Expect: at least 2 dimensions. Actual: shape {fmt(_shape(x))}")
    return split(x, indices_or_sections, 0)


def dsplit(x, /, indices_or_sections) -> list:
    """x cut along its third axis (at least 3-D), as ``np.dsplit``; an int must divide the length.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> [p.shape for p in ad.dsplit(ad.Tensor(np.ones((1, 1, 4))), 2)]
        [(1, 1, 2), (1, 1, 2)]
    """
    if len(_shape(x)) < 3:
        raise ShapeError(f"dsplit: Expect: at least 3 dimensions. Actual: shape {fmt(_shape(x))}")
    return split(x, indices_or_sections, 2)

# --------------------------------------------------------------- gradient


def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """Finite-difference estimate of the derivative of sampled values, as ``np.gradient``.

    Central differences inside, one-sided differences of order ``edge_order``
    (1 or 2) at the ends; spacings are scalars (one for all axes or one per
    axis; coordinate arrays are not supported). A composite of getitem,
    subtract, divide and concatenate, so it is differentiable in ``f``.
    Shapes: f (*s) -> one array of shape s per axis (a tuple for several).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.primitives.arrangement.gradient(ad.Tensor([0.0, 1.0, 4.0, 9.0])).value
        array([1., 2., 4., 5.])
    """
    shape = _shape(f)
    nd = len(shape)
    if axis is None:
        axes = list(range(nd))
    elif isinstance(axis, (int, np.integer)):
        axes = [normalize_axis("gradient", axis, nd)]
    else:
        axes = [normalize_axis("gradient", a, nd) for a in axis]
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise ShapeError(f"gradient: Expect: no spacing, one, or one per axis ({len(axes)}). "
                         f"Actual: {len(varargs)}")
    for h in spacing:
        if np.ndim(parameter(h, "gradient's spacing")) != 0:
            raise ShapeError("gradient: Expect: scalar spacings (coordinate arrays are not supported). "
                             "Actual: an array")
    if edge_order not in (1, 2):
        raise ShapeError(f"gradient: Expect: edge_order 1 or 2. Actual: {edge_order!r}")
    if (f.dtype if isinstance(f, (Tensor, np.ndarray)) else np.asarray(f).dtype).kind in "iu":
        # numpy differences integer samples in float64: in their own type they wrap
        # (uint8 100 - 200 is 156).
        f = astype(f, np.float64)
    outs = []
    for ax, h in zip(axes, spacing):
        n = shape[ax]
        if n < edge_order + 1:
            raise ShapeError(f"gradient: Expect: at least {edge_order + 1} samples along axis {ax} for "
                             f"edge_order={edge_order}. Actual: shape {fmt(shape)}")
        h = float(parameter(h, "gradient's spacing"))
        lead = (slice(None),) * ax

        def point(i, lead=lead):
            return getitem(f, lead + (slice(i, i + 1 if i != -1 else None),))

        parts = []
        if edge_order == 1:
            parts.append(multiply(subtract(point(1), point(0)), 1.0 / h))
        else:
            first = subtract(multiply(point(1), 4.0), add(multiply(point(0), 3.0), point(2)))
            parts.append(multiply(first, 0.5 / h))
        if n > 2:
            parts.append(multiply(subtract(getitem(f, lead + (slice(2, None),)),
                                           getitem(f, lead + (slice(None, -2),))), 0.5 / h))
        if edge_order == 1:
            parts.append(multiply(subtract(point(-1), point(-2)), 1.0 / h))
        else:
            last = subtract(add(multiply(point(-1), 3.0), point(-3)), multiply(point(-2), 4.0))
            parts.append(multiply(last, 0.5 / h))
        outs.append(concatenate(parts, ax))
    return outs[0] if len(outs) == 1 else tuple(outs)

# ------------------------------------------------------ select, partition


def select(condlist, choicelist, default=0) -> Tensor:
    """The choice of the first true condition at each position, else ``default`` (``np.select``).

    Nested ``where``s (conditions get no derivative). Shapes: conditions and
    choices broadcast together.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> x = ad.Tensor([-2.0, 0.5, 3.0])
        >>> ad.select([x.value < 0, x.value > 1], [-x, x * 10], default=x).value
        array([ 2. ,  0.5, 30. ])
    """
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ShapeError(f"select: Expect: as many conditions as choices. Actual: {len(condlist)} "
                         f"conditions, {len(choicelist)} choices")
    if not condlist:
        raise ShapeError("select: Expect: at least one condition. Actual: none")
    result = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        # A Tensor condition stays an operand of where (a jit/vmap input, not frozen numbers).
        c = cond if isinstance(cond, Tensor) else np.asarray(cond)
        if c.dtype != np.bool_:
            raise ShapeError(f"select: Expect: boolean conditions. Actual: dtype {c.dtype}")
        result = where(c, choice, result)
    return result


def _argpartition(values: np.ndarray, kth, axis: int) -> np.ndarray:
    try:
        return np.argpartition(values, kth, axis=axis)
    except (ValueError, TypeError) as exc:
        raise ShapeError(f"partition: Expect: kth within the axis of length {values.shape[axis]}. "
                         f"Actual: kth={kth!r} ({exc})") from None


def partition(a, kth, axis=-1) -> Tensor:
    """Rearranged so that the kth entry is where sorting would put it, smaller ones before (``np.partition``).

    The arrangement is chosen on the values (``np.argpartition``) and applied
    with a getitem, so the derivative follows the entries. ``axis=None``
    flattens first. Shapes: (*s) -> (*s).

    Example:
        >>> import autograd_dag as ad
        >>> float(ad.partition(ad.Tensor([3.0, 1.0, 2.0]), 1).value[1])
        2.0
    """
    if axis is None:
        a, axis = ravel(a), 0
    values = a.value if isinstance(a, Tensor) else np.asarray(a)
    ax = normalize_axis("partition", axis, values.ndim)
    if traced(a):
        # Inside jit/trace/vmap an arrangement chosen on these numbers would be this call's for
        # every call. Sorted is a partition too (numpy leaves the order on each side of kth
        # unspecified), and a sort follows the data.
        _argpartition(np.zeros(values.shape[ax]), kth, 0)  # kth checked as numpy checks it
        return sort(a, axis=ax)
    order = _argpartition(values, kth, ax)
    index = tuple(order if i == ax else
                  np.arange(d).reshape((1,) * i + (d,) + (1,) * (values.ndim - i - 1))
                  for i, d in enumerate(values.shape))
    return getitem(a, index)
