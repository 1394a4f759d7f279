"""Cases for the indexing primitives: getitem, index_add, concatenate (and stack), take, take_add,
take_along_axis, put_along_axis_add, one_hot, checked_indices, checked_mask.

Each ``ref`` is an independent numpy computation (numpy's own indexing, or
explicit loops), never the code under test.
"""

import numpy as np

import autograd_dag as ad
from autograd_dag.core import apply
from autograd_dag.primitives.indexing import (checked_indices, checked_mask, concatenate, getitem, index_add, one_hot,
                                              stack, take, take_add)
from tests.cases import Case


def _normal(*shape):
    return lambda rng: (rng.standard_normal(shape),)


def _getitem_case(shape, index, label):
    return Case("getitem", lambda x: getitem(x, index), _normal(*shape),
                ref=lambda x: np.asarray(x[index]), id=label)


def _index_add_ref(v):
    # zeros((4, 5)) with v[r] added on row rows[r], columns 1..3.
    rows = [0, 0, 3]
    out = np.zeros((4, 5))
    for r, row in enumerate(rows):
        out[row, 1:4] += v[r]
    return out


def _take_ref(table, idx, axis):
    moved = np.moveaxis(table, axis, 0)
    picked = np.array([moved[i] for i in idx.ravel()]).reshape(idx.shape + moved.shape[1:])
    # picked is (*idx, *rest-without-axis); put the index axes where ``axis`` was.
    lead = table.shape[:axis]
    order = list(range(idx.ndim, idx.ndim + len(lead))) + list(range(idx.ndim)) + \
        list(range(idx.ndim + len(lead), picked.ndim))
    return np.transpose(picked, order)


def _take_add_ref(v, idx, size):
    out = np.zeros((size,) + v.shape[idx.ndim:])
    for pos, i in np.ndenumerate(idx):
        out[i] += v[pos]
    return out


CASES = [
    _getitem_case((3, 4, 5), (1, slice(None, None, 2), None, Ellipsis), "basic"),
    _getitem_case((3, 4, 5), (slice(None), slice(3, 0, -1), -1), "negative_step"),
    _getitem_case((3, 4), (1, 2), "scalar"),
    _getitem_case((3, 4, 5), (np.array([0, 2, 0]), slice(None), np.array([1, 1, 4])), "int_arrays_repeat"),
    _getitem_case((3, 4, 5), (Ellipsis, np.array([[3, 3], [0, 1]])), "int_array_2d"),
    _getitem_case((3, 4), (np.array([[True, False, True, True], [False] * 4, [True] * 4]),), "bool_mask"),
    _getitem_case((3, 4, 5), (slice(None), np.array([True, False, False, True])), "bool_axis1"),
    Case("index_add", lambda v: index_add(v, (4, 5), (np.array([0, 0, 3]), slice(1, 4))),
         _normal(3, 3), ref=_index_add_ref, id="repeat_rows"),
    Case("index_add", lambda v: index_add(v, (4, 5), (slice(1, 3), None)),
         _normal(2, 1, 5), ref=lambda v: np.pad(v[:, 0], ((1, 1), (0, 0))), id="basic"),
    Case("concatenate", lambda a, b, c: concatenate([a, b, c], axis=1),
         lambda rng: (rng.standard_normal((2, 1, 3)), rng.standard_normal((2, 4, 3)),
                      rng.standard_normal((2, 2, 3))),
         ref=lambda a, b, c: np.concatenate([a, b, c], axis=1), id="axis1"),
    Case("concatenate", lambda a, b: concatenate([a, b], axis=-1),
         lambda rng: (rng.standard_normal((3, 2)), rng.standard_normal((3, 0))),
         ref=lambda a, b: np.hstack([a, b]), id="empty_part"),
    Case("concatenate", lambda a, b, c: concatenate([a, b, c], axis=None),
         lambda rng: (rng.standard_normal((2, 3)), rng.standard_normal(()), rng.standard_normal((1, 2, 2))),
         ref=lambda a, b, c: np.array(list(a.flat) + [float(b)] + list(c.flat)), id="axis_none_flattens"),
    Case("concatenate", lambda a, b: np.concatenate((a, b), axis=None),
         lambda rng: (rng.standard_normal((2, 2)), rng.standard_normal((3,))),
         ref=lambda a, b: np.array(list(a.flat) + list(b.flat)), id="axis_none_np_dispatch"),
    Case("concatenate", lambda a, b: stack([a, b], axis=-1),
         lambda rng: (rng.standard_normal((3, 2)), rng.standard_normal((3, 2))),
         ref=lambda a, b: np.array([[[a[i, j], b[i, j]] for j in range(2)] for i in range(3)]),
         id="stack_last"),
    Case("take", lambda table, idx: take(table, idx),
         lambda rng: (rng.standard_normal((5, 3)), np.array([[4, 0, 4], [1, 4, 2]])),
         ref=lambda table, idx: _take_ref(table, idx, 0), id="embedding"),
    Case("take", lambda table, idx: take(table, idx, axis=1),
         lambda rng: (rng.standard_normal((2, 6, 3)), np.array([-1, 2, 2, 0])),
         ref=lambda table, idx: _take_ref(table, idx, 1), id="axis1_negative"),
    Case("take_add", lambda v, idx: take_add(v, idx, 4),
         lambda rng: (rng.standard_normal((2, 3, 2)), np.array([[3, 0, 3], [3, 1, 1]])),
         ref=lambda v, idx: _take_add_ref(v, idx, 4), id="repeat"),
    Case("take_add", lambda v, idx: take_add(v, idx, 4),
         lambda rng: (rng.standard_normal((6, 2)), np.array([-1, 3, 0, -4, 2, -1])),
         ref=lambda v, idx: _take_add_ref(v, idx, 4), id="negative_repeat"),
    Case("one_hot", lambda idx: one_hot(idx, 5),
         lambda rng: (np.array([[4, 0], [2, 2]]),),
         ref=lambda idx: np.eye(5)[idx], id="2d"),
    # Integer data passed through once its range is checked (no derivative).
    Case("checked_indices", lambda idx: checked_indices(idx, 5),
         lambda rng: (np.array([[4, 0], [2, 2]]),), ref=lambda idx: idx.copy(), wrt=(), id="2d"),
    Case("checked_indices", lambda idx: checked_indices(idx, 3),
         lambda rng: (np.zeros((0, 2), np.int32),), ref=lambda idx: idx.copy(), wrt=(), id="empty_int32"),
    # An attention mask passed through once every row keeps a key (the identity's derivative);
    # boolean masks: tests/test_attention.py.
    Case("checked_mask", lambda m: checked_mask(m),
         lambda rng: (rng.standard_normal((3, 4)),), ref=lambda m: m.copy(), id="additive"),
    Case("checked_mask", lambda m: checked_mask(m),
         lambda rng: (rng.standard_normal((2, 1, 3)),), ref=lambda m: m.copy(), id="key_padding"),
]

# ------------------------------------------- take_along_axis and its transpose


def _take_along_ref(x, idx, axis):
    out = np.empty(np.broadcast_shapes(*[tuple(1 if i == axis else d for i, d in enumerate(s))
                                         for s in (x.shape, idx.shape)])[:axis] + (idx.shape[axis],)
                   + np.broadcast_shapes(x.shape[axis + 1:], idx.shape[axis + 1:]))
    xb = np.broadcast_to(x, out.shape[:axis] + (x.shape[axis],) + out.shape[axis + 1:])
    ib = np.broadcast_to(idx, out.shape)
    for pos in np.ndindex(out.shape):
        src = list(pos)
        src[axis] = ib[pos]
        out[pos] = xb[tuple(src)]
    return out


def _put_along_ref(v, idx, shape, axis):
    out = np.zeros(shape)
    for pos in np.ndindex(v.shape):
        dst = list(pos)
        dst[axis] = idx[pos] % shape[axis]
        out[tuple(dst)] += v[pos]
    return out


CASES += [
    Case("take_along_axis", lambda x, i: ad.take_along_axis(x, i, 1),
         lambda rng: (rng.standard_normal((3, 4)), np.array([[0, 3, 3], [1, 1, 2], [-1, 0, 2]])),
         lambda x, i: _take_along_ref(x, i, 1), id="take_along_axis-repeats"),
    Case("take_along_axis", lambda x, i: ad.take_along_axis(x, i, 0),
         lambda rng: (rng.standard_normal((3, 2)), np.array([[2], [0]])),
         lambda x, i: _take_along_ref(x, i, 0), id="take_along_axis-broadcast"),
    Case("take_along_axis", lambda x, i: np.take_along_axis(x, i, -1),
         lambda rng: (rng.standard_normal((2, 3)), np.array([[2, 0], [1, 1]])),
         lambda x, i: _take_along_ref(x, i, 1), id="take_along_axis-np_dispatch"),
    Case("take_along_axis", lambda x, i: ad.take_along_axis(x, i, 1),
         lambda rng: (rng.standard_normal((1, 4)), np.array([[0, 3], [1, 1], [2, 0]])),
         lambda x, i: _take_along_ref(x, i, 1), id="take_along_axis-operand_broadcast"),
    Case("put_along_axis_add", lambda v, i: ad.put_along_axis_add(v, i, (3, 4), 1),
         lambda rng: (rng.standard_normal((3, 3)), np.array([[0, 3, 3], [1, 1, 2], [-1, 0, 2]])),
         lambda v, i: _put_along_ref(v, i, (3, 4), 1), id="put_along_axis_add-repeats"),
    Case("put_along_axis_add", lambda v, i: apply(ad.PRIMITIVES["put_along_axis_add"], v, i, shape=(2, 3), axis=1,
                                                  unique=True),
         lambda rng: (rng.standard_normal((2, 3)), np.array([[2, 0, 1], [1, 2, 0]])),
         lambda v, i: _put_along_ref(v, i, (2, 3), 1), id="put_along_axis_add-permutation"),
]
