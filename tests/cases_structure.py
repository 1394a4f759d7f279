"""Cases for the structural primitives: reshape, transpose, broadcast_to and sum
(and the public helpers built on them: expand_dims, squeeze, swapaxes, ``.T``,
``.flatten()``).

References move entries explicitly (index arithmetic, ``np.einsum`` with a
permuted subscript, adding zeros of the target shape, contracting with a
vector of ones), never the code under test.
"""

import numpy as np

import autograd_dag as ad
from tests.cases import Case


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _reshape_ref(shape):
    # Row-major order: entry k of the flat list goes to the k-th multi-index of ``shape``.
    def ref(x):
        flat = [x[i] for i in np.ndindex(x.shape)]
        out = np.empty(shape)
        for k, idx in enumerate(np.ndindex(*shape)):
            out[idx] = flat[k]
        return out
    return ref


def _transpose_ref(axes):
    def ref(x):
        letters = "abcdefgh"[:x.ndim]
        perm = list(range(x.ndim))[::-1] if axes is None else [a % x.ndim for a in axes]
        return np.einsum(f"{letters}->{''.join(letters[a] for a in perm)}", x)
    return ref


def _broadcast_ref(shape):
    return lambda x: x + np.zeros(shape)


def _sum_ref(axis, keepdims):
    # Contract the summed axes (moved to the end and flattened) with a vector of ones.
    def ref(x):
        axes = tuple(range(x.ndim)) if axis is None else \
            tuple(a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis))
        rest = [a for a in range(x.ndim) if a not in axes]
        n = int(np.prod([x.shape[a] for a in axes]))
        moved = np.transpose(x, rest + list(axes)).reshape([x.shape[a] for a in rest] + [n])
        out = moved @ np.ones(n) if n else np.zeros([x.shape[a] for a in rest])
        if keepdims:
            out = np.reshape(out, [1 if a in axes else x.shape[a] for a in range(x.ndim)])
        return out
    return ref


CASES = []

# ---------------------------------------------------------------- reshape
for src, dst, label in [((2, 3, 4), (6, 4), "merge"), ((6,), (2, 1, 3), "split_size1"),
                        ((2, 3), (3, 2), "reorder"), ((), (1, 1), "scalar_to_1x1"),
                        ((1, 1), (), "1x1_to_scalar"), ((0, 3), (3, 0), "empty")]:
    CASES.append(Case("reshape", lambda x, s=dst: ad.reshape(x, s), _normal(src), _reshape_ref(dst),
                      id=f"reshape-{label}"))
CASES += [
    Case("reshape", lambda x: ad.reshape(x, (-1, 2)), _normal((3, 2, 2)), _reshape_ref((6, 2)),
         id="reshape-infer"),
    Case("identity", lambda x: ad.primitives.structure.identity(x), _normal((2, 3)), lambda x: x + 0.0,
         id="identity"),
    Case("reshape", lambda x: x.reshape(4, 3), _normal((2, 6)), _reshape_ref((4, 3)), id="reshape-method"),
    Case("reshape", lambda x: x.flatten(), _normal((2, 3)), _reshape_ref((6,)), id="reshape-flatten"),
    Case("reshape", lambda x: ad.expand_dims(x, 1), _normal((3, 2)), _reshape_ref((3, 1, 2)),
         id="reshape-expand_dims"),
    Case("reshape", lambda x: ad.squeeze(x), _normal((1, 3, 1)), _reshape_ref((3,)), id="reshape-squeeze"),
]

# -------------------------------------------------------------- transpose
for shape, axes, label in [((2, 3, 4), None, "reverse3"), ((2, 3, 4), (1, 0, 2), "swap01"),
                           ((2, 3, 4), (-1, 0, 1), "negative_axes"), ((3, 4), None, "matrix"),
                           ((5,), None, "vector"), ((), None, "scalar"), ((0, 2, 3), (2, 0, 1), "empty"),
                           ((1, 3, 1), (2, 1, 0), "size1")]:
    CASES.append(Case("transpose", lambda x, a=axes: ad.transpose(x, a), _normal(shape), _transpose_ref(axes),
                      id=f"transpose-{label}"))
CASES += [
    Case("transpose", lambda x: x.T, _normal((2, 3)), _transpose_ref(None), id="transpose-T"),
    Case("transpose", lambda x: ad.swapaxes(x, 0, 2), _normal((2, 3, 4)), _transpose_ref((2, 1, 0)),
         id="transpose-swapaxes"),
]

# ----------------------------------------------------------- broadcast_to
for src, dst, label in [((3, 1), (2, 3, 4), "size1_and_lead"), ((), (2, 2), "scalar"),
                        ((4,), (3, 4), "lead"), ((1,), (0,), "to_empty"), ((2, 1, 3), (2, 5, 3), "middle")]:
    CASES.append(Case("broadcast_to", lambda x, s=dst: ad.broadcast_to(x, s), _normal(src),
                      _broadcast_ref(dst), id=f"broadcast_to-{label}"))

# -------------------------------------------------------------------- sum
for shape, axis, keepdims in [((3, 4), None, False), ((3, 4), 0, False), ((3, 4), -1, True),
                              ((2, 3, 4), (0, 2), False), ((2, 3, 4), (-1, 0), True), ((4, 1), 1, False),
                              ((5,), 0, True), ((), None, False), ((0, 3), 0, False), ((0, 3), 1, True),
                              ((2, 3), (), False)]:
    CASES.append(Case("sum", lambda x, a=axis, k=keepdims: ad.sum(x, a, keepdims=k), _normal(shape),
                      _sum_ref(axis, keepdims), id=f"sum-{shape}-ax{axis}-k{int(keepdims)}"))
CASES += [
    Case("sum", lambda x: x.sum(axis=1), _normal((2, 3)), _sum_ref(1, False), id="sum-method"),
]
