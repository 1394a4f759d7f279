"""Cases for pad, flip and roll (primitives) and the composites tile, repeat,
split, diagonal, trace, triu, tril, outer, dot and tensordot
(autograd_dag/primitives/arrays.py).

References move entries by explicit index arithmetic or contract with
``np.einsum``, never the function under test.
"""

import numpy as np

import autograd_dag as ad
from autograd_dag.primitives.arrays import trace
from tests.cases import Case


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _pad_ref(widths, value):
    def ref(x):
        out = np.full(tuple(d + b + a for d, (b, a) in zip(x.shape, widths)), value)
        for idx in np.ndindex(x.shape):
            out[tuple(i + b for i, (b, _) in zip(idx, widths))] = x[idx]
        return out
    return ref


def _pad_mode_ref(widths, mode):
    """np.pad's modes written out on Python lists, axis by axis (widths within the axis length)."""
    def extend(row, b, a):
        if mode == "edge":
            return [row[0]] * b + row + [row[-1]] * a
        if mode == "wrap":
            return row[len(row) - b:] + row + row[:a]
        if mode == "symmetric":
            return row[:b][::-1] + row + row[len(row) - a:][::-1]
        return row[1:b + 1][::-1] + row + row[len(row) - a - 1:len(row) - 1][::-1]   # reflect

    def ref(x):
        for axis, (b, a) in enumerate(widths):
            moved = np.moveaxis(x, axis, -1)
            rows = [extend(list(r), b, a) for r in moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])]
            x = np.moveaxis(np.array(rows).reshape(moved.shape[:-1] + (moved.shape[-1] + b + a,)), -1, axis)
        return x
    return ref


def _flip_ref(axes):
    def ref(x):
        out = np.empty_like(x)
        for idx in np.ndindex(x.shape):
            out[tuple(x.shape[k] - 1 - i if k in axes else i for k, i in enumerate(idx))] = x[idx]
        return out
    return ref


def _roll_ref(shifts, axes):
    def ref(x):
        if axes is None:
            flat = list(x.reshape(-1))
            n = len(flat)
            return np.array([flat[(i - shifts) % n] for i in range(n)]).reshape(x.shape)
        out = np.empty_like(x)
        for idx in np.ndindex(x.shape):
            dst = list(idx)
            for s, a in zip(shifts, axes):
                dst[a] = (dst[a] + s) % x.shape[a]
            out[tuple(dst)] = x[idx]
        return out
    return ref


def _tile_ref(reps):
    def ref(x):
        r = (reps,) if isinstance(reps, int) else reps
        d = max(x.ndim, len(r))
        x = x.reshape((1,) * (d - x.ndim) + x.shape)
        r = (1,) * (d - len(r)) + tuple(r)
        out = np.empty(tuple(s * k for s, k in zip(x.shape, r)))
        for idx in np.ndindex(out.shape):
            out[idx] = x[tuple(i % s for i, s in zip(idx, x.shape))]
        return out
    return ref


def _repeat_ref(counts, axis):
    def ref(x):
        if axis is None:
            x = x.reshape(-1)
        a = 0 if axis is None else axis % x.ndim
        c = [counts] * x.shape[a] if isinstance(counts, int) else counts
        src = [i for i, k in enumerate(c) for _ in range(k)]
        return np.moveaxis(np.array([np.moveaxis(x, a, 0)[i] for i in src]).reshape(
            (len(src),) + np.moveaxis(x, a, 0).shape[1:]), 0, a)
    return ref


def _diagonal_ref(offset, a1, a2):
    def ref(x):
        rest = [a for a in range(x.ndim) if a not in (a1, a2)]
        k = max(0, min(x.shape[a1] - max(-offset, 0), x.shape[a2] - max(offset, 0)))
        out = np.empty(tuple(x.shape[a] for a in rest) + (k,))
        for idx in np.ndindex(out.shape):
            src = [0] * x.ndim
            for a, i in zip(rest, idx[:-1]):
                src[a] = i
            src[a1] = idx[-1] + max(-offset, 0)
            src[a2] = idx[-1] + max(offset, 0)
            out[idx] = x[tuple(src)]
        return out
    return ref


def _triangle_ref(k, upper):
    def ref(x):
        out = np.array(x, dtype=float) if x.ndim >= 2 else np.array([x] * x.shape[0], dtype=float)
        for idx in np.ndindex(out.shape):
            i, j = idx[-2], idx[-1]
            if (upper and j < i + k) or (not upper and j > i + k):
                out[idx] = 0.0
        return out
    return ref


CASES = [
    Case("pad", lambda x: ad.pad(x, ((1, 2), (0, 1))), _normal((3, 4)), _pad_ref(((1, 2), (0, 1)), 0.0),
         id="pad-pairs"),
    Case("pad", lambda x: ad.pad(x, 2, constant_values=1.5), _normal((3,)), _pad_ref(((2, 2),), 1.5),
         id="pad-int_constant"),
    Case("pad", lambda x: np.pad(x, (1, 0)), _normal((2, 2)), _pad_ref(((1, 0), (1, 0)), 0.0), id="pad-np_dispatch"),
    Case("pad", lambda x: ad.pad(x, 1), _normal((0, 2)), _pad_ref(((1, 1), (1, 1)), 0.0), id="pad-empty"),
    Case("concatenate", lambda x: ad.pad(x, ((1, 2), (2, 1)), "edge"), _normal((3, 4)),
         _pad_mode_ref(((1, 2), (2, 1)), "edge"), id="concatenate-pad_edge"),
    Case("concatenate", lambda x: np.pad(x, ((2, 1), (0, 3)), mode="reflect"), _normal((3, 4)),
         _pad_mode_ref(((2, 1), (0, 3)), "reflect"), id="concatenate-pad_reflect"),
    Case("concatenate", lambda x: np.pad(x, ((1, 3),), mode="symmetric"), _normal((4,)),
         _pad_mode_ref(((1, 3),), "symmetric"), id="concatenate-pad_symmetric"),
    Case("concatenate", lambda x: ad.pad(x, (2, 1), "wrap"), _normal((3, 2)),
         _pad_mode_ref(((2, 1), (2, 1)), "wrap"), id="concatenate-pad_wrap"),
    Case("concatenate", lambda x: ad.pad(x, ((0, 0), (1, 1)), "reflect"), _normal((0, 3)),
         _pad_mode_ref(((0, 0), (1, 1)), "reflect"), id="concatenate-pad_reflect_empty_other_axis"),
    Case("flip", ad.flip, _normal((3, 4)), _flip_ref((0, 1)), id="flip-all"),
    Case("flip", lambda x: ad.flip(x, 1), _normal((2, 3, 2)), _flip_ref((1,)), id="flip-axis1"),
    Case("flip", lambda x: np.flip(x, (0, 2)), _normal((2, 3, 2)), _flip_ref((0, 2)), id="flip-np_dispatch"),
    Case("roll", lambda x: ad.roll(x, 1), _normal((3, 4)), _roll_ref(1, None), id="roll-flat"),
    Case("roll", lambda x: ad.roll(x, -2, 1), _normal((3, 4)), _roll_ref((-2,), (1,)), id="roll-axis1"),
    Case("roll", lambda x: np.roll(x, (1, 5), (0, 1)), _normal((3, 4)), _roll_ref((1, 5), (0, 1)),
         id="roll-np_tuple"),
    Case("broadcast_to", lambda x: ad.tile(x, 2), _normal((3,)), _tile_ref(2), id="broadcast_to-tile_int"),
    Case("broadcast_to", lambda x: ad.tile(x, (2, 1)), _normal((2, 3)), _tile_ref((2, 1)), id="broadcast_to-tile_2d"),
    Case("broadcast_to", lambda x: np.tile(x, (2, 2, 2)), _normal((3,)), _tile_ref((2, 2, 2)),
         id="broadcast_to-tile_np_more_reps"),
    Case("broadcast_to", lambda x: ad.repeat(x, 2), _normal((2, 2)), _repeat_ref(2, None), id="broadcast_to-repeat_flat"),
    Case("broadcast_to", lambda x: x.repeat(3, axis=1), _normal((2, 2)), _repeat_ref(3, 1),
         id="broadcast_to-repeat_method"),
    Case("take", lambda x: np.repeat(x, [2, 0, 1], axis=0), _normal((3, 2)), _repeat_ref([2, 0, 1], 0),
         id="take-repeat_counts"),
    Case("getitem", lambda x: ad.concatenate([p * (i + 1.0) for i, p in enumerate(ad.split(x, 3, axis=1))], 1),
         _normal((2, 6)), lambda x: x * np.repeat([1.0, 2.0, 3.0], 2), id="getitem-split_sections"),
    Case("getitem", lambda x: ad.concatenate([p * (i + 1.0) for i, p in enumerate(np.split(x, [1, 3]))]),
         _normal((4,)), lambda x: x * np.array([1.0, 2.0, 2.0, 3.0]), id="getitem-split_np_indices"),
    Case("getitem", lambda x: ad.concatenate([p * (i + 1.0) for i, p in enumerate(np.array_split(x, 3, axis=1))], 1),
         _normal((2, 7)), lambda x: x * np.array([1.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]), id="getitem-array_split"),
    Case("getitem", ad.diagonal, _normal((3, 4)), _diagonal_ref(0, 0, 1), id="getitem-diagonal"),
    Case("getitem", lambda x: ad.diagonal(x, -1), _normal((3, 4)), _diagonal_ref(-1, 0, 1), id="getitem-diagonal_below"),
    Case("getitem", lambda x: x.diagonal(1, 2, 0), _normal((3, 2, 4)), _diagonal_ref(1, 2, 0),
         id="getitem-diagonal_axes"),
    Case("getitem", lambda x: np.diagonal(x, 5), _normal((3, 4)), _diagonal_ref(5, 0, 1), id="getitem-diagonal_empty"),
    Case("sum", trace, _normal((3, 3)), lambda x: np.array(x[0, 0] + x[1, 1] + x[2, 2]), id="sum-trace"),
    Case("sum", lambda x: np.trace(x, 1), _normal((3, 4)), lambda x: np.array(x[0, 1] + x[1, 2] + x[2, 3]),
         id="sum-trace_np_offset"),
    Case("sum", lambda x: x.trace(axis1=1, axis2=2), _normal((2, 3, 3)),
         lambda x: np.einsum("bii->b", x), id="sum-trace_method"),
    Case("where", ad.triu, _normal((3, 4)), _triangle_ref(0, True), id="where-triu"),
    Case("where", lambda x: ad.triu(x, -1), _normal((2, 4, 3)), _triangle_ref(-1, True), id="where-triu_batch"),
    Case("where", lambda x: np.tril(x, 1), _normal((4, 3)), _triangle_ref(1, False), id="where-tril_np"),
    Case("where", ad.tril, _normal((3,)), _triangle_ref(0, False), id="where-tril_vector"),
    Case("multiply", ad.outer, _normal((3,), (2, 2)), lambda a, b: np.einsum("i,j->ij", a, b.reshape(-1)),
         id="multiply-outer"),
    Case("multiply", lambda a, b: np.outer(a, b), _normal((2,), (3,)), lambda a, b: np.einsum("i,j->ij", a, b),
         id="multiply-outer_np"),
    Case("matmul", ad.dot, _normal((4,), (4,)), lambda a, b: np.einsum("i,i->", a, b), id="matmul-dot_vectors"),
    Case("matmul", lambda a, b: a.dot(b), _normal((2, 3, 4), (4, 5)), lambda a, b: np.einsum("abk,kn->abn", a, b),
         id="matmul-dot_method"),
    Case("matmul", lambda a, b: np.dot(a, b), _normal((2, 4), (3, 4, 5)),
         lambda a, b: np.einsum("ak,ckn->acn", a, b), id="matmul-dot_np_nd"),
    Case("multiply", ad.dot, _normal((), (3,)), lambda a, b: a * b, id="multiply-dot_scalar"),
    Case("matmul", ad.tensordot, _normal((2, 3, 4), (3, 4, 5)), lambda a, b: np.einsum("ijk,jkl->il", a, b),
         id="matmul-tensordot_2"),
    Case("matmul", lambda a, b: np.tensordot(a, b, ([0, 2], [2, 0])), _normal((2, 3, 4), (4, 5, 2)),
         lambda a, b: np.einsum("ijk,kli->jl", a, b), id="matmul-tensordot_axes"),
    Case("matmul", lambda a, b: ad.tensordot(a, b, 0), _normal((2,), (3,)), lambda a, b: np.einsum("i,j->ij", a, b),
         id="matmul-tensordot_0"),
]
