"""The one lowering table: primitive name -> the ``jax.numpy`` / ``jax.lax`` expression computing it.

A rule is ``rule(J, node, *args) -> array``: ``J`` holds the JAX modules
(``J.jnp``, ``J.lax``, ``J.jax``: imported when :func:`~autograd_dag.jax.lower`
is called, so that this table imports without JAX), ``node`` the
:class:`ProgramNode` (its params, shape and dtype) and ``args`` its operands as
JAX arrays. It returns an array of the node's shape; the lowering casts it to
the node's dtype, where JAX's promotion (int + float32 -> float32) differs
from numpy's (-> float64).

Each rule is the primitive's exact formula, written as a pure function (no
host callback): the fused primitives (layer_norm, softargmax, the cross-entropy
and their derivative primitives) are their defining formulas, so JAX's own
autodiff of a lowered program differentiates the same function ours does.
The value checks the numpy implementations make (an index out of range, a
rank-deficient factor) cannot raise inside a traced JAX function: those
rules compute the value without the check (see :data:`UNCHECKED`).
"""

from __future__ import annotations

import math

import numpy as np

RULES: dict = {}

# Primitives with no JAX lowering: the reason is part of the error message.
UNSUPPORTED: dict[str, str] = {
    "dropout_mask": "its mask comes from numpy's random Generator seeded per example; JAX's counter-based "
                    "PRNG (threefry) cannot draw the same bits without a host callback (lower the model in "
                    "eval mode, where dropout is the identity)",
}

# Primitives lowered without the check their numpy implementation makes on the values (a traced JAX
# function cannot raise on a value): what JAX computes instead.
UNCHECKED: dict[str, str] = {
    "checked_indices": "the identity: an index out of range is not refused (JAX clamps gathers)",
    "checked_mask": "the identity: a mask row with no allowed position is not refused (softmax gives NaN)",
    "take": "an index out of range is clamped, not refused",
    "take_along_axis": "an index out of range is clamped, not refused",
    "qr_full_rank": "the identity: a rank-deficient R is not refused (its derivative is then not finite)",
    "svd_reciprocal": "NaN where the VJP would refuse a zero singular value that is used",
    "svd_complement_unused": "NaN where the VJP would refuse a used extra column of a full_matrices svd",
    "inv": "a singular matrix gives inf/NaN entries instead of an error",
    "solve": "a singular matrix gives inf/NaN entries instead of an error",
    "cholesky": "a matrix that is not positive definite gives NaN instead of an error",
}


def rule(*names):
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return register


def _axis(axis):
    return tuple(axis) if isinstance(axis, (tuple, list)) else axis


# ------------------------------------------------------------ elementwise

# Same name, same semantics in jax.numpy as in numpy (the node's dtype is applied afterwards).
_SAME = ["add", "subtract", "multiply", "divide", "negative", "exp", "log", "sqrt", "tanh", "sign", "abs",
         "maximum", "minimum", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh",
         "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "reciprocal", "square", "exp2", "expm1",
         "log1p", "log2", "log10", "fmax", "fmin", "fmod", "mod", "hypot", "logaddexp", "logaddexp2",
         "isfinite", "isinf", "isnan", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
         "matmul", "clip", "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor", "invert"]


def _same(name):
    def lower(J, node, *args):
        return getattr(J.jnp, "remainder" if name == "mod" else name)(*args)
    return lower


for _name in _SAME:
    RULES[_name] = _same(_name)


@rule("add", "multiply", "maximum", "minimum")
def _arith_or_logical(J, node, x, y):
    # On booleans numpy's + and max are logical or, * and min logical and (jnp's + is too, but say it).
    if node.dtype == np.bool_:
        fn = J.jnp.logical_or if node.op in ("add", "maximum") else J.jnp.logical_and
        return fn(x.astype(bool), y.astype(bool))
    return getattr(J.jnp, node.op)(x, y)


@rule("floor_divide")
def _floor_divide(J, node, x, y):
    # numpy gives 0 for an integer divided by 0 (XLA gives -1 or the type's maximum); floats are jnp's.
    if not J.jnp.issubdtype(node.dtype, J.jnp.integer):
        # A zero quotient takes the sign of x / y, as numpy's (jnp gives -0.0 // -3.0 = -0.0, numpy 0.0).
        q = J.jnp.floor_divide(x, y)
        return J.jnp.where(q == 0, (x / y) * 0, q)
    zero = y == 0
    return J.jnp.where(zero, 0, J.jnp.floor_divide(x, J.jnp.where(zero, 1, y)))


@rule("gcd", "lcm")
def _gcd_lcm(J, node, x, y):
    # On the magnitudes as unsigned integers: jnp.gcd never ends on int64's minimum (its abs stays negative);
    # |INT_MIN| is exact unsigned, and the cast back wraps as numpy's result does.
    u = J.jnp.dtype(f"uint{8 * node.dtype.itemsize}")
    mag = [J.jnp.abs(v).astype(node.dtype).astype(u) for v in (x, y)]
    return getattr(J.jnp, node.op)(*mag).astype(node.dtype)


@rule("identity", "checked_indices", "checked_mask")
def _identity(J, node, x):
    return x


@rule("stop_gradient")
def _stop_gradient(J, node, x):
    return J.lax.stop_gradient(x)


@rule("relu")
def _relu(J, node, x):
    # jax.nn.relu: maximum(x, 0) with relu'(0) = 0, our convention (jnp.maximum's would split the tie).
    return J.jax.nn.relu(x) if J.jnp.issubdtype(x.dtype, J.jnp.inexact) else J.jnp.maximum(x, 0)


@rule("logistic")
def _logistic(J, node, x):
    return J.jax.nn.sigmoid(x.astype(node.dtype))


@rule("logistic_slope")
def _logistic_slope(J, node, x):
    x = x.astype(node.dtype)
    return J.jax.nn.sigmoid(x) * J.jax.nn.sigmoid(-x)


@rule("softplus")
def _softplus(J, node, x):
    return J.jnp.logaddexp(J.jnp.zeros((), node.dtype), x.astype(node.dtype))


@rule("step")
def _step(J, node, x):
    return (x >= 0).astype(node.dtype)


@rule("tie_weights")
def _tie_weights(J, node, x, y):
    return (x > y).astype(node.dtype) + 0.5 * (x == y).astype(node.dtype)


@rule("erf")
def _erf(J, node, x):
    return J.lax.erf(x.astype(node.dtype))


@rule("erfc")
def _erfc(J, node, x):
    return J.lax.erfc(x.astype(node.dtype))


@rule("power")
def _power(J, node, x, y=None):
    e = node.params.get("exponent")
    if e is not None:
        return J.jnp.square(x) if e == 2 and (type(e) is int or x.dtype.kind in "fc") else J.jnp.power(x, e)
    return J.jnp.power(x, y)


@rule("round")
def _round(J, node, x):
    return J.jnp.round(x, node.params.get("decimals", 0))


@rule("nan_to_num")
def _nan_to_num(J, node, x):
    p = node.params
    return J.jnp.nan_to_num(x, nan=p["nan"], posinf=p["posinf"], neginf=p["neginf"])


@rule("where")
def _where(J, node, cond, x, y):
    return J.jnp.where(cond.astype(bool), x, y)


@rule("astype")
def _astype(J, node, x):
    return x.astype(node.dtype)

# ------------------------------------------------------------ structure


@rule("reshape")
def _reshape(J, node, x):
    return J.jnp.reshape(x, node.params["shape"])


@rule("transpose")
def _transpose(J, node, x):
    return J.jnp.transpose(x, node.params["axes"])


@rule("broadcast_to")
def _broadcast_to(J, node, x):
    return J.jnp.broadcast_to(x, node.params["shape"])


@rule("concatenate")
def _concatenate(J, node, *xs):
    return J.jnp.concatenate([x.astype(node.dtype) for x in xs], axis=node.params["axis"])


@rule("flip")
def _flip(J, node, x):
    return J.jnp.flip(x, _axis(node.params["axis"]))


@rule("roll")
def _roll(J, node, x):
    return J.jnp.roll(x, node.params["shift"], _axis(node.params["axis"]))


@rule("pad")
def _pad(J, node, x):
    return J.jnp.pad(x, node.params["pad_width"], constant_values=node.params["value"])


def _static_index(index):
    """A getitem index JAX can trace: boolean masks (static params) as their integer positions."""
    index = index if isinstance(index, tuple) else (index,)
    out = []
    for i in index:
        if isinstance(i, np.ndarray) and i.dtype == np.bool_:
            out.extend(np.nonzero(i))
        else:
            out.append(i)
    return tuple(out)


@rule("getitem")
def _getitem(J, node, x):
    return x[_static_index(node.params["index"])]


@rule("index_add")
def _index_add(J, node, ct):
    # .at[].add accumulates repeated integer indices, as numpy's add.at does.
    out = J.jnp.zeros(node.params["shape"], node.dtype)
    return out.at[_static_index(node.params["index"])].add(ct.astype(node.dtype))

# ------------------------------------------------------------ reductions


def _reduction(name):
    def lower(J, node, x):
        p = node.params
        return getattr(J.jnp, name)(x, axis=_axis(p["axis"]), keepdims=p["keepdims"])
    return lower


for _name in ("sum", "mean", "max", "min", "prod", "all", "any"):
    RULES[_name] = _reduction(_name)


@rule("norm")
def _norm(J, node, x):
    # √Σx², the defining formula (numpy's rescaling against overflow only changes results beyond 1e154).
    x = x.astype(node.dtype)
    p = node.params
    return J.jnp.sqrt(J.jnp.sum(x * x, axis=_axis(p["axis"]), keepdims=p["keepdims"]))


def _cumulative(name):
    def lower(J, node, x):
        axis, fn = node.params["axis"], getattr(J.jnp, name)
        if not node.params["reverse"]:
            return fn(x, axis=axis)
        return J.jnp.flip(fn(J.jnp.flip(x, axis), axis=axis), axis)
    return lower


for _name in ("cumsum", "cumprod"):
    RULES[_name] = _cumulative(_name)


@rule("linear_scan")
def _linear_scan(J, node, a, b):
    # y_0 = b_0, y_i = a_i·y_{i−1} + b_i: an associative scan over the pairs (a, b), composed as affine maps.
    axis, dtype = node.params["axis"], node.dtype
    a, b = J.jnp.moveaxis(a.astype(dtype), axis, -1), J.jnp.moveaxis(b.astype(dtype), axis, -1)

    def compose(first, then):
        return first[0] * then[0], then[0] * first[1] + then[1]

    _, y = J.lax.associative_scan(compose, (a, b), reverse=node.params["reverse"], axis=a.ndim - 1)
    return J.jnp.moveaxis(y, -1, axis)


@rule("sort")
def _sort(J, node, x):
    return J.jnp.sort(x, axis=node.params["axis"])


@rule("argsort")
def _argsort(J, node, x):
    return J.jnp.argsort(x, axis=node.params["axis"], stable=True)


def _extremum_one_hot(pick):
    def lower(J, node, x):
        # One-hot of the first extremum (numpy's and jnp's arg picks the first of ties).
        axis = node.params["axis"]
        if axis is None:
            return J.jax.nn.one_hot(pick(J)(x.reshape(-1)), x.size, dtype=node.dtype).reshape(x.shape)
        where = pick(J)(x, axis=axis, keepdims=True)
        return (J.jnp.arange(x.shape[axis]).reshape([-1 if d == axis % x.ndim else 1 for d in range(x.ndim)])
                == where).astype(node.dtype)
    return lower


RULES["argmax"] = _extremum_one_hot(lambda J: J.jnp.argmax)
RULES["argmin"] = _extremum_one_hot(lambda J: J.jnp.argmin)

# ------------------------------------------------------------ indexing


def _wrapped(J, indices, size):
    """Negative indices counted from the end, as numpy's take does."""
    return J.jnp.where(indices < 0, indices + size, indices)


@rule("take")
def _take(J, node, table, indices):
    axis = node.params["axis"]
    return J.jnp.take(table, _wrapped(J, indices, table.shape[axis]), axis=axis, mode="clip")


@rule("take_add")
def _take_add(J, node, ct, indices):
    size, axis = node.params["size"], node.params["axis"]
    out = J.jnp.zeros(node.shape, node.dtype)
    return out.at[(slice(None),) * axis + (_wrapped(J, indices, size),)].add(ct.astype(node.dtype))


@rule("take_along_axis")
def _take_along_axis(J, node, x, idx):
    axis = node.params["axis"]
    return J.jnp.take_along_axis(x, _wrapped(J, idx, x.shape[axis]), axis=axis, mode="clip")


@rule("put_along_axis_add")
def _put_along_axis_add(J, node, v, idx):
    shape, axis = tuple(node.params["shape"]), node.params["axis"]
    full = tuple(v.shape)
    # The same grids as numpy's implementation: an axis of size 1 the indices broadcast lands on entry 0.
    grids = list(np.ix_(*[np.zeros(1, np.intp) if i == axis else np.arange(d) if d == s else np.zeros(d, np.intp)
                          for i, (d, s) in enumerate(zip(full, shape))]))
    grids[axis] = J.jnp.broadcast_to(_wrapped(J, idx, shape[axis]), full)
    return J.jnp.zeros(shape, node.dtype).at[tuple(grids)].add(v.astype(node.dtype))


@rule("one_hot")
def _one_hot(J, node, indices):
    return (indices[..., None] == J.jnp.arange(node.params["num_classes"])).astype(node.dtype)

# ------------------------------------------------------------ fused


def _shift(J, x, axis):
    """The max over ``axis`` (kept), 0 where it is not finite: exp never overflows, all −inf gives −inf."""
    c = J.jnp.max(x, axis=axis, keepdims=True, initial=-J.jnp.inf)
    # The result does not depend on c (lse(x) = lse(x − c) + c): no derivative flows through it.
    return J.lax.stop_gradient(J.jnp.where(J.jnp.isfinite(c), c, 0))


def _lse(J, x, axis, gamma=1.0):
    c = _shift(J, x, axis)
    z = (x - c) / gamma if gamma != 1.0 else x - c
    return J.jnp.log(J.jnp.sum(J.jnp.exp(z), axis=axis, keepdims=True)) * gamma + c


@rule("logsumexp")
def _logsumexp(J, node, x):
    p = node.params
    x = x.astype(node.dtype)
    out = _lse(J, x, _axis(p["axis"]), p["gamma"])
    return out if p["keepdims"] else J.jnp.squeeze(out, axis=_axis(p["axis"]))


def _softmax(J, x, axis, gamma=1.0):
    c = _shift(J, x, axis)
    e = J.jnp.exp((x - c) / gamma if gamma != 1.0 else x - c)
    return e / J.jnp.sum(e, axis=axis, keepdims=True)


@rule("softargmax")
def _softargmax(J, node, x):
    return _softmax(J, x.astype(node.dtype), _axis(node.params["axis"]), node.params["gamma"])


@rule("masked_softargmax")
def _masked_softargmax(J, node, x, mask):
    p = node.params
    return _softmax(J, x.astype(node.dtype) * p["scale"] + mask.astype(node.dtype), _axis(p["axis"]))


@rule("softargmax_jacobian")
def _softargmax_jacobian(J, node, v, y):
    # (v − Σ v⊙y)⊙y·scale: the softargmax Jacobian (symmetric) applied to v at y = softargmax(x).
    axis = _axis(node.params["axis"])
    g = (v - J.jnp.sum(v * y, axis=axis, keepdims=True)) * y
    return g * node.params["scale"] if node.params["scale"] != 1.0 else g


@rule("softmax_cross_entropy")
def _softmax_cross_entropy(J, node, z, idx):
    z = z.astype(node.dtype)
    picked = J.jnp.take_along_axis(z, _wrapped(J, idx, z.shape[-1])[..., None], axis=-1, mode="clip")
    return (_lse(J, z, (z.ndim - 1,)) - picked)[..., 0]


@rule("softmax_cross_entropy_grad")
def _softmax_cross_entropy_grad(J, node, ct, z, loss, idx):
    # (softargmax(z) − onehot(idx))·ct: the VJP of the cross-entropy (loss is read only to save work in numpy).
    z = z.astype(node.dtype)
    target = _wrapped(J, idx, z.shape[-1])[..., None] == J.jnp.arange(z.shape[-1])
    return (_softmax(J, z, (z.ndim - 1,)) - target.astype(node.dtype)) * ct.astype(node.dtype)[..., None]


def _standardized(J, x, axes, eps):
    """(x̂, 1/√(σ² + ε)) over ``axes``, the biased variance as numpy's implementation."""
    c = x - J.jnp.mean(x, axis=axes, keepdims=True)
    inv = 1.0 / J.jnp.sqrt(J.jnp.mean(c * c, axis=axes, keepdims=True) + eps)
    return c * inv, inv


@rule("layer_norm")
def _layer_norm(J, node, x, gamma, beta):
    xhat, _ = _standardized(J, x.astype(node.dtype), tuple(node.params["axes"]), node.params["eps"])
    return xhat * gamma + beta


@rule("standardize_jacobian")
def _standardize_jacobian(J, node, v, x):
    # J v for J = ∂x̂/∂x (symmetric): (v − mean v − x̂·mean(v ⊙ x̂)) / √(σ² + ε).
    axes, eps = tuple(node.params["axes"]), node.params["eps"]
    v = v.astype(node.dtype)
    xhat, inv = _standardized(J, x.astype(node.dtype), axes, eps)
    mean = J.jnp.mean
    return (v - mean(v, axis=axes, keepdims=True) - xhat * mean(v * xhat, axis=axes, keepdims=True)) * inv


@rule("standardized_sum")
def _standardized_sum(J, node, ct, x):
    # Σ over x's leading axes of ct ⊙ x̂ (γ's cotangent in layer_norm): shaped like the normalized axes.
    axes, eps = tuple(node.params["axes"]), node.params["eps"]
    xhat, _ = _standardized(J, x.astype(node.dtype), axes, eps)
    prod = J.jnp.broadcast_to(ct * xhat, xhat.shape)
    return J.jnp.sum(prod, axis=tuple(range(x.ndim - len(axes))))


@rule("linear")
def _linear(J, node, x, w, b):
    return J.jnp.matmul(x, w.T) + b


@rule("linear_relu")
def _linear_relu(J, node, x, w, b):
    return J.jax.nn.relu(J.jnp.matmul(x, w.T) + b)


@rule("einsum")
def _einsum(J, node, *ops):
    return J.jnp.einsum(node.params["subscripts"], *ops)

# ------------------------------------------------------------ convolution and pooling


def _conv(J, x, w, stride, padding):
    # NCHW input, OIHW kernel, as ours: a cross-correlation, no kernel flip. The padded input is cropped to
    # the rows and columns the windows reach first: XLA's CPU compiler aborts (jaxlib 0.10.2, float64) on
    # the transpose of a strided convolution whose stride leaves input rows past the last window.
    (kh, kw), (sh, sw), (ph, pw) = w.shape[-2:], stride, padding
    xp = J.jnp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho, wo = (xp.shape[2] - kh) // sh + 1, (xp.shape[3] - kw) // sw + 1
    xp = xp[:, :, :sh * (ho - 1) + kh, :sw * (wo - 1) + kw]
    return J.lax.conv_general_dilated(xp, w, (sh, sw), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))


@rule("conv2d")
def _conv2d(J, node, x, w):
    return _conv(J, x.astype(node.dtype), w.astype(node.dtype), node.params["stride"], node.params["padding"])


@rule("conv2d_bias")
def _conv2d_bias(J, node, x, w, b):
    out = _conv(J, x.astype(node.dtype), w.astype(node.dtype), node.params["stride"], node.params["padding"])
    return out + b.reshape(-1, 1, 1)


@rule("conv2d_input_grad")
def _conv2d_input_grad(J, node, g, w):
    # The transpose of x -> conv2d(x, w) (linear in x) applied to g: JAX's VJP of the same convolution.
    p = node.params
    w = w.astype(node.dtype)
    x0 = J.jnp.zeros((g.shape[0], w.shape[1]) + tuple(p["in_hw"]), node.dtype)
    _, transpose = J.jax.vjp(lambda x: _conv(J, x, w, p["stride"], p["padding"]), x0)
    return transpose(g.astype(node.dtype))[0]


@rule("conv2d_weight_grad")
def _conv2d_weight_grad(J, node, x, g):
    # The transpose of w -> conv2d(x, w) (linear in w) applied to g.
    p = node.params
    x = x.astype(node.dtype)
    w0 = J.jnp.zeros((g.shape[1], x.shape[1]) + tuple(p["kernel"]), node.dtype)
    _, transpose = J.jax.vjp(lambda w: _conv(J, x, w, p["stride"], p["padding"]), w0)
    return transpose(g.astype(node.dtype))[0]


def _pool_views(x, window, stride):
    """The kh·kw strided views of x, one per kernel position in row-major order, each (..., Ho, Wo)."""
    (kh, kw), (sh, sw) = window, stride
    ho, wo = (x.shape[-2] - kh) // sh + 1, (x.shape[-1] - kw) // sw + 1
    return [x[..., i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] for i in range(kh) for j in range(kw)]


def _first_max_position(J, x, window, stride):
    """Each window's kernel position of its FIRST maximum (a NaN ends the search), as numpy's implementation."""
    views = _pool_views(x, window, stride)
    best, position = views[0], J.jnp.zeros(views[0].shape, np.int32)
    for p, v in enumerate(views[1:], start=1):
        position = J.jnp.where(v > best, p, position)
        best = J.jnp.maximum(best, v)
    return position


@rule("max_pool2d")
def _max_pool2d(J, node, x):
    window, stride = node.params["window"], node.params["stride"]
    lead = (1,) * (x.ndim - 2)
    # A Python scalar as the initial value: lax recognises the max monoid then (reduce_window_max), whose
    # derivative JAX has; an array there makes a generic reduce_window that jax.vjp cannot differentiate under jit.
    init = -np.inf if x.dtype.kind == "f" else int(np.iinfo(x.dtype).min)
    return J.lax.reduce_window(x, init, J.lax.max, lead + tuple(window), lead + tuple(stride), "VALID")


@rule("max_pool2d_gather")
def _max_pool2d_gather(J, node, c, x):
    # c at each window's first maximum of x: the tangent of max pooling (linear in c, x fixed).
    window, stride = node.params["window"], node.params["stride"]
    position = _first_max_position(J, x, window, stride)
    out = J.jnp.zeros(position.shape, node.dtype)
    for p, v in enumerate(_pool_views(c, window, stride)):
        out = J.jnp.where(position == p, v, out)
    return out


@rule("max_pool2d_scatter")
def _max_pool2d_scatter(J, node, ct, x):
    # The transpose of the gather: each window's cotangent added at its first maximum (windows may overlap).
    (kh, kw), (sh, sw) = node.params["window"], node.params["stride"]
    position = _first_max_position(J, x, (kh, kw), (sh, sw))
    ho, wo = position.shape[-2:]
    out = J.jnp.zeros(x.shape, node.dtype)
    ct = ct.astype(node.dtype)
    for p in range(kh * kw):
        i, j = divmod(p, kw)
        at = (Ellipsis, slice(i, i + sh * (ho - 1) + 1, sh), slice(j, j + sw * (wo - 1) + 1, sw))
        out = out.at[at].add(J.jnp.where(position == p, ct, 0))
    return out

# ------------------------------------------------------------ linear algebra


def _pack(J, arrays, batch):
    """Factors packed as ours: each flattened after the batch axes, concatenated on the last axis."""
    batch = tuple(batch)
    return J.jnp.concatenate([a.reshape(batch + (math.prod(a.shape[len(batch):]),)) for a in arrays], axis=-1)


def _from_lower(J, a):
    """The symmetric matrix a's lower triangle defines: numpy's cholesky and eigh read that triangle alone
    (jnp's would average a with aᵀ), so the derivative on the strict upper triangle is 0, as ours."""
    return J.jnp.tril(a) + J.jnp.swapaxes(J.jnp.tril(a, -1), -1, -2)


@rule("inv")
def _inv(J, node, a):
    return J.jnp.linalg.inv(a)


@rule("solve")
def _solve(J, node, a, b):
    return J.jnp.linalg.solve(a, b)


@rule("cholesky")
def _cholesky(J, node, a):
    return J.jnp.linalg.cholesky(_from_lower(J, a))


@rule("det")
def _det(J, node, a):
    return J.jnp.linalg.det(a)


@rule("logabsdet")
def _logabsdet(J, node, a):
    return J.jnp.linalg.slogdet(a)[1]


@rule("slogdet_sign")
def _slogdet_sign(J, node, a):
    return J.jnp.linalg.slogdet(a)[0]


@rule("pinv")
def _pinv(J, node, a):
    # numpy's default cutoff (1e-15 of the largest singular value), not jnp's (10·max(m, n)·eps).
    return J.jnp.linalg.pinv(a, rtol=1e-15)


@rule("eigh")
def _eigh(J, node, a):
    w, v = J.jnp.linalg.eigh(_from_lower(J, a))
    return _pack(J, [w, v], a.shape[:-2])


@rule("svd")
def _svd(J, node, a):
    u, s, vh = J.jnp.linalg.svd(a, full_matrices=node.params["full_matrices"])
    return _pack(J, [u, s, vh], a.shape[:-2])


@rule("qr")
def _qr(J, node, a):
    q, r = J.jnp.linalg.qr(a)
    return _pack(J, [q, r], a.shape[:-2])


@rule("qr_full_rank")
def _qr_full_rank(J, node, x, r):
    return x


def _products_but_one(J, s):
    """Π_{j≠i} s_j for each i, without dividing (exact at zeros)."""
    ones = J.jnp.ones(s.shape[:-1] + (1,), s.dtype)
    before = J.jnp.cumprod(J.jnp.concatenate([ones, s[..., :-1]], -1), -1)
    after = J.jnp.flip(J.jnp.cumprod(J.jnp.concatenate([ones, J.jnp.flip(s[..., 1:], -1)], -1), -1), -1)
    return before * after


@rule("cofactor")
def _cofactor(J, node, a):
    # det(A)·A⁻ᵀ for an invertible A (our implementation switches to an SVD formula at singular ones).
    a = a.astype(node.dtype)
    return J.jnp.linalg.det(a)[..., None, None] * J.jnp.swapaxes(J.jnp.linalg.inv(a), -1, -2)


@rule("cofactor_derivative")
def _cofactor_derivative(J, node, a, t):
    # The same formula as numpy's implementation, from A = U S Vᵀ: exact at any rank.
    jnp = J.jnp
    a, t = a.astype(node.dtype), t.astype(node.dtype)
    n = a.shape[-1]
    u, s, vh = jnp.linalg.svd(a)
    e = jnp.swapaxes(u, -1, -2) @ t @ jnp.swapaxes(vh, -1, -2)
    eye = jnp.eye(n, dtype=bool)
    rows = jnp.where(eye, 1.0, s[..., None, :]).astype(node.dtype)
    pairs = jnp.where(eye, 0.0, _products_but_one(J, rows))
    diagonal = jnp.einsum("...ik,...k->...i", pairs, jnp.diagonal(e, axis1=-2, axis2=-1))
    d = diagonal[..., None] * eye - pairs * jnp.swapaxes(e, -1, -2)
    sign = jnp.linalg.det(u) * jnp.linalg.det(vh)
    return sign[..., None, None] * (u @ d @ vh)


@rule("svd_complement_unused")
def _svd_complement_unused(J, node, g_extra, g_thin):
    return J.jnp.where(J.jnp.any(g_extra != 0), J.jnp.nan, g_thin)


@rule("svd_reciprocal")
def _svd_reciprocal(J, node, s, proj):
    jnp = J.jnp
    s = s.astype(node.dtype)
    tol = max(proj.shape[-2:]) * jnp.finfo(node.dtype).eps * jnp.max(s, axis=-1, initial=0.0, keepdims=True)
    zero = s <= tol
    used = zero & (jnp.sqrt(jnp.sum(jnp.square(proj), axis=-2)) > 0)
    inverse = jnp.where(zero, 0.0, 1.0 / jnp.where(zero, 1.0, s))
    return jnp.where(used, jnp.nan, inverse)
