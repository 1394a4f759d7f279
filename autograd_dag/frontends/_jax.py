"""JAX -> Program: the jaxpr of a function, each equation replayed with the library's operations.

Calls (``jit``, ``closed_call``, ``custom_jvp_call``, ``custom_vjp_call``,
``remat``) are inlined, with a stack of frames rather than recursion. A custom
rule's body is what is replayed: our derivative of it is then an independent
check of the user's custom JVP/VJP (which ``jax.grad`` applies).
"""

from __future__ import annotations

import inspect
import sys

import numpy as np

from ..errors import site_of
from ..primitives import elementwise as el, mathfuncs as mf, reductions as red, structure as st
from ..primitives import arrays, indexing, integer, numeric
from ..primitives.fused.softmax import argmax, argmin
from ..primitives.linalg.products import einsum
from ..scopes import attributed_to
from ..tracing import program_input, tracing
from ._common import FrontendError, build, constant, refuse_missing, require


def _same_dtype(fn):
    # lax ops keep their operands' dtype; numpy scalars of another type (a literal) would promote.
    def handler(x, y, **_):
        return fn(x, y)
    return handler


def _div(x, y, **_):
    """lax.div: integers divide rounding toward zero to integers (numpy's divide would give floats)."""
    if x.dtype.kind not in "iu":
        return el.divide(x, y)
    # Exact below 2**53: the float64 quotient of two such integers never rounds across an integer.
    q = el.divide(el.astype(x, np.float64), el.astype(y, np.float64))
    return el.astype(mf.trunc(q), x.dtype)


def _integer_pow(x, *, y, **_):
    if y == 2:
        return mf.square(x)
    if y == 1:
        return st.identity(x)
    return el.power(x, constant(np.asarray(y, dtype=x.dtype)))


def _rsqrt(x, **_):
    return mf.reciprocal(el.sqrt(x))


def _select_n(which, *cases):
    if len(cases) == 1:
        return st.identity(cases[0])
    if which.dtype == np.bool_:
        return el.where(which, cases[1], cases[0])
    out = cases[0]
    for k in range(1, len(cases)):
        out = el.where(el.equal(which, constant(np.asarray(k, which.dtype))), cases[k], out)
    return out


def _broadcast_in_dim(x, *, shape, broadcast_dimensions, **_):
    kept = [1] * len(shape)
    for axis, d in zip(broadcast_dimensions, x.shape):
        kept[axis] = d
    y = st.reshape(x, tuple(kept)) if tuple(kept) != x.shape else x
    return st.broadcast_to(y, tuple(shape)) if tuple(shape) != y.shape else st.identity(y)


def _reshape(x, *, new_sizes, dimensions=None, **_):
    if dimensions is not None:
        x = st.transpose(x, tuple(dimensions))
    return st.reshape(x, tuple(new_sizes))


def _convert(x, *, new_dtype, **_):
    return el.astype(x, np.dtype(new_dtype)) if np.dtype(new_dtype) != x.dtype else st.identity(x)


def _slice(x, *, start_indices, limit_indices, strides=None, **_):
    strides = strides or (1,) * len(start_indices)
    return indexing.getitem(x, tuple(slice(a, b, s) for a, b, s in zip(start_indices, limit_indices, strides)))


def _cumulative(fn):
    def handler(x, *, axis, reverse=False, **_):
        if reverse:
            return arrays.flip(fn(arrays.flip(x, axis), axis=axis), axis)
        return fn(x, axis=axis)
    return handler


def _dot_general(x, y, *, dimension_numbers, preferred_element_type=None, **_):
    (lc, rc), (lb, rb) = dimension_numbers
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    xs, ys = [None] * x.ndim, [None] * y.ndim
    for a, b in zip(lb, rb):
        xs[a] = ys[b] = next(letters)
    for a, b in zip(lc, rc):
        xs[a] = ys[b] = next(letters)
    for k in range(x.ndim):
        xs[k] = xs[k] or next(letters)
    for k in range(y.ndim):
        ys[k] = ys[k] or next(letters)
    # lax's output order: batch axes, then x's free axes, then y's.
    out = [xs[a] for a in lb] + [xs[k] for k in range(x.ndim) if k not in lb and k not in lc] \
        + [ys[k] for k in range(y.ndim) if k not in rb and k not in rc]
    z = einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(out)}", x, y)
    if preferred_element_type is not None and np.dtype(preferred_element_type) != z.dtype:
        z = el.astype(z, np.dtype(preferred_element_type))
    return z


def _reduction(fn):
    return lambda x, *, axes, **_: fn(x, axis=tuple(axes))


def _argmax(fn):
    # The library's argmax is the one-hot position (first on ties, as lax's): the index is its
    # dot product with 0, 1, 2, ... along the axis, exact in floating point.
    def handler(x, *, axes, index_dtype, **_):
        axis = axes[0]
        onehot = fn(x, axis=axis)
        ramp = np.arange(x.shape[axis], dtype=onehot.dtype).reshape(
            [-1 if k == axis else 1 for k in range(x.ndim)])
        return el.astype(st.sum(el.multiply(onehot, constant(ramp)), axis=axis), np.dtype(index_dtype))
    return handler


def _iota(*, dtype, shape, dimension, **_):
    ramp = np.arange(shape[dimension], dtype=dtype).reshape([-1 if k == dimension else 1 for k in range(len(shape))])
    return constant(np.broadcast_to(ramp, shape).copy())


def _clamp(lo, x, hi):
    return el.minimum(el.maximum(x, lo), hi)


def _not(x):
    # lax.not_: logical on booleans, bitwise on integers (numpy's invert)
    return el.equal(x, constant(np.False_)) if x.dtype == np.bool_ else integer.invert(x)


def _logical(kind):
    def handler(x, y):
        if x.dtype != np.bool_:   # lax.and_/or_/xor on integers are bitwise
            return getattr(integer, f"bitwise_{kind}")(x, y)
        return {"and": el.minimum, "or": el.maximum, "xor": el.not_equal}[kind](x, y)
    return handler


def _shift_right_logical(x, s):
    # lax's logical shift of a signed x: the unsigned integer of its bits shifted (numpy's >> is arithmetic)
    if x.dtype.kind != "i":
        return integer.right_shift(x, s)
    u = np.dtype(f"uint{8 * x.dtype.itemsize}")
    return el.astype(integer.right_shift(el.astype(x, u), el.astype(s, u)), x.dtype)


_RULES = {
    "add": _same_dtype(el.add), "sub": _same_dtype(el.subtract), "mul": _same_dtype(el.multiply),
    "div": _div, "rem": _same_dtype(mf.fmod), "max": _same_dtype(el.maximum), "min": _same_dtype(el.minimum),
    "pow": _same_dtype(el.power), "atan2": _same_dtype(mf.arctan2),
    "eq": _same_dtype(el.equal), "ne": _same_dtype(el.not_equal), "lt": _same_dtype(el.less),
    "le": _same_dtype(el.less_equal), "gt": _same_dtype(el.greater), "ge": _same_dtype(el.greater_equal),
    "and": _logical("and"), "or": _logical("or"), "xor": _logical("xor"), "not": _not,
    "shift_left": _same_dtype(integer.left_shift), "shift_right_arithmetic": _same_dtype(integer.right_shift),
    "shift_right_logical": _same_dtype(_shift_right_logical),
    "neg": lambda x: el.negative(x), "exp": lambda x, **_: el.exp(x), "log": lambda x, **_: el.log(x),
    "tanh": lambda x, **_: el.tanh(x), "logistic": lambda x, **_: el.logistic(x),
    "sqrt": lambda x, **_: el.sqrt(x), "rsqrt": _rsqrt, "abs": lambda x: el.abs(x),
    "sign": lambda x: el.sign(x), "sin": lambda x, **_: mf.sin(x), "cos": lambda x, **_: mf.cos(x),
    "tan": lambda x, **_: mf.tan(x), "exp2": lambda x, **_: mf.exp2(x), "log1p": lambda x, **_: mf.log1p(x),
    "expm1": lambda x, **_: mf.expm1(x), "floor": lambda x: mf.floor(x), "ceil": lambda x: mf.ceil(x),
    "is_finite": lambda x: mf.isfinite(x), "erf": lambda x: mf.erf(x), "square": lambda x: mf.square(x),
    "erfc": lambda x: mf.erfc(x),
    "integer_pow": _integer_pow, "stop_gradient": lambda x: el.stop_gradient(x),
    "copy": lambda x: st.identity(x),
    "select_n": _select_n, "clamp": _clamp,
    "broadcast_in_dim": _broadcast_in_dim, "reshape": _reshape,
    "transpose": lambda x, *, permutation: st.transpose(x, tuple(permutation)),
    "squeeze": lambda x, *, dimensions: st.squeeze(x, tuple(dimensions)),
    "convert_element_type": _convert, "slice": _slice,
    "concatenate": lambda *xs, dimension: indexing.concatenate(list(xs), axis=dimension),
    "rev": lambda x, *, dimensions: arrays.flip(x, tuple(dimensions)),
    "iota": _iota,
    "reduce_sum": _reduction(st.sum), "reduce_max": _reduction(red.max), "reduce_min": _reduction(red.min),
    "reduce_prod": _reduction(numeric.prod),
    "argmax": _argmax(argmax), "argmin": _argmax(argmin),
    "cumsum": _cumulative(numeric.cumsum), "cumprod": _cumulative(numeric.cumprod),
    "dot_general": _dot_general,
}

#: Calls whose body is inlined: parameter holding the body.
_CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "custom_vjp_call_jaxpr": "fun_jaxpr", "remat": "jaxpr", "remat2": "jaxpr", "checkpoint": "jaxpr"}

#: The jaxpr primitives :func:`from_jax` replays (calls are inlined).
JAX_PRIMITIVES = sorted(set(_RULES) | set(_CALLS))


def _body(eqn):
    """A call's body as (jaxpr, consts)."""
    body = eqn.params[_CALLS[eqn.primitive.name]]
    return (body.jaxpr, body.consts) if hasattr(body, "consts") else (body, ())


def _missing(jaxpr) -> list[str]:
    """Every primitive of ``jaxpr`` and of the calls in it (at any depth) without a rule."""
    missing, stack, seen = set(), [jaxpr], set()
    while stack:
        j = stack.pop()
        if id(j) in seen:
            continue
        seen.add(id(j))
        for eqn in j.eqns:
            name = eqn.primitive.name
            if name in _CALLS:
                stack.append(_body(eqn)[0])
            elif name not in _RULES:
                missing.add(name)
    return sorted(missing)


def _name_stack(eqn) -> tuple[str, ...]:
    text = str(eqn.source_info.name_stack)
    return tuple(p for p in text.split("/") if p)


def _source(eqn):
    try:
        from jax._src import source_info_util
        frame = source_info_util.user_frame(eqn.source_info.traceback)
    except Exception:   # a private API: a change in it costs the source lines, not the import
        return None
    return (frame.file_name, frame.start_line) if frame is not None else None


def from_jax(f, *args, name: str | None = None):
    """The :class:`Program` of a JAX function on example arguments (pytrees of arrays).

    ``jax.make_jaxpr(f)(*args)`` gives the equations; each is replayed with
    the library's operations (calls such as ``jit``, ``custom_jvp_call`` and
    ``custom_vjp_call`` are inlined: a custom derivative's primal body is what
    we differentiate). Program inputs are the leaves of ``args`` in
    ``jax.tree_util`` order, named by their paths (``params[0][1]``, ``x``);
    the outputs are the leaves of ``f``'s result (one Tensor, or a tuple).
    Nodes carry the equation's name stack (``jax.named_scope``) as their
    scope and the user's line as their source. A primitive without a rule
    raises :class:`FrontendError` listing every one (see :data:`JAX_PRIMITIVES`).
    Shapes and dtypes: those of the jaxpr (float32 unless ``jax_enable_x64``).

    Example (needs jax; not run as a doctest)::

        prog = ad.from_jax(lambda x: jax.nn.softmax(x).sum(), np.ones((2, 5), np.float32))
        prog(np.ones((2, 5), np.float32))        # 2.0
        ad.grad_program(prog)                    # our gradient of their function
    """
    jax = require("jax", "jax")
    closed = jax.make_jaxpr(f)(*args)
    refuse_missing("from_jax", "primitive", _missing(closed.jaxpr))
    leaves = jax.tree_util.tree_flatten_with_path(args)[0]
    names = _input_names(f, leaves, jax)
    inputs = [program_input(np.zeros(v.aval.shape, dtype=v.aval.dtype), n)
              for v, n in zip(closed.jaxpr.invars, names)]
    with tracing(inputs), np.errstate(all="ignore"):
        outputs = _replay(closed.jaxpr, closed.consts, inputs, site_of(sys._getframe()))
    return build(inputs, outputs[0] if len(outputs) == 1 else tuple(outputs),
                 name or getattr(f, "__name__", "f").replace("<lambda>", "f"))


def _input_names(f, leaves, jax) -> list[str]:
    try:
        params = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for path, _ in leaves:
        head = path[0].idx if path else 0
        base = params[head] if head < len(params) and not params[head].startswith("*") else f"arg{head}"
        names.append(base + jax.tree_util.keystr(tuple(path[1:])))
    return names


def _replay(jaxpr, consts, inputs, caller) -> list:
    """The outputs of ``jaxpr`` on ``inputs``: its equations replayed, calls inlined with a frame stack.

    ``caller``: the line calling from_jax. A call's body traced lazily (a custom_jvp's) has
    that line as its user frame; its equations take their call's line instead.
    """
    env = {}
    for v, c in zip(jaxpr.constvars, consts):
        env[v] = constant(np.asarray(c), name=f"const{len(env)}")
    env.update(zip(jaxpr.invars, inputs))
    # A frame: (equations, position, env, scope, the outer variables its outputs bind, outer env,
    # the call's source line).
    stack = [[jaxpr, 0, env, (), None, None, None]]
    result = None
    while stack:
        frame = stack[-1]
        j, k, env, scope = frame[0], frame[1], frame[2], frame[3]
        if k == len(j.eqns):
            stack.pop()
            outs = [_read(env, v) for v in j.outvars]
            if frame[4] is None:
                result = outs
            else:
                frame[5].update(zip(frame[4], outs))
            continue
        frame[1] = k + 1
        eqn = j.eqns[k]
        where = scope + _name_stack(eqn)
        operands = [_read(env, v) for v in eqn.invars]
        name = eqn.primitive.name
        source = _source(eqn)
        if source is None or (source == caller and frame[6] is not None):
            source = frame[6]
        if name in _CALLS:
            body, body_consts = _body(eqn)
            inner = {v: constant(np.asarray(c)) for v, c in zip(body.constvars, body_consts)}
            inner.update(zip(body.invars, operands))
            stack.append([body, 0, inner, where, eqn.outvars, env, source])
            continue
        with attributed_to(source, where):
            try:
                out = _RULES[name](*operands, **eqn.params)
            except FrontendError:
                raise
            except Exception as exc:
                raise FrontendError(f"from_jax: cannot replay '{name}' with parameters "
                                    f"{ {k: v for k, v in eqn.params.items()} }: {exc}") from exc
        outs = out if eqn.primitive.multiple_results else (out,)
        for v, t in zip(eqn.outvars, outs):
            env[v] = t
    return result


def _read(env, atom):
    if type(atom).__name__ == "Literal":
        return constant(np.asarray(atom.val, dtype=atom.aval.dtype))
    return env[atom]
