"""Products: the linear and bilinear primitives of linear algebra, and the composites made of them.

Primitives: ``matmul``, ``linear`` (x Wᵀ + b, a layer's product and bias as one
node) and ``einsum``. matmul and einsum are multilinear: each declares its
transpose in every operand (``bilinear=True``), its JVP follows; linear is
affine and states its pair. Their VJPs and JVPs are matmuls and einsums of
the cotangent or tangents with the other operands;
un-broadcasting of batch dimensions goes through :func:`sum_to_shape`, as for
every broadcasting primitive. Composites of them and of views of a matrix's
entries (numpy.linalg's names): ``multi_dot``, ``vecdot``, ``outer``,
``trace``, ``diagonal``, ``matrix_transpose``.
"""

from __future__ import annotations

import builtins
import math
import string

import numpy as np

from ...core import Tensor, apply
from ...errors import ShapeError
from ...modes import _per_thread
from ..elementwise import add, astype, multiply
from ..indexing import getitem
from ..batch import batch_size, lift_rank, materialize
from ..registry import defprim
from ..shapes import fmt
from ..structure import RESHAPE, TRANSPOSE, broadcast_to, reshape, sum, sum_to_shape, swapaxes, transpose
from .base import _require_matrix, _shape_of, _T

# ----------------------------------------------------------------- matmul


def _matmul_rule(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if len(sa) == 0 or len(sb) == 0:
        raise ShapeError(f"matmul: Expect: operands with at least 1 dimension (use multiply for "
                         f"scalars). Actual: {fmt(sa)} @ {fmt(sb)}")
    k_b = sb[0] if len(sb) == 1 else sb[-2]
    if sa[-1] != k_b:
        which = "b.shape[0]" if len(sb) == 1 else "b.shape[-2]"
        raise ShapeError(f"matmul: Expect: a.shape[-1] == {which}. Actual: {fmt(sa)} @ {fmt(sb)}")
    try:
        batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ShapeError(f"matmul: Expect: batch dimensions that broadcast together. "
                         f"Actual: {fmt(sa[:-2])} and {fmt(sb[:-2])} from {fmt(sa)} @ {fmt(sb)}") from None
    shape = batch + sa[-2:-1] + sb[-1:] * (len(sb) > 1)
    return shape, np.result_type(a.dtype, b.dtype)


def _as_matrix(t, shape):
    return t if t.shape == shape else reshape(t, shape)


def _matrices(ct, a, b):
    # Work with the matrices numpy promotes 1-D operands to: a (k,) is (1, k),
    # b (k,) is (k, 1); the output then has those size-1 axes too.
    a2 = a.shape if a.ndim > 1 else (1,) + a.shape
    b2 = b.shape if b.ndim > 1 else b.shape + (1,)
    batch, other = tuple(a2[:-2]), tuple(b2[:-2])
    if other and batch != other:   # (np.broadcast_shapes took 2 µs, in every product's VJP)
        batch = np.broadcast_shapes(batch, other) if batch else other
    return _as_matrix(ct, batch + (a2[-2], b2[-1])), a2, b2


# One rule per operand (the sweep then computes only the cotangents it needs:
# not the input's in x @ W when x is data). An operand shared by a batch
# (a 2-D W against a (B, T, k) x) gets its cotangent from ONE product over
# the flattened batch, not a batched product summed afterwards (2.3x slower,
# see DESIGN.md, Performance).
def _bare(*operands) -> bool:
    """Whether a rule runs in a bare sweep on plain arrays: its direct path may then call the impls itself.

    The eager ``backward()`` (and every sweep that records nothing) runs these rules on ndarrays,
    where each front-end call (``reshape``, ``swapaxes``, ``matmul``) would go through ``apply``'s
    bare branch to the same impl: the direct paths below call those impls (``_matmul_impl``,
    ``ndarray.reshape``, ``ndarray.transpose``) on the same operands in the same order, so the
    cotangents are the same arrays, bit for bit (tests/test_bare_vjps.py). A recorded sweep
    (``create_graph``, nested transformations) passes Tensors and takes the general path.
    """
    if not _per_thread.modes.bare:
        return False
    for x in operands:
        if type(x) is not np.ndarray:
            return False
    return True


def _matmul_vjp_a(ct, a, b):
    if a.ndim > 1 and b.ndim > 1 and _bare(ct, a, b):
        return _matmul_vjp_a_bare(ct, a, b)
    ct2, a2, b2 = _matrices(ct, a, b)
    bm = _as_matrix(b, b2)
    if len(b2) == 2 and len(a2) > 2 and tuple(a2[:-2]) == tuple(ct2.shape[:-2]):
        # x (B, T, k) @ W: the cotangent of x as one (B·T, n) × (n, k) product.
        rows = math.prod(a2[:-1])  # (not -1: with k or n of size 0 there is no row length to infer)
        da = reshape(matmul(reshape(ct2, (rows, b2[-1])), swapaxes(bm, -1, -2)), a2)
    else:
        da = sum_to_shape(matmul(ct2, swapaxes(bm, -1, -2)), a2)
    return _as_matrix(da, a.shape)


def _inner_products(a, ct):
    """aᵀ ct for matrices a (m, k) and ct (m, n), the (k, n) cotangent of a weight.

    When k > n it is computed as (ctᵀ a)ᵀ: OpenBLAS runs these long-m
    products with the shorter side as the rows of its result up to a quarter
    faster (k = 512, n = 128, m = 1024: 3.1 ms against 3.9 ms in float64), and
    the transpose is a view. It is also the layout of an ``x @ W.T`` weight
    after the transpose's own VJP.
    """
    if a.shape[-1] > ct.shape[-1]:
        return swapaxes(matmul(swapaxes(ct, -1, -2), a), -1, -2)
    return matmul(swapaxes(a, -1, -2), ct)


def _inner_products_bare(a, ct):
    """:func:`_inner_products` on plain arrays (a bare sweep): the same impls, called directly."""
    if a.shape[-1] > ct.shape[-1]:
        product = MATMUL.impl(_swap(ct), a)
        return _swap(product)
    return MATMUL.impl(_swap(a), ct)


def _swap(x):
    """``swapaxes(x, -1, -2)`` in a bare sweep: the transpose impl with the axes swapaxes passes it."""
    n = x.ndim
    return TRANSPOSE.impl(x, axes=tuple(range(n - 2)) + (n - 1, n - 2))


def _reshaped(x, shape: tuple):
    """``reshape(x, shape)`` in a bare sweep, ``shape`` valid: the reshape impl."""
    return RESHAPE.impl(x, shape=shape)


# (The direct paths call the impls through their primitives, as apply's bare branch does: what
# benchmarks/profile_eager.py times as the step's numpy work stays all of it.)
def _matmul_vjp_a_bare(ct, a, b):
    """:func:`_matmul_vjp_a` for matrices (or stacks) a and b in a bare sweep (see :func:`_bare`)."""
    a2, b2 = a.shape, b.shape
    if len(b2) == 2 and len(a2) > 2 and a2[:-2] == ct.shape[:-2]:
        rows = math.prod(a2[:-1])
        return _reshaped(MATMUL.impl(_reshaped(ct, (rows, b2[-1])), _swap(b)), a2)
    da = MATMUL.impl(ct, _swap(b))
    return da if da.shape == a2 else sum_to_shape(da, a2)


def _matmul_vjp_b_bare(ct, a, b):
    """:func:`_matmul_vjp_b` for matrices (or stacks) a and b in a bare sweep (see :func:`_bare`)."""
    a2, b2 = a.shape, b.shape
    if len(b2) == 2 and len(a2) > 2 and a2[:-2] == ct.shape[:-2]:
        rows = math.prod(a2[:-1])
        return _inner_products_bare(_reshaped(a, (rows, a2[-1])), _reshaped(ct, (rows, b2[-1])))
    if len(a2) == 2 and len(b2) == 2:
        return _inner_products_bare(a, ct)
    db = MATMUL.impl(_swap(a), ct)
    return db if db.shape == b2 else sum_to_shape(db, b2)


def _matmul_vjp_b(ct, a, b):
    if a.ndim > 1 and b.ndim > 1 and _bare(ct, a, b):
        return _matmul_vjp_b_bare(ct, a, b)
    ct2, a2, b2 = _matrices(ct, a, b)
    am = _as_matrix(a, a2)
    if len(b2) == 2 and len(a2) > 2 and tuple(a2[:-2]) == tuple(ct2.shape[:-2]):
        # b shared across a's batch: (Σ_batch aᵀ ct) as one (k, B·m) × (B·m, n) product.
        rows = math.prod(a2[:-1])
        db = _inner_products(reshape(am, (rows, a2[-1])), reshape(ct2, (rows, b2[-1])))
    elif len(a2) == 2 and len(b2) == 2:
        db = _inner_products(am, ct2)
    else:
        db = sum_to_shape(matmul(swapaxes(am, -1, -2), ct2), b2)
    return _as_matrix(db, b.shape)


def _matmul_batch(prim, args, batched):
    a, b = args
    a_vector, b_vector = a.ndim - batched[0] == 1, b.ndim - batched[1] == 1
    # A vector operand is made a matrix (a row for a, a column for b), as
    # matmul does internally, so that the batch axis is never taken for it.
    if a_vector:
        a = reshape(a, tuple(a.shape[:-1]) + (1, a.shape[-1]))
    if b_vector:
        b = reshape(b, tuple(b.shape) + (1,))
    rank = max(a.ndim - batched[0], b.ndim - batched[1])
    out = apply(prim, lift_rank(a, rank) if batched[0] else a, lift_rank(b, rank) if batched[1] else b)
    if a_vector or b_vector:
        drop = {out.ndim - 2} if a_vector else set()
        drop |= {out.ndim - 1} if b_vector else set()
        out = reshape(out, tuple(d for i, d in enumerate(out.shape) if i not in drop))
    return out


def _matmul_impl(a, b):
    # A stack (..., m, k) against one matrix (k, n) is one (… · m, k) × (k, n)
    # product when the stack's rows are contiguous: np.matmul would call BLAS
    # once per matrix of the stack (16 × (64, 128) × (128, 512) in the
    # Transformer's feed-forward layer: 3.2 ms against 2.9 ms in float64).
    if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous:
        rows = math.prod(a.shape[:-1])  # (not -1: a size-0 stack has no row length to infer)
        return np.matmul(a.reshape(rows, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[-1:])
    if _transposed_stack(b):
        b = np.ascontiguousarray(b)
    return np.matmul(a, b)


# The largest matrices of a stack whose transposed layout is copied first, and their longest
# contraction (see _transposed_stack).
_SMALL_MATRIX, _SHORT_CONTRACTION = 64 * 64, 64


def _transposed_stack(b) -> bool:
    """Whether ``b`` is a stack of small transposed matrices (a swapaxes view), cheaper copied than multiplied.

    numpy calls BLAS once per matrix of a stack; OpenBLAS multiplies a small
    matrix by a transposed one (``K.T`` in attention's Q Kᵀ, ``V.T`` in its
    VJP ``ct Vᵀ``) much slower than by a row-major one: 64 matrices
    (64, 32) @ (32, 64) take 0.43 ms with the right operand a swapaxes view,
    0.27 ms with it C-ordered, and the copy 0.08 ms (float64, glibc's heap
    kept as a program keeps it). Copy and product against the product alone,
    64 matrices, (m, k, n): (64, 32, 64) 0.36 / 0.42 ms, (64, 64, 32) 0.35 /
    0.41, (64, 64, 64) 0.71 / 0.74; not for a longer contraction, (32, 128,
    32) 0.46 / 0.37, nor larger matrices, 16 × (128, 128, 128) 1.16 / 0.81.
    float32: (64, 32, 64) 0.155 / 0.216 ms. Not complex (its copy costs more
    than it saves: (64, 32, 64) 1.34 / 1.11), nor types BLAS does not take.
    Figures: ``python benchmarks/bench_matmul_stack.py`` (its second table).
    """
    return (b.ndim > 2 and b.dtype.char in "fd" and b.strides[-2] == b.itemsize and b.shape[-1] > 1
            and b.shape[-2] <= _SHORT_CONTRACTION
            and b.shape[-2] * b.shape[-1] <= _SMALL_MATRIX and not b.flags.c_contiguous)


# Bilinear: the transpose in each operand states the derivative once (JVP ṫa @ b + a @ ṫb).
MATMUL = defprim("matmul", _matmul_impl, transpose=(_matmul_vjp_a, _matmul_vjp_b), bilinear=True,
                 shape=_matmul_rule, batch=_matmul_batch)


def matmul(a, b) -> Tensor:
    """Matrix product with numpy semantics (``a @ b``).

    Shapes: (..., m, k) @ (..., k, n) -> (..., m, n) with the batch dimensions
    broadcast; a 1-D ``a`` (k,) acts as a row and a 1-D ``b`` (k,) as a column,
    whose axis is then dropped from the result.
    Example: ``ad.matmul(ad.Tensor(np.ones((2, 3))), ad.Tensor(np.ones(3))).value`` is ``[3., 3.]``.
    """
    return apply(MATMUL, a, b)

# ----------------------------------------------------------------- linear


def _linear_rule(x, w, b):
    sx, sw, sb = tuple(x.shape), tuple(w.shape), tuple(b.shape)
    if len(sw) != 2 or len(sx) < 1 or sx[-1] != sw[1] or sb != sw[:1]:
        raise ShapeError(f"linear: Expect: x (..., in), W (out, in) and b (out,). Actual: x {fmt(sx)}, "
                         f"W {fmt(sw)}, b {fmt(sb)}")
    return sx[:-1] + sw[:1], np.result_type(x.dtype, w.dtype, b.dtype)


def _linear_impl(x, w, b):
    out = _matmul_impl(x, w.T)
    if out.dtype != np.result_type(out, b):
        return out + b
    out += b  # into the product's own fresh array: no second array of the output's size
    return out


def _rows(t, width: int):
    # (math.prod of the shape's ints: np.prod took 4.6 µs, three times in every linear node's VJP)
    return _as_matrix(t, (math.prod(t.shape[:-1]), width))


def _rows_bare(t, width: int):
    shape = (math.prod(t.shape[:-1]), width)
    return t if t.shape == shape else _reshaped(t, shape)


def _linear_vjp_x(ct, out, x, w, b):
    # One (rows, out) × (out, in) product over all of x's leading axes.
    if _bare(ct, x, w):  # (the same impls, called directly: see _bare)
        dx = MATMUL.impl(_rows_bare(ct, w.shape[0]), w)
        return dx if dx.shape == x.shape else _reshaped(dx, x.shape)
    return _as_matrix(matmul(_rows(ct, w.shape[0]), w), x.shape)


def _linear_vjp_w(ct, out, x, w, b):
    # ctᵀ x over all rows, the shorter side first (see _inner_products).
    if _bare(ct, x, w):
        return _inner_products_bare(_rows_bare(ct, w.shape[0]), _rows_bare(x, w.shape[1]))
    return _inner_products(_rows(ct, w.shape[0]), _rows(x, w.shape[1]))


def _linear_jvp(t, out, x, w, b):
    tx, tw, tb = t
    terms = [matmul(tx, transpose(w)) if tx is not None else None,
             matmul(x, transpose(tw)) if tw is not None else None, tb]
    terms = [term for term in terms if term is not None]
    total = terms[0]
    for term in terms[1:]:
        total = add(total, term)
    return broadcast_to(total, out.shape)


def _linear_batch(prim, args, batched):
    x, w, b = args
    if not batched[1] and not batched[2]:
        return apply(prim, x, w, b)  # the batch axis of x is one more row axis
    size = batch_size(args, batched)
    if not batched[0]:
        x = materialize(x, size)
    vector = x.ndim == 2  # each example is one row (in,)
    if vector:
        x = reshape(x, (size, 1, x.shape[-1]))
    wt = lift_rank(swapaxes(w, -1, -2), x.ndim - 1) if batched[1] else transpose(w)
    y = matmul(x, wt)
    y = add(y, lift_rank(b, y.ndim - 1) if batched[2] else b)
    return reshape(y, (size, y.shape[-1])) if vector else y


# Hand-written pair: affine (bilinear in x, W plus b): neither declaration fits; the JVP is two products and b.
LINEAR = defprim("linear", _linear_impl, vjp=(_linear_vjp_x, _linear_vjp_w, lambda ct, out, x, w, b: sum_to_shape(
                 ct, b.shape)), jvp=_linear_jvp, shape=_linear_rule, batch=_linear_batch)


def linear(x, w, b) -> Tensor:
    """The affine map x Wᵀ + b on the last axis, as one primitive (a layer's matmul and bias add).

    One array of the output's size: the bias is added into the product in
    place, where ``add(matmul(x, transpose(W)), b)`` keeps both the product and
    the sum. The derivatives are the matmul's and the bias's: rows of every
    leading axis go through one product each.
    Shapes: x (..., in), W (out, in), b (out,) -> (..., out).
    Example: ``ad.primitives.linalg.linear(np.ones((2, 3)), np.ones((4, 3)), np.zeros(4)).shape`` is ``(2, 4)``.
    """
    return apply(LINEAR, x, w, b)

# ----------------------------------------------------------------- einsum

_LETTERS = set(string.ascii_letters)


def _sublist_letters(sub) -> str:
    text = []
    for item in sub:
        if item is Ellipsis:
            text.append("...")
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool) and 0 <= item < 52:
            text.append(string.ascii_letters[int(item)])
        else:
            raise ShapeError(f"einsum: Expect: subscript lists of integers in [0, 52) and Ellipsis. "
                             f"Actual: {item!r} in {sub!r}")
    return "".join(text)


def _from_interleaved(args):
    """numpy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`` as (subscripts, operands)."""
    args = list(args)
    out = None
    if len(args) % 2 == 1:
        out = args.pop()
    operands = args[0::2]
    subs = args[1::2]
    for s in subs + ([out] if out is not None else []):
        if not isinstance(s, (list, tuple)):
            raise ShapeError(f"einsum: Expect: a subscripts string, or operands interleaved with subscript "
                             f"lists. Actual: {type(s).__name__} {s!r} where a list was expected")
    text = ",".join(_sublist_letters(s) for s in subs)
    if out is not None:
        text += "->" + _sublist_letters(out)
    return text, tuple(operands)


def _parse_einsum(subscripts: str, shapes: list[tuple[int, ...]]) -> str:
    """``subscripts`` in explicit form ``'ij,jk->ik'`` with any ``...`` spelt out in letters.

    Implicit mode (no ``->``) gives numpy's output: the broadcast ``...`` axes,
    then the letters that appear once, in alphabetical (ASCII) order.
    """
    if not isinstance(subscripts, str):
        raise ShapeError(f"einsum: Expect: a subscripts string such as 'ij,jk->ik'. Actual: {subscripts!r}")
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise ShapeError(f"einsum: Expect: at most one '->'. Actual: {subscripts!r}")
    explicit = "->" in text
    lhs, rhs = text.split("->") if explicit else (text, None)
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"einsum: Expect: one subscript term per operand. Actual: {len(terms)} "
                         f"term(s) in {subscripts!r} for {len(shapes)} operand(s)")
    for term in terms + ([rhs] if explicit else []):
        rest = term.replace("...", "", 1)
        bad = sorted(set(rest) - _LETTERS)
        if bad:
            raise ShapeError(f"einsum: Expect: subscripts made of letters a-z, A-Z and at most one "
                             f"'...' per term. Actual: {bad} in {subscripts!r}")
    # Spell '...' as unused letters, right-aligned like broadcasting: an operand
    # with fewer ellipsis axes takes the last ones.
    unused = [c for c in string.ascii_letters if c not in text]
    n_ell = []
    for term, shape in zip(terms, shapes):
        named = len(term.replace("...", ""))
        if "..." in term:
            if len(shape) < named:
                raise ShapeError(f"einsum: Expect: operand with at least {named} dimensions for "
                                 f"'{term}'. Actual: shape {fmt(shape)}")
            n_ell.append(len(shape) - named)
        else:
            n_ell.append(0)
    width = max(n_ell, default=0)
    if width > len(unused):
        raise ShapeError(f"einsum: Expect: at most 52 distinct axes. Actual: {subscripts!r} with "
                         f"{width} axes under '...'")
    ell = "".join(unused[:width])
    terms = [t.replace("...", ell[width - n:] if n else "") for t, n in zip(terms, n_ell)]
    if explicit:
        if "..." not in rhs and width:
            raise ShapeError(f"einsum: Expect: '...' in the output when the inputs' '...' stands "
                             f"for axes (numpy does not sum them). Actual: {subscripts!r} with "
                             f"operand shapes {', '.join(fmt(s) for s in shapes)}")
        rhs = rhs.replace("...", ell)
    else:
        counts = {}
        for term in terms:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    return ",".join(terms) + "->" + rhs


def _split(subscripts: str) -> tuple[list[str], str]:
    lhs, rhs = subscripts.split("->")
    return lhs.split(","), rhs


def _letter_sizes(name, terms, operands) -> dict[str, int]:
    """The size of each letter; sizes must agree or be 1 (numpy's einsum broadcasts those)."""
    sizes: dict[str, int] = {}
    for term, op in zip(terms, operands):
        if len(term) != len(op.shape):
            raise ShapeError(f"{name}: Expect: {len(term)} dimensions for subscripts '{term}'. "
                             f"Actual: shape {fmt(op.shape)}")
        for c, d in zip(term, op.shape):
            if c in sizes and d != sizes[c] and 1 not in (d, sizes[c]):
                raise ShapeError(f"{name}: Expect: the axes labelled '{c}' to have the same size. "
                                 f"Actual: {sizes[c]} and {d} (operand shapes "
                                 f"{', '.join(fmt(o.shape) for o in operands)})")
            sizes[c] = d if c not in sizes or sizes[c] == 1 else sizes[c]
    return sizes


def _einsum_rule(*operands, subscripts):
    terms, rhs = _split(subscripts)
    if len(terms) != len(operands):
        raise ShapeError(f"einsum: Expect: {len(terms)} operand(s) for {subscripts!r}. "
                         f"Actual: {len(operands)}")
    sizes = _letter_sizes("einsum", terms, operands)
    if len(set(rhs)) != len(rhs):
        raise ShapeError(f"einsum: Expect: each output letter once. Actual: '{rhs}' in {subscripts!r}")
    missing = sorted(set(rhs) - set(sizes))
    if missing:
        raise ShapeError(f"einsum: Expect: output letters that appear in an input. "
                         f"Actual: {missing} in {subscripts!r}")
    return tuple(sizes[c] for c in rhs), np.result_type(*[o.dtype for o in operands])


def _unused_letters(*texts) -> list[str]:
    used = set("".join(texts))
    return [c for c in string.ascii_letters if c not in used]


def _einsum_transpose(ct, *operands, subscripts):
    terms, rhs = _split(subscripts)
    grads = []
    for i, x in enumerate(operands):
        others = [j for j in range(len(operands)) if j != i]
        available = set(rhs).union(*[terms[j] for j in others])
        unique = "".join(dict.fromkeys(terms[i]))
        # Letters only in operand i were summed away: the cotangent is constant
        # along them, so it is computed without them and broadcast back after.
        kept = "".join(c for c in unique if c in available)
        spec = ",".join([rhs] + [terms[j] for j in others]) + "->" + kept
        if len(others) == 0 and kept == rhs:
            g = ct
        else:
            g = apply(EINSUM, ct, *[operands[j] for j in others], subscripts=spec)
        if unique != terms[i]:
            g = _onto_diagonal(g, kept, terms[i], tuple(x.shape), x.dtype, subscripts)
        elif kept != terms[i]:
            g = reshape(g, tuple(g.shape[kept.index(c)] if c in kept else 1 for c in terms[i]))
        # Axes where operand i has size 1 but was broadcast against a larger one.
        g = sum_to_shape(g, tuple(1 if d == 1 else g.shape[k] for k, d in enumerate(x.shape)))
        grads.append(broadcast_to(g, x.shape))
    return tuple(grads)


def _onto_diagonal(g, kept, term, shape, dtype, subscripts):
    """``g`` (letters ``kept``) placed on the diagonals of an operand whose ``term`` repeats letters.

    The transpose of taking a diagonal: an einsum of g with identity matrices
    (one per repeated occurrence, pairing it with a fresh letter) and ones
    (for letters summed away within the operand alone).
    """
    fresh = iter(_unused_letters(subscripts))
    first: dict[str, int] = {}
    out_letters, specs, consts = [], [kept], []
    for pos, c in enumerate(term):
        if c in first:
            f = next(fresh)
            out_letters.append(f)
            specs.append(c + f)
            consts.append(np.eye(shape[first[c]], shape[pos], dtype=dtype))
        else:
            first[c] = pos
            out_letters.append(c)
            if c not in kept:
                specs.append(c)
                consts.append(np.ones(shape[pos], dtype=dtype))
    return apply(EINSUM, g, *consts, subscripts=",".join(specs) + "->" + "".join(out_letters))


def _einsum_batch(prim, args, batched, *, subscripts):
    # The batch axis gets a letter of its own, leading in every batched term and in the output.
    letter = next(c for c in string.ascii_letters if c not in subscripts)
    terms, out = subscripts.split("->")
    terms = [letter + t if b else t for t, b in zip(terms.split(","), batched)]
    return apply(prim, *args, subscripts=",".join(terms) + "->" + letter + out)


# Linear in each operand (multilinear): the transposes state the derivative once (JVP Σᵢ einsum with ṫᵢ).
EINSUM = defprim("einsum", lambda *ops, subscripts: np.einsum(subscripts, *ops),
                 transpose=_einsum_transpose, bilinear=True, shape=_einsum_rule, batch=_einsum_batch)


def einsum(subscripts, *operands, optimize=False) -> Tensor:
    """Einstein summation, as ``np.einsum``: ``einsum('ij,jk->ik', a, b)`` is ``a @ b``.

    One or more operands; implicit mode (no ``->``) and ``...`` follow numpy,
    and so does a letter repeated within one operand (a diagonal: ``'ii->i'``,
    ``'ii->'`` is the trace), differentiable like the rest (its VJP places the
    cotangent back on the diagonal with identity matrices). numpy's interleaved
    form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (integers 0-51 for letters,
    ``...`` as Ellipsis) is accepted too. ``optimize`` is accepted and ignored.
    Shapes: one operand per term; the output has one axis per output letter.
    Example: ``ad.einsum('i,i->', x, y)`` is the inner product of x and y;
    ``ad.einsum(m, [0, 0])`` is the trace of m.
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _from_interleaved((subscripts,) + operands)
    shapes = [tuple(np.shape(o.value if isinstance(o, Tensor) else o)) for o in operands]
    if not operands:
        raise ShapeError("einsum: Expect: at least one operand. Actual: none")
    spec = _parse_einsum(subscripts, shapes)
    return apply(EINSUM, *operands, subscripts=spec)

# ------------------------------------------- products and views of matrices, as composites


def multi_dot(arrays) -> Tensor:
    """The product of a chain of matrices, as ``np.linalg.multi_dot`` (a chain of matmuls, left to right).

    The first array may be 1-D (a row vector) and the last 1-D (a column vector).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.multi_dot([ad.Tensor(np.eye(2)), ad.Tensor([[1.0], [2.0]]), ad.Tensor([[3.0]])]).value
        array([[3.],
               [6.]])
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ShapeError(f"multi_dot: Expect: at least two arrays. Actual: {len(arrays)}")
    # As numpy: only the first and the last may be vectors; a vector in the middle, or a
    # stack of matrices, would make a different product.
    for i, x in enumerate(arrays):
        nd = len(_shape_of(x))
        if nd != 2 and not (nd == 1 and i in (0, len(arrays) - 1)):
            raise ShapeError(f"multi_dot: Expect: 2-D arrays (the first and last may be 1-D). "
                             f"Actual: array {i} of shape {fmt(_shape_of(x))}")
    out = arrays[0]
    for nxt in arrays[1:]:
        out = matmul(out, nxt)
    return out


def trace(x, *, offset: int = 0, dtype=None) -> Tensor:
    """Sum of the diagonal of the last two axes (batched), as ``np.linalg.trace``.

    ``offset`` picks a diagonal above (> 0) or below (< 0) the main one.
    A composite: the diagonal is gathered with ``getitem``, then summed.
    Shapes: (..., m, n) -> (...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.linalg.trace(ad.Tensor([[1.0, 2.0], [3.0, 4.0]])).value)
        5.0
    """
    shape = _shape_of(x)
    _require_matrix("trace", shape)
    out = sum(_diagonal(x, offset), -1)
    return out if dtype is None else astype(out, dtype)


def _diagonal(x, offset: int = 0) -> Tensor:
    """The ``offset`` diagonal of the last two axes: (..., m, n) -> (..., d), a getitem."""
    m, n = _shape_of(x)[-2:]
    offset = int(offset)
    rows = np.arange(builtins.max(0, -offset), m)
    cols = rows + offset
    keep = (cols >= 0) & (cols < n)
    return getitem(x, (Ellipsis, rows[keep], cols[keep]))


def diagonal(x, *, offset: int = 0) -> Tensor:
    """The ``offset`` diagonal of the last two axes (batched), as ``np.linalg.diagonal`` (a getitem).

    Shapes: (..., m, n) -> (..., d).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.diagonal(ad.Tensor([[1.0, 2.0], [3.0, 4.0]])).value
        array([1., 4.])
    """
    _require_matrix("diagonal", _shape_of(x))
    return _diagonal(x, offset)


def matrix_transpose(x) -> Tensor:
    """The last two axes exchanged (batched), as ``np.linalg.matrix_transpose``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> ad.linalg.matrix_transpose(ad.Tensor(np.zeros((4, 2, 3)))).shape
        (4, 3, 2)
    """
    _require_matrix("matrix_transpose", _shape_of(x))
    return _T(x)


def vecdot(x1, x2, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis``, broadcasting the rest, as ``np.linalg.vecdot`` (real).

    Shapes: (..., n), (..., n) -> (...).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> float(ad.linalg.vecdot(ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0])).value)
        11.0
    """
    product = multiply(x1, x2)
    total = sum(product, axis)
    # numpy's vecdot keeps the operands' dtype, where sum widens bool and small integers to int64:
    # a bool vecdot is an OR of ANDs (True, not the count 2), an int8 one wraps in int8.
    return total if total.dtype == product.dtype else astype(total, product.dtype)


def outer(x1, x2) -> Tensor:
    """The outer product of two vectors, as ``np.linalg.outer`` (a broadcast multiply).

    Shapes: (m,), (n,) -> (m, n).

    Example:
        >>> import autograd_dag as ad
        >>> ad.linalg.outer(ad.Tensor([1.0, 2.0]), ad.Tensor([3.0, 4.0])).value
        array([[3., 4.],
               [6., 8.]])
    """
    s1, s2 = _shape_of(x1), _shape_of(x2)
    if len(s1) != 1 or len(s2) != 1:
        raise ShapeError(f"outer: Expect: two vectors. Actual: shapes {fmt(s1)} and {fmt(s2)}")
    return multiply(reshape(x1, s1 + (1,)), reshape(x2, (1,) + s2))
