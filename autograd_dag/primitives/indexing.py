"""Indexing primitives: getitem, concatenate, take, take_along_axis (gathers), one_hot, and their transposes.

What goes here: linear primitives that pick, place or join entries by index,
each declared by its transpose alone (``defprim(..., transpose=...)``: the JVP
is the primitive on the tangent, the VJP the transpose on the cotangent; no
rule reads a value, only the indices). Each gather has a scatter-add partner
and the two declare each other: ``getitem`` ↔ ``index_add``, ``take`` ↔
``take_add`` and ``take_along_axis`` ↔ ``put_along_axis_add``. Because the partner is itself a primitive, the gradient of an
indexing operation is a recorded program that can be differentiated again.
Joining (``concatenate``, ``stack``, ``unstack``) lives here too: its
transpose is slicing with ``getitem``, as ``sum`` lives beside its transpose
``broadcast_to`` in ``structure`` (which sits below this module, so it cannot
hold either). The index checks with no derivative (``checked_indices``,
``checked_mask``, ``one_hot``) sit here as well.

Indices are static parameters (``getitem``'s index) or integer inputs that get
no derivative (``take``'s and ``one_hot``'s ``indices``), so a program can take
token ids as an input.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..core import Tensor, _contains_tensor, apply, concrete
from ..errors import ShapeError
from .batch import materialize, move_batch_axis
from .registry import defprim
from .structure import unary_batch
from .shapes import fmt, normalize_axis
from .structure import broadcast_to, identity, reshape, transpose

# ----------------------------------------------------------------- getitem


def _index_entry(item) -> tuple:
    """One user index entry as a tuple of canonical entries.

    A boolean array becomes its ``nonzero()`` integer arrays (numpy defines
    ``x[mask]`` as exactly that), so ``np.add.at`` and every rule only ever
    see ints, slices, None, Ellipsis and integer arrays.
    """
    if isinstance(item, Tensor):
        # The index is a parameter, not an operand: inside jit/trace/vmap its
        # numbers would be frozen at the first call (or example); refused there.
        item = concrete(item, "an index x[i] (for a traced integer index use ad.take(x, i, axis))")
    if item is None or item is Ellipsis:
        return (item,)
    if isinstance(item, slice):
        return (slice(*(None if v is None else _int_or_raise(v) for v in
                        (item.start, item.stop, item.step))),)
    if isinstance(item, (bool, np.bool_)):
        raise ShapeError("getitem: Expect: int, slice, None, Ellipsis, or an integer or "
                         f"boolean array. Actual: the scalar boolean {item!r}")
    if isinstance(item, (int, np.integer)):
        return (int(item),)
    if isinstance(item, (list, np.ndarray)):
        arr = np.asarray(item)
        if arr.dtype == np.bool_:
            if arr.ndim == 0:
                raise ShapeError("getitem: Expect: a boolean array with at least one axis. "
                                 "Actual: a 0-d boolean array")
            return tuple(arr.nonzero())
        if arr.size == 0 and arr.dtype.kind == "f":
            # ``x[[]]`` means "no elements", as in numpy.
            arr = arr.astype(np.intp)
        if arr.dtype.kind not in "iu":
            raise ShapeError("getitem: Expect: an integer or boolean array index. "
                             f"Actual: an array of dtype {arr.dtype}")
        if arr.ndim == 0:
            return (int(arr),)
        # A copy, as a boolean mask's nonzero() is: the node keeps the index it computed with,
        # and a buffer reused for the next index (idx[:] = ...) must not move this node's
        # gradient (or its entry in a jit program) to the new positions.
        return (np.array(arr, dtype=np.intp),)
    raise ShapeError("getitem: Expect: int, slice, None, Ellipsis, or an integer or boolean "
                     f"array. Actual: {type(item).__name__} {item!r}")


def _int_or_raise(v) -> int:
    if isinstance(v, Tensor):
        v = concrete(v, "a slice bound x[i:j]")
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ShapeError(f"getitem: Expect: slice bounds that are integers or None. Actual: {v!r}")
    return int(v)


def normalize_index(index) -> tuple:
    """``index`` as a canonical tuple of ints, slices, None, Ellipsis and intp arrays."""
    if not isinstance(index, tuple):
        index = (index,)
    out: list = []
    for item in index:
        out.extend(_index_entry(item))
    return tuple(out)


def _has_array(index: tuple) -> bool:
    for item in index:
        if isinstance(item, np.ndarray):
            return True
    return False


def _indexed_shape(name: str, shape, dtype, index) -> tuple[int, ...]:
    """Shape of ``zeros(shape)[index]``, or a ShapeError saying why the index does not fit."""
    # A zero-stride view costs nothing for basic indexing; advanced indexing
    # allocates only the (usually small) result.
    probe = np.broadcast_to(np.zeros((), dtype), tuple(shape))
    try:
        return probe[index].shape
    except (IndexError, ValueError, TypeError) as exc:
        raise ShapeError(f"{name}: Expect: an index that fits an operand of shape {fmt(shape)} "
                         f"(each int or integer-array entry in [-d, d) for its axis d, at most "
                         f"{len(shape)} indexed axes). Actual: {_show_index(index)}: {exc}") from None


def _show_index(index) -> str:
    parts = []
    for item in index:
        if isinstance(item, np.ndarray):
            parts.append(np.array2string(item, threshold=8))
        elif item is Ellipsis:
            parts.append("...")
        elif isinstance(item, slice):
            parts.append(":".join("" if v is None else str(v) for v in (item.start, item.stop, item.step))
                         .rstrip(":") or ":")
        else:
            parts.append(repr(item))
    return "[" + ", ".join(parts) + "]"


def _getitem_rule(x, *, index):
    return _indexed_shape("getitem", x.shape, x.dtype, index), x.dtype


def _batch_axis_after_indexing(index: tuple) -> int:
    """Where ``x[(slice(None),) + index]`` puts the batch axis of ``x``.

    At the front, unless the integer-array entries of ``index`` are separated
    by a slice (ints count with them then): numpy then moves their broadcast
    axes to the front, and the batch axis follows them.
    """
    if not _has_array(index):
        return 0
    advanced = [i for i, item in enumerate(index) if isinstance(item, (np.ndarray, int, np.integer))]
    if advanced == list(range(advanced[0], advanced[-1] + 1)):
        return 0
    return len(np.broadcast_shapes(*[np.shape(index[i]) for i in advanced]))


def _getitem_batch(prim, args, batched, *, index):
    out = apply(prim, args[0], index=(slice(None),) + index)
    return move_batch_axis(out, _batch_axis_after_indexing(index))


def _index_add_batch(prim, args, batched, *, shape, index):
    ct = args[0]
    axis = _batch_axis_after_indexing(index)
    if axis:  # the cotangent must be laid out as the batched getitem's result
        ct = transpose(ct, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, ct.ndim)))
    return apply(prim, ct, shape=(args[0].shape[0],) + tuple(shape), index=(slice(None),) + index)


def _add_at(buffer, index, values) -> None:
    """``buffer[index] += values``, with repeated integer-array entries accumulating."""
    if _has_array(index):
        np.add.at(buffer, index, values)  # only ``add.at`` accumulates repeats
    else:
        buffer[index] += values


GETITEM = defprim(
    "getitem", lambda x, *, index: np.asarray(x[index]),
    # One rule for all inputs, not per input: the recorded sweep's slab path
    # (autodiff._slab_vjp) stands in for the whole VJP of a getitem.
    transpose=lambda ct, x, *, index: (apply(INDEX_ADD, ct, shape=tuple(x.shape), index=index),),
    shape=_getitem_rule, batch=_getitem_batch,
    vjp_into=lambda buffer, ct, out, x, *, index: _add_at(buffer, index, ct))


def getitem(x, index) -> Tensor:
    """``x[index]`` with numpy semantics: ints, slices, None, ``...``, integer and boolean arrays.

    The index is static (a Tensor index is read for its value and gets no
    derivative). Shapes: as numpy. Example:
    ``ad.getitem(ad.Tensor(np.arange(6.).reshape(2, 3)), (slice(None), [0, 0])).shape == (2, 2)``.
    """
    return apply(GETITEM, x, index=normalize_index(index))

# --------------------------------------------------------------- index_add


def _index_add_impl(ct, *, shape, index):
    # Both paths below broadcast ct, which would hide a wrongly shaped input.
    _index_add_rule(ct, shape=shape, index=index)
    out = np.zeros(shape, dtype=ct.dtype)
    _add_at(out, index, ct)
    return out


def _index_add_rule(ct, *, shape, index):
    expect = _indexed_shape("index_add", shape, ct.dtype, index)
    if tuple(ct.shape) != expect:
        raise ShapeError(f"index_add: Expect: values of shape {fmt(expect)} (the shape of a "
                         f"{fmt(shape)} operand indexed by {_show_index(index)}). "
                         f"Actual: {fmt(ct.shape)}")
    return tuple(shape), ct.dtype


INDEX_ADD = defprim(
    "index_add", _index_add_impl,
    transpose=(lambda c, ct, *, shape, index: apply(GETITEM, c, index=index),),
    shape=_index_add_rule, batch=_index_add_batch)


def index_add(values, shape, index) -> Tensor:
    """Zeros of ``shape`` with ``values`` added at ``index`` (repeats accumulate): the transpose of getitem.

    Shapes: values of shape ``zeros(shape)[index].shape`` -> ``shape``.
    Example: ``ad.index_add(ad.Tensor([1.0, 2.0]), (3,), [0, 0]).value`` is ``[3., 0., 0.]``.
    """
    return apply(INDEX_ADD, values, shape=tuple(int(d) for d in shape), index=normalize_index(index))


def slab(shape: tuple, index: tuple) -> tuple | None:
    """``(axis, start, stop, kept)`` if ``x[index]`` for x of ``shape`` is one run of one axis, else None.

    The run is ``[start, stop)`` along ``axis`` with every other axis whole:
    ``x[:, 2:5]`` (kept: a slice keeps the axis) or ``x[:, 3]`` (not kept: an
    int drops it). The cotangents of adjacent runs join into one
    ``concatenate`` (:func:`join_slabs`).
    """
    kinds = [type(item) for item in index]
    if np.ndarray in kinds or type(None) in kinds:
        return None
    if type(Ellipsis) in kinds:
        at = kinds.index(type(Ellipsis))
        index = index[:at] + (slice(None),) * (len(shape) - len(index) + 1) + index[at + 1:]
    found = None
    for axis, item in enumerate(index):
        d = shape[axis]
        if type(item) is slice:
            start, stop, step = item.indices(d)
            if (start, stop, step) == (0, d, 1):
                continue
            if step != 1 or stop <= start or found is not None:
                return None
            found = (axis, start, stop, True)
        elif found is None:  # an int
            start = item + d if item < 0 else item
            found = (axis, start, start + 1, False)
        else:  # a second indexed axis
            return None
    return found


def join_slabs(pieces: list) -> list:
    """Slab cotangents ``(ct, shape, slab)`` -> Tensors with the same sum: adjacent runs joined by ``concatenate``.

    ``ct`` is the cotangent of ``x[index]`` for an x of ``shape`` with
    ``slab(shape, index)``. The cotangent of an array read in pieces (``x[:, t]``
    for every step t of a sequence) is then one array joined from the pieces'
    cotangents, not one array of zeros per piece added up (O(L²) for L steps).
    A piece adjacent to no other is its ``index_add``, as the getitem's VJP.
    """
    groups: dict = {}
    for ct, shape, (axis, start, stop, kept) in pieces:
        groups.setdefault((shape, axis, ct.dtype), []).append((start, stop, kept, ct))
    joined = []
    for (shape, axis, _), group in groups.items():
        group.sort(key=lambda piece: piece[0])
        run = [group[0]]
        for piece in group[1:] + [None]:
            if piece is not None and piece[0] == run[-1][1]:
                run.append(piece)
                continue
            start, stop = run[0][0], run[-1][1]
            lead = (slice(None),) * axis
            if len(run) == 1:
                _, _, kept, ct = run[0]
                joined.append(index_add(ct, shape, lead + ((slice(start, stop),) if kept else (start,))))
            else:
                whole = concatenate([ct if kept else reshape(ct, shape[:axis] + (1,) + shape[axis + 1:])
                                     for _, _, kept, ct in run], axis)
                joined.append(whole if (start, stop) == (0, shape[axis])
                              else index_add(whole, shape, lead + (slice(start, stop),)))
            run = [piece]
    return joined


def _getitem_piece(ct, out, x, *, index):
    """getitem's ``vjp_piece``: an index reading one run of one axis keeps its cotangent for :func:`join_slabs`."""
    at = slab(x.shape, index)
    return None if at is None else (join_slabs, (ct, x.shape, at))


GETITEM.vjp_piece = _getitem_piece

# ------------------------------------------------------------- concatenate


def _concatenate_rule(*xs, axis):
    first = xs[0]
    for i, x in enumerate(xs):
        same = x.ndim == first.ndim and all(
            d == e for k, (d, e) in enumerate(zip(x.shape, first.shape)) if k != axis)
        if not same:
            raise ShapeError(f"concatenate: Expect: operands with equal shapes except on axis {axis}. "
                             f"Actual: operand 0 has shape {fmt(first.shape)}, operand {i} has "
                             f"shape {fmt(x.shape)}")
    shape = list(first.shape)
    shape[axis] = builtins.sum(x.shape[axis] for x in xs)
    return tuple(shape), np.result_type(*[x.dtype for x in xs])


def _concatenate_transpose(ct, *xs, axis):
    cts = []
    start = 0
    lead = (slice(None),) * axis
    for x in xs:
        stop = start + x.shape[axis]
        cts.append(getitem(ct, lead + (slice(start, stop),)))
        start = stop
    return tuple(cts)


def _concatenate_batch(prim, args, batched, *, axis):
    size = next(a.shape[0] for a, b in zip(args, batched) if b)
    return apply(prim, *[a if b else materialize(a, size) for a, b in zip(args, batched)], axis=axis + 1)


CONCATENATE = defprim(
    "concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
    transpose=_concatenate_transpose, shape=_concatenate_rule, batch=_concatenate_batch)


def _ndim_of(x) -> int:
    return x.ndim if isinstance(x, (Tensor, np.ndarray)) else np.ndim(x)


def numpy_operand(x):
    """``x`` as numpy's joining functions read it: a Python number or list (of no Tensor) through
    ``np.asarray``, so that integers and booleans keep numpy's dtype (``np.concatenate([int_t, [5]])``
    is int64; as a Tensor the list became float64). Anything else is returned as it is."""
    if isinstance(x, (bool, int, float)) or (isinstance(x, (list, tuple)) and not _contains_tensor(x)):
        return np.asarray(x)
    return x


def concatenate(xs, axis: int | None = 0) -> Tensor:
    """Join tensors along an existing axis, as ``np.concatenate``.

    ``axis=None`` flattens every operand first (any shapes, 0-d too), as numpy.
    Shapes: (..., a_i, ...) for each i -> (..., sum a_i, ...); with axis=None,
    (*s_i) for each i -> (sum of the sizes,).
    Example: ``ad.concatenate([ad.Tensor(np.ones((2, 3))), ad.Tensor(np.zeros((1, 3)))]).shape == (3, 3)``;
    ``ad.concatenate([ad.Tensor(np.ones((2, 2))), ad.Tensor(5.0)], axis=None).shape == (5,)``.
    """
    xs = [numpy_operand(x) for x in xs]
    if not xs:
        raise ShapeError("concatenate: Expect: at least one operand. Actual: none")
    if axis is None:
        xs, axis = [reshape(x, (-1,)) for x in xs], 0
    ndim = _ndim_of(xs[0])
    if ndim == 0:
        raise ShapeError("concatenate: Expect: operands with at least one axis. Actual: a 0-d operand")
    return apply(CONCATENATE, *xs, axis=normalize_axis("concatenate", axis, ndim))


def stack(xs, /, axis: int = 0) -> Tensor:
    """Join equally shaped tensors along a new axis, as ``np.stack``.

    Recorded as one reshape per operand and a concatenate, so it needs no rules
    of its own. Shapes: k operands of (*s) -> s with k inserted at ``axis``.
    Example: ``ad.stack([ad.Tensor(np.ones(3)), ad.Tensor(np.zeros(3))], axis=1).shape == (3, 2)``.
    """
    xs = [numpy_operand(x) for x in xs]
    if not xs:
        raise ShapeError("stack: Expect: at least one operand. Actual: none")
    shapes = [tuple(np.shape(x.value if isinstance(x, Tensor) else x)) for x in xs]
    for i, s in enumerate(shapes):
        if s != shapes[0]:
            raise ShapeError(f"stack: Expect: operands of equal shape. Actual: operand 0 has shape "
                             f"{fmt(shapes[0])}, operand {i} has shape {fmt(s)}")
    ax = normalize_axis("stack", axis, len(shapes[0]) + 1)
    new_shape = shapes[0][:ax] + (1,) + shapes[0][ax:]
    return concatenate([reshape(x, new_shape) for x in xs], ax)

def unstack(x, *, axis: int = 0) -> list:
    """Split ``x`` into its slices along ``axis``, as a list: the inverse of :func:`stack`.

    ``unstack(x, axis)[i]`` is ``x[(:,) * axis + (i,)]``, recorded with ``getitem``
    (a view, no copy). The n slices' cotangents cost O(size of x) in all, not
    O(n · size of x): the eager ``backward()`` adds each into one buffer, and a
    recorded sweep (gradient programs, higher derivatives) joins them into one
    ``concatenate`` (:func:`join_slabs`).
    Shapes: (*a, n, *b) -> n Tensors of shape (*a, *b).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> x = ad.Tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        >>> rows = ad.unstack(x, axis=1)
        >>> [r.value.tolist() for r in rows]
        [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
        >>> ad.stack(rows, axis=1).shape
        (2, 3)
    """
    shape = tuple(np.shape(x.value if isinstance(x, Tensor) else x))
    if not shape:
        raise ShapeError("unstack: Expect: an operand with at least one axis. Actual: a 0-d operand")
    lead = (slice(None),) * normalize_axis("unstack", axis, len(shape))
    return [getitem(x, lead + (i,)) for i in range(shape[len(lead)])]

# -------------------------------------------------------- take / take_add


def _check_indices(name: str, indices: np.ndarray, size: int, what: str, allow_negative: bool) -> None:
    """Raise ShapeError naming the first bad index; indices are data, so this runs every time."""
    if indices.dtype.kind not in "iu":
        raise ShapeError(f"{name}: Expect: integer indices. Actual: dtype {indices.dtype}")
    if indices.size == 0:
        return
    low = -size if allow_negative else 0
    # (the reductions indices.min() and .max() run, without their Python wrappers: every take asks)
    lo, hi = np.minimum.reduce(indices, axis=None), np.maximum.reduce(indices, axis=None)
    if lo < low or hi >= size:
        bad = int(hi) if hi >= size else int(lo)
        raise ShapeError(f"{name}: index {bad} is out of range for {what}. "
                         f"Expect: indices in [{low}, {size}). Actual: {bad} "
                         f"(indices range over [{int(lo)}, {int(hi)}])")


def _take_impl(table, indices, *, axis):
    _check_indices("take", indices, table.shape[axis],
                   f"a table of size {table.shape[axis]} (axis {axis} of shape {fmt(table.shape)})", True)
    return table.take(indices, axis=axis) if type(table) is np.ndarray else np.take(table, indices, axis=axis)


def _take_rule(table, indices, *, axis):
    if indices.dtype.kind not in "iu":
        raise ShapeError(f"take: Expect: integer indices. Actual: dtype {indices.dtype}")
    if not 0 <= axis < table.ndim:
        raise ShapeError(f"take: Expect: axis in [0, {table.ndim}) for a table of shape "
                         f"{fmt(table.shape)}. Actual: {axis}")
    return table.shape[:axis] + tuple(indices.shape) + table.shape[axis + 1:], table.dtype


def _take_batch(prim, args, batched, *, axis):
    table, indices = args
    if batched[0] and batched[1]:
        return NotImplemented
    if batched[0]:
        return apply(prim, table, indices, axis=axis + 1)
    # Batched indices: their leading axis lands where the table's axis was.
    return move_batch_axis(apply(prim, table, indices, axis=axis), axis)


def _take_add_batch(prim, args, batched, *, size, axis):
    if batched[1]:
        return NotImplemented
    return apply(prim, *args, size=size, axis=axis + 1)


TAKE = defprim(
    "take", _take_impl,
    transpose=(lambda ct, table, indices, *, axis: apply(
        TAKE_ADD, ct, indices, size=table.shape[axis], axis=axis), None),
    shape=_take_rule, nondiff=(1,), batch=_take_batch,
    vjp_into=lambda buffer, ct, out, table, indices, *, axis: np.add.at(
        buffer, (slice(None),) * axis + (indices,), ct))


def take(table, /, indices, axis: int = 0) -> Tensor:
    """Gather the entries ``indices`` of ``table`` along ``axis`` (an embedding lookup).

    ``indices`` is an integer input of the program (no derivative); negative
    indices count from the end as in numpy, anything outside raises ShapeError.
    Shapes: table (*a, n, *b), indices (*i) -> (*a, *i, *b).
    Example: ``ad.take(ad.Tensor(np.eye(4)), np.array([[1, 3]])).shape == (1, 2, 4)``.
    """
    if not isinstance(indices, Tensor):
        # A list of ints would otherwise be lifted to float64.
        indices = np.asarray(indices)
    ndim = _ndim_of(table)
    if ndim == 0:
        raise ShapeError("take: Expect: a table with at least one axis. Actual: a 0-d table")
    return apply(TAKE, table, indices, axis=normalize_axis("take", axis, ndim))


def _take_add_impl(ct, indices, *, size, axis):
    shape = ct.shape[:axis] + (size,) + ct.shape[axis + indices.ndim:]
    _check_indices("take_add", indices, size,
                   f"a table of size {size} (axis {axis} of shape {fmt(shape)})", True)
    out = np.zeros(shape, dtype=ct.dtype)
    if axis or indices.size == 0:
        # add.at accumulates repeated ids (a token used twice gets both gradients).
        np.add.at(out, (slice(None),) * axis + (indices,), ct)
        return out
    # Along the first axis (an embedding's gradient): each id's rows summed in the order they occur.
    ids = indices.reshape(-1)
    ids = np.where(ids < 0, ids + size, ids)
    rows = ct.reshape((ids.size,) + shape[1:])
    order = np.argsort(ids, kind="stable")
    ids_sorted = ids[order]
    first = np.empty(ids.size, bool)
    first[0] = True
    np.not_equal(ids_sorted[1:], ids_sorted[:-1], out=first[1:])
    # Each row's rank among the rows of its id (0 for an id's first occurrence, in order of occurrence).
    positions = np.arange(ids.size)
    rank = positions - np.maximum.accumulate(np.where(first, positions, 0))
    # Round r adds every id's (r+1)-th row: the ids of one round are distinct, so a fancy-index update
    # is exact, and each id's rows are added one after another in order of occurrence, as reduceat adds
    # them (the same sums, bit for bit). reduceat over the rows of a (1024, 128) array into 256 ids took
    # 0.52 ms (float32), these ~12 rounds 0.29 ms. An id repeated more than _TAKE_ADD_ROUNDS times (a
    # space in a text) has its remaining rows summed by one reduceat, then added: the same sum
    # associated differently, within rounding.
    rounds = min(int(rank.max()) + 1, _TAKE_ADD_ROUNDS)
    by_rank = np.empty(ids.size, np.intp)
    by_rank[order] = rank
    for r in range(rounds):
        picked = np.flatnonzero(by_rank == r)
        if r == 0:
            out[ids[picked]] = rows[picked]
        else:
            out[ids[picked]] += rows[picked]
    rest = order[rank >= rounds]  # (sorted by id, then by occurrence)
    if rest.size:
        rest_ids = ids[rest]
        starts = np.flatnonzero(np.concatenate(([True], rest_ids[1:] != rest_ids[:-1])))
        out[rest_ids[starts]] += np.add.reduceat(rows[rest], starts, axis=0)
    return out


# The repeats of one id that take_add adds round by round (see _take_add_impl): a round costs ~20 µs
# on (1024, 128) float32 rows; the rest of an id's rows go through one reduceat.
_TAKE_ADD_ROUNDS = 16


def _take_add_rule(ct, indices, *, size, axis):
    if indices.dtype.kind not in "iu":
        raise ShapeError(f"take_add: Expect: integer indices. Actual: dtype {indices.dtype}")
    got = tuple(ct.shape[axis:axis + indices.ndim])
    if ct.ndim < axis + indices.ndim or got != tuple(indices.shape):
        raise ShapeError(f"take_add: Expect: values whose axes {axis}..{axis + indices.ndim - 1} "
                         f"have the indices' shape {fmt(indices.shape)}. Actual: values of shape "
                         f"{fmt(ct.shape)}")
    return ct.shape[:axis] + (size,) + ct.shape[axis + indices.ndim:], ct.dtype


TAKE_ADD = defprim(
    "take_add", _take_add_impl,
    transpose=(lambda c, ct, indices, *, size, axis: apply(TAKE, c, indices, axis=axis), None),
    shape=_take_add_rule, nondiff=(1,), batch=_take_add_batch)


def take_add(values, indices, size: int, axis: int = 0) -> Tensor:
    """Zeros with ``values`` added at ``indices`` along ``axis`` (repeats accumulate): the transpose of take.

    Shapes: values (*a, *i, *b), indices (*i) -> (*a, size, *b).
    Not exported as ``ad.*`` (it is take's VJP); import it from ``autograd_dag.primitives.indexing``.
    Example: ``take_add(ad.Tensor([1.0, 2.0]), np.array([2, 2]), 3).value`` is ``[0., 0., 3.]``.
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    axis = int(axis)
    if axis < 0:
        raise ShapeError(f"take_add: Expect: a non-negative axis. Actual: {axis}")
    return apply(TAKE_ADD, values, indices, size=int(size), axis=axis)

# ------------------------------------------------- take_along_axis and its transpose


def _check_along(name, x_shape, idx, axis, size):
    if idx.dtype.kind not in "iu":
        raise ShapeError(f"{name}: Expect: integer indices. Actual: dtype {idx.dtype}")
    if idx.ndim != len(x_shape):
        raise ShapeError(f"{name}: Expect: indices with as many dimensions as the operand ({len(x_shape)}). "
                         f"Actual: indices of shape {fmt(idx.shape)}")
    other = tuple(d for i, d in enumerate(x_shape) if i != axis)
    try:
        np.broadcast_shapes(other, tuple(d for i, d in enumerate(idx.shape) if i != axis))
    except ValueError:
        raise ShapeError(f"{name}: Expect: indices that broadcast with the operand off axis {axis}. "
                         f"Actual: operand {fmt(x_shape)}, indices {fmt(idx.shape)}") from None
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise ShapeError(f"{name}: Expect: indices in [{-size}, {size}) along axis {axis}. "
                         f"Actual: indices range over [{int(idx.min())}, {int(idx.max())}]")


def _take_along_impl(x, idx, *, axis):
    _check_along("take_along_axis", x.shape, idx, axis, x.shape[axis])
    return np.take_along_axis(x, idx, axis)


def _along_shape(x_shape, idx_shape, axis):
    shape = list(np.broadcast_shapes(tuple(1 if i == axis else d for i, d in enumerate(x_shape)),
                                     tuple(1 if i == axis else d for i, d in enumerate(idx_shape))))
    shape[axis] = idx_shape[axis]
    return tuple(shape)


def _along_axis_batch(prim, args, batched, **params):
    # Values and indices have the same rank: repeat the unbatched one over the batch.
    size = next(a.shape[0] for a, b in zip(args, batched) if b)
    return apply(prim, *[a if b else materialize(a, size) for a, b in zip(args, batched)],
                 **{**params, "axis": params["axis"] + 1})


def _put_along_axis_batch(prim, args, batched, *, shape, axis, unique=False):
    size = next(a.shape[0] for a, b in zip(args, batched) if b)
    return apply(prim, *[a if b else materialize(a, size) for a, b in zip(args, batched)],
                 shape=(size,) + tuple(shape), axis=axis + 1, unique=unique)


TAKE_ALONG_AXIS = defprim(
    "take_along_axis", _take_along_impl,
    transpose=(lambda ct, x, idx, *, axis: apply(
        PUT_ALONG_AXIS_ADD, ct, idx, shape=tuple(x.shape), axis=axis), None),
    shape=lambda x, idx, *, axis: (_along_shape(x.shape, idx.shape, axis), x.dtype),
    nondiff=(1,), batch=_along_axis_batch)


def take_along_axis(x, /, indices, axis: int | None = -1) -> Tensor:
    """Pick entries of ``x`` along ``axis`` at ``indices`` (integer, no derivative), as ``np.take_along_axis``.

    Shapes: x (*s), indices with as many dimensions, broadcasting off ``axis`` ->
    the broadcast shape with indices' length on ``axis``; ``axis=None``: the flattened x, 1-D indices.
    Example: ``ad.take_along_axis(ad.Tensor([[1., 2.]]), np.array([[1, 1, 0]]), 1).value`` is ``[[2., 2., 1.]]``.
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    if axis is None:  # (numpy's: x flattened; it raised "axis None is out of range")
        x, axis = reshape(x, (-1,)), 0
    ndim = _ndim_of(x)
    return apply(TAKE_ALONG_AXIS, x, indices, axis=normalize_axis("take_along_axis", axis, ndim))


def _put_along_impl(v, idx, *, shape, axis, unique=False):
    _check_along("put_along_axis_add", shape, idx, axis, shape[axis])
    full = _along_shape(shape, idx.shape, axis)
    if tuple(v.shape) != full:
        raise ShapeError(f"put_along_axis_add: Expect: values of shape {fmt(full)}. Actual: {fmt(v.shape)}")
    out = np.zeros(shape, dtype=v.dtype)
    # An axis of size 1 that the indices broadcast: every value lands on its one entry.
    grids = list(np.ix_(*[np.zeros(1, np.intp) if i == axis else np.arange(d) if d == s else np.zeros(d, np.intp)
                          for i, (d, s) in enumerate(zip(full, shape))]))
    grids[axis] = np.broadcast_to(idx, full)
    if unique and full == shape:
        out[tuple(grids)] = v  # a permutation (sort's): plain assignment, far faster than add.at
    else:
        np.add.at(out, tuple(grids), v)  # repeated indices accumulate
    return out


PUT_ALONG_AXIS_ADD = defprim(
    "put_along_axis_add", _put_along_impl,
    transpose=(lambda c, v, idx, *, shape, axis, unique=False: apply(
        TAKE_ALONG_AXIS, c, idx if tuple(idx.shape) == tuple(v.shape) else broadcast_to(idx, v.shape),
        axis=axis), None),
    shape=lambda v, idx, *, shape, axis, unique=False: (tuple(shape), v.dtype), nondiff=(1,), batch=_put_along_axis_batch)


def put_along_axis_add(values, indices, shape, axis: int) -> Tensor:
    """Zeros of ``shape`` with ``values`` added at ``indices`` along ``axis``: the transpose of take_along_axis.

    Repeated indices accumulate. Shapes: values of take_along_axis's output shape -> ``shape``.
    Example: ``ad.put_along_axis_add(ad.Tensor([[1., 2.]]), np.array([[1, 1]]), (1, 3), 1).value`` is ``[[0., 3., 0.]]``.
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    shape = tuple(int(d) for d in shape)
    return apply(PUT_ALONG_AXIS_ADD, values, indices, shape=shape,
                 axis=normalize_axis("put_along_axis_add", axis, len(shape)))

# ------------------------------------------------------------ checked_mask


def _dead_rows(mask: np.ndarray) -> np.ndarray:
    """Where every entry of a row (the last axis) is removed: False in a boolean mask, −∞ in an additive one."""
    removed = ~mask if mask.dtype == bool else np.isneginf(mask)
    return np.all(removed, axis=-1)


def dead_rows_error(name: str, dead: np.ndarray, what: str) -> ShapeError:
    """The error for query rows with every key masked; ``dead`` marks them (…, L_q), ``what`` says in what."""
    where_ = tuple(int(i) for i in np.argwhere(dead)[0])
    lead, row = where_[:-1], where_[-1]
    at = f" of batch index {lead}" if lead else ""
    return ShapeError(f"{name}: query row {row}{at} has every key masked (all -inf or all False): softargmax "
                      f"over an empty set of keys has no distribution (it would be NaN). Actual: "
                      f"{int(np.sum(dead))} such row(s) {what}; let each query see at least one key")


def _checked_mask_impl(mask, *, name):
    # A 0-d or 1-d mask is one row (broadcast to every query).
    if mask.size and np.any(dead := _dead_rows(mask if mask.ndim >= 2 else mask.reshape(1, -1))):
        raise dead_rows_error(name, dead, f"in a mask of shape {fmt(mask.shape)}")
    return mask


CHECKED_MASK = defprim(
    # The identity, but by hand: the derived JVP would check the tangent as a mask.
    "checked_mask", _checked_mask_impl,
    vjp=lambda ct, out, mask, *, name: (identity(ct),),
    jvp=lambda t, out, mask, *, name: identity(t[0]),
    shape=lambda mask, *, name: (tuple(mask.shape), mask.dtype), batch=unary_batch)


def checked_mask(mask, name: str = "checked_mask") -> Tensor:
    """``mask`` unchanged, once every row (its last axis) keeps at least one entry; the identity's derivative.

    An attention mask that is data (a padding mask fed to a jitted program, or
    mapped by vmap) changes from call to call and from example to example:
    this node checks it on every run, where softargmax would turn a row of
    keys that are all removed (False, or −∞ in an additive mask) into NaN
    without a word. ``name`` words the error. Not exported as ``ad.*``.
    Shapes: (..., L_q, L_k) -> the same.
    Example: ``checked_mask(np.array([[True, False]])).value`` is ``[[True, False]]``.
    """
    if not isinstance(mask, Tensor):
        mask = np.asarray(mask)
    return apply(CHECKED_MASK, mask, name=str(name))

# ----------------------------------------------------------------- one_hot


def _checked_indices_impl(indices, *, size, name, what):
    _check_indices(name, indices, size, what, False)
    return indices


def _checked_indices_rule(indices, *, size, name, what):
    if indices.dtype.kind not in "iu":
        raise ShapeError(f"{name}: Expect: integer indices. Actual: dtype {indices.dtype}")
    return tuple(indices.shape), indices.dtype


CHECKED_INDICES = defprim(
    "checked_indices", _checked_indices_impl,
    transpose=(),  # (no differentiable input: the zero map, nothing to state)
    shape=_checked_indices_rule, nondiff=(0,), batch=unary_batch)


def checked_indices(indices, size: int, name: str = "checked_indices", what: str | None = None) -> Tensor:
    """``indices`` unchanged, once every one is known to lie in [0, size) (no derivative).

    Indices that are data (class labels, token ids) are inputs of a jitted
    program and change from call to call: this node checks them on every run,
    where numpy would count a negative index from the end and pick the wrong
    row without a word. ``name`` and ``what`` word the error, e.g.
    ``cross_entropy: index -1 is out of range for 10 classes``.
    Shapes: (*i) -> (*i).
    Example: ``ad.checked_indices(np.array([2, 0]), 3).value`` is ``[2, 0]``.
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    return apply(CHECKED_INDICES, indices, size=int(size), name=name, what=what or f"size {int(size)}")


def _one_hot_impl(indices, *, num_classes, dtype):
    _check_indices("one_hot", indices, num_classes, f"{num_classes} classes", False)
    return (indices[..., None] == np.arange(num_classes)).astype(dtype)


def _one_hot_rule(indices, *, num_classes, dtype):
    if indices.dtype.kind not in "iu":
        raise ShapeError(f"one_hot: Expect: integer indices. Actual: dtype {indices.dtype}")
    return tuple(indices.shape) + (num_classes,), dtype


ONE_HOT = defprim(
    "one_hot", _one_hot_impl,
    transpose=(), shape=_one_hot_rule, nondiff=(0,), batch=unary_batch)


def one_hot(indices, num_classes: int, dtype=np.float64) -> Tensor:
    """Rows of the identity: 1 at each index, 0 elsewhere (no derivative).

    Shapes: indices (*i) of ints in [0, num_classes) -> (*i, num_classes).
    Example: ``ad.one_hot(np.array([2, 0]), 3).value`` is ``[[0, 0, 1], [1, 0, 0]]``.
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
    if isinstance(num_classes, (bool, np.bool_)) or not isinstance(num_classes, (int, np.integer)) \
            or num_classes < 1:
        raise ShapeError(f"one_hot: Expect: num_classes a positive integer. Actual: {num_classes!r}")
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        raise ShapeError(f"one_hot: Expect: a floating-point dtype. Actual: {dtype}")
    return apply(ONE_HOT, indices, num_classes=int(num_classes), dtype=dtype)
