"""Cases for cumsum, cumprod, prod, norm, std/var, diff, sort, argsort, argmin, any and all
(autograd_dag/primitives/numeric.py).

References are independent: cumulative sums as products with a triangular
matrix of ones, cumulative and plain products as explicit loops, norms and
standard deviations from their definitions, sorting by Python's ``sorted``.
Products are polynomials, so central differences are valid at zeros: cases
with one and two zeros in a slice are checked like any other (two zeros in a
``cumprod`` slice are pinned to first order in tests/test_numpy_functions.py,
see cumprod's docstring).
"""

import numpy as np

import autograd_dag as ad
from autograd_dag.core import apply
from tests.cases import Case


def _normal(*shapes):
    return lambda rng: tuple(rng.standard_normal(s) for s in shapes)


def _fixed(*arrays):
    return lambda rng: tuple(np.array(a, dtype=float) for a in arrays)


def _along(x, axis, fn):
    """fn applied to each 1-D slice of x along ``axis`` (fn maps a list to a list)."""
    moved = np.moveaxis(x, axis, -1)
    rows = int(np.prod(moved.shape[:-1]))
    width = len(fn([0.5] * moved.shape[-1]))
    out = np.array([fn(list(row)) for row in moved.reshape(rows, moved.shape[-1])]).reshape(rows, width)
    return np.moveaxis(out.reshape(moved.shape[:-1] + (width,)), -1, axis)


def _cumsum_ref(axis):
    def ref(x):
        if axis is None:
            x = x.reshape(-1)
        a = 0 if axis is None else axis % x.ndim
        n = x.shape[a]
        return np.moveaxis(np.tensordot(np.tri(n), np.moveaxis(x, a, 0), 1), 0, a)
    return ref


def _running_product(row):
    out, p = [], 1.0
    for v in row:
        p *= v
        out.append(p)
    return out


def _cumprod_ref(axis):
    def ref(x):
        if axis is None:
            return np.array(_running_product(list(x.reshape(-1))))
        return _along(x, axis % x.ndim, _running_product)
    return ref


def _prod_ref(axis, keepdims=False):
    def ref(x):
        axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in np.atleast_1d(axis))
        rest = [a for a in range(x.ndim) if a not in axes]
        moved = np.transpose(x, rest + list(axes)).reshape([x.shape[a] for a in rest] + [-1])
        out = np.ones(moved.shape[:-1])
        for idx in np.ndindex(moved.shape[:-1]):
            for v in moved[idx]:
                out[idx] *= v
        if keepdims:
            out = out.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
        return out
    return ref


CASES = []

# ------------------------------------------------------------- cumsum
for shape, axis in [((5,), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((2, 3), None), ((0, 3), 0)]:
    CASES.append(Case("cumsum", lambda x, a=axis: ad.cumsum(x, a), _normal(shape), _cumsum_ref(axis),
                      id=f"cumsum-{shape}-ax{axis}"))
CASES += [
    Case("cumsum", lambda x: apply(ad.PRIMITIVES["cumsum"], x, axis=1, reverse=True), _normal((2, 4)),
         lambda x: _cumsum_ref(1)(x[:, ::-1])[:, ::-1], id="cumsum-reverse"),
    Case("cumsum", lambda x: np.cumsum(x, axis=0), _normal((3, 2)), _cumsum_ref(0), id="cumsum-np_dispatch"),
    Case("cumsum", lambda x: x.cumsum(1), _normal((2, 3)), _cumsum_ref(1), id="cumsum-method"),
]

# ------------------------------------------------------------ cumprod
for shape, axis in [((5,), None), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((0, 3), 0)]:
    CASES.append(Case("cumprod", lambda x, a=axis: ad.cumprod(x, a), _normal(shape), _cumprod_ref(axis),
                      id=f"cumprod-{shape}-ax{axis}"))
CASES += [
    Case("cumprod", lambda x: ad.cumprod(x, -1), _fixed([[1.5, 0.0, -2.0, 0.7], [0.0, 1.2, 0.9, -1.1]]),
         _cumprod_ref(-1), id="cumprod-one_zero_per_row"),
    Case("cumprod", lambda x: apply(ad.PRIMITIVES["cumprod"], x, axis=0, reverse=True),
         _fixed([1.5, -0.8, 0.0, 2.0]), lambda x: _cumprod_ref(0)(x[::-1])[::-1], id="cumprod-reverse_zero"),
    Case("cumprod", lambda x: np.cumprod(x), _normal((2, 2)), _cumprod_ref(None), id="cumprod-np_dispatch"),
    Case("cumprod", lambda x: x.cumprod(0), _normal((3, 2)), _cumprod_ref(0), id="cumprod-method"),
]



def _scan_ref(axis, reverse):
    """y_i = b_i + a_i y_{i-1} (y_{i+1} if reverse) along ``axis``, one step at a time."""
    def ref(a, b):
        a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
        order = range(a.shape[-1] - 1, -1, -1) if reverse else range(a.shape[-1])
        y, previous = np.zeros_like(b), np.zeros(b.shape[:-1])
        for i in order:
            y[..., i] = previous = b[..., i] + a[..., i] * previous
        return np.moveaxis(y, -1, axis)
    return ref


# (cumprod's derivative) The three-pass formula on normal values; doubling where a has zeros.
CASES += [
    Case("linear_scan", lambda a, b: apply(ad.PRIMITIVES["linear_scan"], a, b, axis=1, reverse=False),
         _normal((2, 5), (2, 5)), _scan_ref(1, False), id="linear_scan"),
    Case("linear_scan", lambda a, b: apply(ad.PRIMITIVES["linear_scan"], a, b, axis=0, reverse=True),
         lambda rng: (np.array([[0.5, 0.0], [0.0, -1.2], [2.0, 0.0], [1.1, 0.3]]), rng.standard_normal((4, 2))),
         _scan_ref(0, True), id="linear_scan-zeros_reverse"),
]

# --------------------------------------------------------------- prod
for shape, axis, keepdims in [((5,), None, False), ((3, 4), 1, False), ((3, 4), 0, True),
                              ((2, 3, 4), (0, 2), False), ((2, 3, 4), (2, 1), True), ((0, 3), 0, False),
                              ((4, 1), -1, False)]:
    CASES.append(Case("prod", lambda x, a=axis, k=keepdims: ad.prod(x, a, keepdims=k), _normal(shape),
                      _prod_ref(axis, keepdims), id=f"prod-{shape}-ax{axis}-k{int(keepdims)}"))
CASES += [
    Case("prod", ad.prod, _fixed([1.5, 0.0, -2.0, 0.7]), _prod_ref(None), id="prod-one_zero"),
    Case("prod", ad.prod, _fixed([1.5, 0.0, -2.0, 0.0]), _prod_ref(None), id="prod-two_zeros"),
    Case("prod", lambda x: ad.prod(x, axis=(0, 1)), _fixed([[0.0, 2.0], [3.0, 0.0]]), _prod_ref((0, 1)),
         id="prod-two_zeros_two_axes"),
    Case("prod", lambda x: np.prod(x, axis=1), _normal((2, 3)), _prod_ref(1), id="prod-np_dispatch"),
    Case("prod", lambda x: x.prod(), _normal((2, 3)), _prod_ref(None), id="prod-method"),
]

# --------------------------------------------------------------- norm


def _vector_norm_ref(p, axis=None, keepdims=False):
    def ref(x):
        def norm(row):
            a = np.abs(np.array(row))
            if p == np.inf:
                return [np.sort(a)[-1]]
            if p == -np.inf:
                return [np.sort(a)[0]]
            if p == 0:
                return [float(np.count_nonzero(a))]
            return [np.sum(a ** p) ** (1.0 / p)]
        if axis is None:
            out = np.array(norm(list(x.reshape(-1)))[0])
            return out.reshape((1,) * x.ndim) if keepdims else out
        out = _along(x, axis % x.ndim, norm)
        return out if keepdims else np.squeeze(out, axis % x.ndim)
    return ref


for p, axis, keepdims, shape in [(None, None, False, (5,)), (None, None, False, (3, 4)), (2, 1, False, (3, 4)),
                                 (None, 0, True, (3, 4)), (None, -1, False, (0, 3))]:
    CASES.append(Case("norm", lambda x, p=p, a=axis, k=keepdims: ad.norm(x, p, a, k), _normal(shape),
                      _vector_norm_ref(2, axis, keepdims), id=f"norm-ord{p}-{shape}-ax{axis}-k{int(keepdims)}"))
CASES += [
    Case("norm", lambda x: ad.norm(x, "fro"), _normal((3, 4)), _vector_norm_ref(2), id="norm-fro"),
    Case("norm", lambda x: ad.norm(x, axis=(0, 2), keepdims=True), _normal((2, 3, 4)),
         lambda x: np.sqrt(np.einsum("ijk,ijk->j", x, x)).reshape(1, 3, 1), id="norm-fro_axes"),
    Case("norm", lambda x: np.linalg.norm(x, axis=1), _normal((2, 3)), _vector_norm_ref(2, 1),
         id="norm-np_linalg"),
    Case("abs", lambda x: ad.norm(x, 1), _normal((5,)), _vector_norm_ref(1), id="abs-norm_ord1"),
    Case("max", lambda x: ad.norm(x, np.inf, axis=1), _normal((3, 4)), _vector_norm_ref(np.inf, 1),
         id="max-norm_ordinf"),
    Case("min", lambda x: ad.norm(x, -np.inf), _normal((4,)), _vector_norm_ref(-np.inf), id="min-norm_ord-inf"),
    Case("power", lambda x: ad.norm(x, 3, axis=0), _normal((4, 2)), _vector_norm_ref(3, 0), id="power-norm_ord3"),
    Case("not_equal", lambda x: ad.norm(x, 0), _normal((5,)), _vector_norm_ref(0), id="not_equal-norm_ord0"),
]

# ----------------------------------------------------------- std, var


def _std_ref(axis=None, ddof=0, keepdims=False, square=False):
    def ref(x):
        def s(row):
            r = np.array(row)
            c = r - sum(row) / len(row)
            v = sum(c * c) / (len(row) - ddof)
            return [v if square else np.sqrt(v)]
        if axis is None:
            out = np.array(s(list(x.reshape(-1)))[0])
            return out.reshape((1,) * x.ndim) if keepdims else out
        out = _along(x, axis % x.ndim, s)
        return out if keepdims else np.squeeze(out, axis % x.ndim)
    return ref


CASES += [
    Case("norm", ad.std, _normal((5,)), _std_ref(), id="norm-std"),
    Case("norm", lambda x: ad.std(x, 0, ddof=1), _normal((4, 3)), _std_ref(0, 1), id="norm-std_ddof1"),
    Case("norm", lambda x: x.std(axis=-1, keepdims=True), _normal((2, 3)), _std_ref(-1, 0, True),
         id="norm-std_method"),
    Case("norm", lambda x: np.std(x, axis=1, ddof=1), _normal((2, 4)), _std_ref(1, 1), id="norm-std_np"),
    Case("mean", lambda x: ad.var(x, 1, ddof=1), _normal((3, 4)), _std_ref(1, 1, square=True),
         id="mean-var_ddof1"),
    Case("mean", lambda x: np.var(x, ddof=2), _normal((5,)), _std_ref(None, 2, square=True), id="mean-var_np"),
    Case("mean", lambda x: x.var(0), _normal((3, 2)), _std_ref(0, square=True), id="mean-var_method"),
]

# --------------------------------------------------------------- diff


def _diff_ref(n, axis):
    def ref(x):
        def d(row):
            for _ in range(n):
                row = [b - a for a, b in zip(row[:-1], row[1:])]
            return row
        return _along(x, axis % x.ndim, d)
    return ref


CASES += [
    Case("subtract", ad.diff, _normal((5,)), _diff_ref(1, -1), id="subtract-diff"),
    Case("subtract", lambda x: ad.diff(x, 2, axis=0), _normal((5, 3)), _diff_ref(2, 0), id="subtract-diff_n2"),
    Case("subtract", lambda x: np.diff(x, axis=1), _normal((2, 4)), _diff_ref(1, 1), id="subtract-diff_np"),
    Case("concatenate", lambda x: ad.diff(x, prepend=0.0, append=np.array([1.0, 2.0])), _normal((3,)),
         lambda x: _diff_ref(1, 0)(np.array([0.0, *x, 1.0, 2.0])), id="concatenate-diff_prepend_append"),
]

# -------------------------------------------------------- sort, argsort


def _sorted_ref(axis):
    def ref(x):
        if axis is None:
            return np.array(sorted(x.reshape(-1)))
        return _along(x, axis % x.ndim, sorted)
    return ref


def _argsort_ref(axis):
    def ref(x):
        def order(row):
            return sorted(range(len(row)), key=lambda i: (row[i], i))
        if axis is None:
            return np.array(order(list(x.reshape(-1))), dtype=np.intp)
        return _along(x, axis % x.ndim, order).astype(np.intp)
    return ref


for shape, axis in [((5,), -1), ((3, 4), 0), ((3, 4), -1), ((2, 3), None), ((0, 3), 1)]:
    CASES.append(Case("sort", lambda x, a=axis: ad.sort(x, a), _normal(shape), _sorted_ref(axis),
                      id=f"sort-{shape}-ax{axis}"))
    CASES.append(Case("argsort", lambda x, a=axis: ad.argsort(x, a), _normal(shape), _argsort_ref(axis),
                      wrt=(), id=f"argsort-{shape}-ax{axis}"))
CASES += [
    Case("sort", lambda x: np.sort(x), _normal((2, 3)), _sorted_ref(-1), id="sort-np_dispatch"),
    Case("sort", ad.sort, _fixed([2.0, 1.0, 2.0, 1.0]), _sorted_ref(-1), wrt=(), id="sort-ties_value"),
    Case("argsort", ad.argsort, _fixed([2.0, 1.0, 2.0, 1.0]), _argsort_ref(-1), wrt=(), id="argsort-ties_stable"),
    Case("argsort", lambda x: x.argsort(0), _normal((3, 2)), _argsort_ref(0), wrt=(), id="argsort-method"),
]

# -------------------------------------------------------------- argmin


def _argmin_ref_last(x):
    return np.array([[1.0 if j == min(range(len(r)), key=lambda k: (r[k], k)) else 0.0 for j in range(len(r))]
                     for r in x.reshape(-1, x.shape[-1])]).reshape(x.shape)


CASES += [
    Case("argmin", ad.argmin, _normal((3, 5)), _argmin_ref_last, wrt=(0,), id="argmin-(3,5)-ax-1"),
    Case("argmin", lambda x: ad.argmin(x, 0), _normal((4, 2)), lambda x: _argmin_ref_last(x.T).T, wrt=(0,),
         id="argmin-(4,2)-ax0"),
    Case("argmin", lambda x: ad.argmin(x, None), _normal((2, 3)),
         lambda x: _argmin_ref_last(x.reshape(1, -1)).reshape(x.shape), wrt=(0,), id="argmin-(2,3)-axNone"),
    Case("argmin", ad.argmin, _fixed([3.0, 1.0, 1.0]), lambda x: np.array([0.0, 1.0, 0.0]), wrt=(),
         id="argmin-tie_first"),
]

# ------------------------------------------------------------- any, all


def _zero_one(*shape):
    return lambda rng: (rng.integers(0, 2, shape).astype(float),)


CASES += [
    Case("any", ad.any, _zero_one(3, 4), lambda x: np.array(max(x.reshape(-1)) != 0), wrt=(), id="any-all_axes"),
    Case("any", lambda x: ad.any(x, 1, keepdims=True), _zero_one(3, 4),
         lambda x: np.array([[max(r) != 0] for r in x]), wrt=(), id="any-axis1"),
    Case("all", ad.all, _zero_one(3, 4), lambda x: np.array(min(abs(x.reshape(-1))) != 0), wrt=(), id="all-all_axes"),
    Case("all", lambda x: x.all(axis=0), _zero_one(3, 4),
         lambda x: np.array([min(abs(c)) != 0 for c in x.T]), wrt=(), id="all-axis0_method"),
    Case("any", lambda x: x.any(), _normal((0, 2)), lambda x: np.array(False), wrt=(), id="any-empty"),
    Case("all", ad.all, _normal((0, 2)), lambda x: np.array(True), wrt=(), id="all-empty"),
]

# ------------------------------------------------ median, nansum, nanmean, nanmax, nanmin


def _slices_ref(fn, axis, keepdims=False):
    """fn (a list of floats -> a float) over the axes ``axis`` of x, written out with Python lists."""
    def ref(x):
        axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in np.atleast_1d(axis))
        rest = [a for a in range(x.ndim) if a not in axes]
        moved = np.transpose(x, rest + sorted(axes))
        rows = moved.reshape(int(np.prod([x.shape[a] for a in rest])), -1)
        out = np.array([fn([float(v) for v in row]) for row in rows]).reshape([x.shape[a] for a in rest])
        return out.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)]) if keepdims else out
    return ref


def _middle(row):
    s, n = sorted(row), len(row)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _numbers(row):
    return [v for v in row if v == v]


CASES += [
    Case("sort", ad.median, _normal((5,)), _slices_ref(_middle, None), id="sort-median_odd"),
    Case("sort", lambda x: ad.median(x, axis=1), _normal((3, 4)), _slices_ref(_middle, 1), id="sort-median_even"),
    Case("sort", lambda x: np.median(x, axis=(0, 2), keepdims=True), _normal((2, 3, 3)),
         _slices_ref(_middle, (0, 2), True), id="sort-median_axes_np"),
    Case("sort", lambda x: np.median(x, 0), _normal((1, 3)), _slices_ref(_middle, 0), id="sort-median_one_entry"),
    Case("sum", lambda x: np.nansum(x, axis=0), _normal((3, 4)), _slices_ref(lambda r: sum(_numbers(r)), 0),
         id="sum-nansum_np"),
    Case("sum", lambda x: ad.nanmean(x, (0, 1), keepdims=True), _normal((2, 3, 2)),
         _slices_ref(lambda r: sum(_numbers(r)) / len(_numbers(r)), (0, 1), True), id="sum-nanmean"),
    Case("max", lambda x: np.nanmax(x, axis=-1), _normal((3, 4)), _slices_ref(lambda r: sorted(_numbers(r))[-1], -1),
         id="max-nanmax_np"),
    Case("min", lambda x: ad.nanmin(x), _normal((2, 3)), _slices_ref(lambda r: sorted(_numbers(r))[0], None),
         id="min-nanmin"),
]
