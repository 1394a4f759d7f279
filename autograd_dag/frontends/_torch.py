"""PyTorch -> Program: a ``torch.export`` program (ATen operators), each node replayed with the library's operations.

The exported program is first decomposed (``run_decompositions``) to the core
ATen set, a few dozen operators: ``nn.LSTM`` and ``nn.MultiheadAttention``
arrive as matrix products and elementwise operations. Scopes are the module
paths of ``nn_module_stack``, each relative to its parent's, as the library's
own modules label theirs.
"""

from __future__ import annotations

import operator

import numpy as np

from ..core import Tensor
from ..nn import functional as F
from ..primitives import elementwise as el, mathfuncs as mf, reductions as red, structure as st
from ..primitives import arrays, indexing, integer, numeric
from ..primitives.conv import conv2d, conv2d_bias, max_pool2d
from ..primitives.conv_family import conv1d, conv_transpose2d, grouped_conv2d
from ..primitives.linalg.products import matmul
from ..scopes import attributed_to
from ..tracing import program_input, tracing
from ._common import FrontendError, build, constant, refuse_missing, require, source_from_trace


def _scalar(s, like: Tensor):
    """A Python number as a constant of ``like``'s dtype (torch's scalars do not promote a tensor)."""
    if isinstance(s, Tensor):
        return s
    kind = like.dtype.kind
    if kind in "fc" or (kind in "iu" and not isinstance(s, float)) or (kind == "b" and isinstance(s, bool)):
        return constant(np.asarray(s, dtype=like.dtype))
    # A float scalar with an integer or boolean tensor gives torch's default float32; an int with a bool, int64.
    return constant(np.asarray(s, dtype=np.float32 if isinstance(s, float) else np.int64))


def _category(dtype) -> int:
    return "biufc".index(dtype.kind) - (dtype.kind == "u")  # bool 0, integers 1, floats 2, complex 3


def _promoted(*xs: Tensor) -> list[Tensor]:
    """Operands cast to torch's result dtype, where numpy's differs (int64 with float32 is float64 there).

    torch takes the highest category (bool < integer < float < complex) and, within it, the
    operands with dimensions before 0-d ones (a 0-d float64 leaves a float32 vector float32).
    """
    top = max(_category(x.dtype) for x in xs)
    highest = [x for x in xs if _category(x.dtype) == top]
    dtype = np.result_type(*[x.dtype for x in ([x for x in highest if x.ndim] or highest)])
    return [x if x.dtype == dtype else el.astype(x, dtype) for x in xs]


def _binary(fn):
    def handler(x, y, *, alpha=1, **_):
        if not isinstance(x, Tensor):
            x = _scalar(x, y)
        y = _scalar(y, x)
        if alpha != 1:
            y = el.multiply(y, _scalar(alpha, y))
        return fn(*_promoted(x, y))
    return handler


def _div(x, y, *, rounding_mode=None):
    if not isinstance(x, Tensor):
        x = _scalar(x, y)
    x, y = _promoted(x, _scalar(y, x))
    if x.dtype.kind not in "fc":
        if rounding_mode is None:  # true division of integers gives torch's default float32
            return el.divide(el.astype(x, np.float32), el.astype(y, np.float32))
        # Integers divide to integers (exactly below 2**53, as float64 holds them).
        q = el.divide(el.astype(x, np.float64), el.astype(y, np.float64))
        return el.astype((mf.floor if rounding_mode == "floor" else mf.trunc)(q), x.dtype)
    q = el.divide(x, y)
    if rounding_mode is None:
        return q
    return (mf.floor if rounding_mode == "floor" else mf.trunc)(q)


def _addmm(b, x, w, *, beta=1, alpha=1):
    p = matmul(x, w)
    if alpha != 1:
        p = el.multiply(p, _scalar(alpha, p))
    if beta != 1:
        b = el.multiply(b, _scalar(beta, b))
    return el.add(p, b)


def _expand(x, sizes, **_):
    shape = tuple(x.shape[k - (len(sizes) - x.ndim)] if s == -1 else s for k, s in enumerate(sizes))
    return st.identity(x) if shape == x.shape else st.broadcast_to(x, shape)


def _squeeze(x, dims=None):
    if dims is None:
        return st.squeeze(x)
    dims = [d % x.ndim for d in ([dims] if isinstance(dims, int) else dims)] if x.ndim else []
    # torch leaves an axis of another length than 1 in place; numpy would refuse it.
    dims = tuple(d for d in dims if x.shape[d] == 1)
    return st.squeeze(x, dims) if dims else st.identity(x)


def _slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return indexing.getitem(x, tuple(index))


def _select(x, dim, index):
    where = [slice(None)] * x.ndim
    where[dim] = index
    return indexing.getitem(x, tuple(where))


def _split_with_sizes(x, sizes, dim=0):
    out, start = [], 0
    for s in sizes:
        out.append(_slice(x, dim, start, start + s))
        start += s
    return tuple(out)


def _torch_dtype(dtype, default):
    if dtype is None:
        return default
    return np.dtype(str(dtype).removeprefix("torch."))


def _full(size, value, *, dtype=None, **_):
    # Without a dtype, torch's defaults: float32 for a float value (numpy's would be float64).
    default = np.float32 if isinstance(value, float) else np.result_type(type(value))
    return constant(np.full(tuple(size), value, dtype=_torch_dtype(dtype, default)))


def _arange(start, end=None, step=1, *, dtype=None, **_):
    if end is None:
        start, end = 0, start
    integral = all(isinstance(v, int) for v in (start, end, step))
    return constant(np.arange(start, end, step, dtype=_torch_dtype(dtype, np.int64 if integral else np.float32)))


def _full_like(x, value, *, dtype=None, **_):
    return constant(np.full(x.shape, value, dtype=_torch_dtype(dtype, x.dtype)))


def _to_copy(x, *, dtype=None, **_):
    dtype = _torch_dtype(dtype, x.dtype)
    return st.identity(x) if dtype == x.dtype else el.astype(x, dtype)


def _layer_norm(x, shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = red.mean(x, axis=axes, keepdims=True)
    rstd = mf.reciprocal(el.sqrt(el.add(red.var(x, axis=axes, keepdims=True), _scalar(eps, x))))
    # (mean and rstd are torch's saved statistics: a program keeps only the nodes its outputs need.)
    return F.layer_norm(x, tuple(shape), w, b, eps), mean, rstd


def _batch_norm(x, w, b, mean, var, momentum, eps):
    """Inference batch norm with running statistics, over axis 1 (torch's saved statistics are not computed)."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = mf.reciprocal(el.sqrt(el.add(var, _scalar(eps, var))))
    if w is not None:
        scale = el.multiply(scale, w)
    y = el.multiply(el.subtract(x, st.reshape(mean, shape)), st.reshape(scale, shape))
    if b is not None:
        y = el.add(y, st.reshape(b, shape))
    return y, _Unavailable("batch norm's saved mean"), _Unavailable("batch norm's saved inverse deviation")


def _convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    if x.ndim not in (3, 4) or (transposed and (groups != 1 or x.ndim != 4)) or any(d != 1 for d in dilation):
        raise FrontendError(f"from_torch: convolution of {x.ndim - 2} spatial dimension(s), transposed="
                            f"{transposed}, groups={groups}, dilation={list(dilation)}: 1-d and 2-d with groups, "
                            f"2-d transposed without groups, all with dilation 1 have a rule here")
    if transposed:
        return conv_transpose2d(x, w, tuple(stride), tuple(padding), tuple(output_padding), b)
    if x.ndim == 3:
        return conv1d(x, w, tuple(stride), tuple(padding), groups, b)
    if groups != 1:
        return grouped_conv2d(x, w, tuple(stride), tuple(padding), groups, b)
    if b is None:
        return conv2d(x, w, stride=tuple(stride), padding=tuple(padding))
    return conv2d_bias(x, w, b, stride=tuple(stride), padding=tuple(padding))


def _embedding(w, idx, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``w`` with torch's gradient: none to row ``padding_idx``, and with ``scale_grad_by_freq``
    each row's divided by how often the batch uses it (the values are the rows either way)."""
    out = indexing.take(w, idx, axis=0)
    if scale_grad_by_freq:
        # The value is out exactly; the derivative, out's scaled by 1 / count of the row.
        counts = st.sum(indexing.one_hot(st.reshape(idx, (-1,)), w.shape[0], dtype=w.dtype), axis=0)
        scale = st.expand_dims(mf.reciprocal(indexing.take(counts, idx, axis=0)), -1)
        fixed = el.stop_gradient(out)
        out = el.add(fixed, el.multiply(el.subtract(out, fixed), scale))
    if padding_idx >= 0:
        # torch.nn.Embedding's padding row gets no gradient (an index below 0 never occurs: none).
        out = el.where(st.expand_dims(el.equal(idx, _scalar(padding_idx, idx)), -1), el.stop_gradient(out), out)
    return out


class _Unavailable:
    """A result the library does not compute (max pooling's indices): using it is refused."""

    def __init__(self, what):
        self.what = what


def _max_pool2d(x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    pads = [padding] * 2 if isinstance(padding, int) else list(padding)
    dil = [dilation] * 2 if isinstance(dilation, int) else list(dilation)
    if any(pads) or any(d != 1 for d in dil) or ceil_mode:
        raise FrontendError(f"from_torch: max_pool2d with padding={pads}, dilation={dil}, ceil_mode={ceil_mode}: "
                            f"only padding 0, dilation 1, floor mode have a primitive here")
    return max_pool2d(x, tuple(kernel), tuple(stride) if stride else None), _Unavailable("max_pool2d's indices")


def _reduce(fn):
    def handler(x, dims=None, keepdim=False, *, dtype=None, **_):
        axis = None if dims is None or dims == [] else tuple(dims) if isinstance(dims, (list, tuple)) else dims
        out = fn(x, axis=axis, keepdims=keepdim)
        return out if dtype is None else el.astype(out, _torch_dtype(dtype, out.dtype))
    return handler


def _logical_not(x):
    return el.equal(x, constant(np.zeros((), x.dtype)))


def _logical(fn):
    def handler(x, y):
        return fn(el.not_equal(x, constant(np.zeros((), x.dtype))), el.not_equal(y, constant(np.zeros((), y.dtype))))
    return handler


def _where(c, x, y):
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        # Two Python numbers (aten.where.Scalar): torch's default dtypes (float32, int64, bool).
        kind = float if float in (type(x), type(y)) else bool if type(x) is type(y) is bool else int
        x = constant(np.asarray(x, dtype={float: np.float32, int: np.int64, bool: np.bool_}[kind]))
    if not isinstance(x, Tensor):
        x = _scalar(x, y)
    return el.where(c, *_promoted(x, _scalar(y, x)))


def _pow(x, y):
    if not isinstance(x, Tensor):
        x = _scalar(x, y)
    if not isinstance(y, Tensor) and y == 2:
        return mf.square(x)
    return el.power(*_promoted(x, _scalar(y, x)))


def _clamp(x, min=None, max=None):
    bounds = [b if b is None else _scalar(b, x) for b in (min, max)]
    x, *given = _promoted(x, *[b for b in bounds if b is not None])
    lo = given.pop(0) if min is not None else None
    return mf.clip(x, lo, given.pop(0) if max is not None else None)


_RULES = {
    "aten.add": _binary(el.add), "aten.sub": _binary(el.subtract),
    "aten.mul": _binary(el.multiply), "aten.div": _div, "aten.pow": _pow,
    "aten.maximum": _binary(el.maximum), "aten.minimum": _binary(el.minimum),
    "aten.eq": _binary(el.equal), "aten.ne": _binary(el.not_equal), "aten.lt": _binary(el.less),
    "aten.le": _binary(el.less_equal), "aten.gt": _binary(el.greater), "aten.ge": _binary(el.greater_equal),
    "aten.logical_not": _logical_not, "aten.logical_and": _logical(el.minimum),
    "aten.logical_or": _logical(el.maximum), "aten.where": _where,
    "aten.bitwise_and": _binary(integer.bitwise_and), "aten.bitwise_or": _binary(integer.bitwise_or),
    "aten.bitwise_xor": _binary(integer.bitwise_xor), "aten.bitwise_not": integer.invert,
    "aten.bitwise_left_shift": _binary(integer.left_shift), "aten.bitwise_right_shift": _binary(integer.right_shift),
    "aten.__lshift__": _binary(integer.left_shift), "aten.__rshift__": _binary(integer.right_shift),
    "aten.remainder": _binary(mf.mod),
    "aten.fmod": _binary(mf.fmod),
    "aten.neg": el.negative, "aten.exp": el.exp, "aten.log": el.log, "aten.sqrt": el.sqrt,
    "aten.rsqrt": lambda x: mf.reciprocal(el.sqrt(x)), "aten.reciprocal": mf.reciprocal,
    "aten.tanh": el.tanh, "aten.sigmoid": el.logistic, "aten.relu": el.relu, "aten.abs": el.abs,
    "aten.sign": el.sign, "aten.sin": mf.sin, "aten.cos": mf.cos, "aten.erf": mf.erf, "aten.log1p": mf.log1p,
    "aten.erfc": mf.erfc, "aten.expm1": mf.expm1, "aten.floor": mf.floor, "aten.ceil": mf.ceil,
    "aten.gelu": lambda x, approximate="none": F.gelu(x, approximate),
    "aten.clamp": _clamp,
    "aten._softmax": lambda x, dim, half_to_float=False: F.softmax(x, axis=dim),
    "aten._log_softmax": lambda x, dim, half_to_float=False: F.log_softmax(x, axis=dim),
    "aten.mm": matmul, "aten.bmm": matmul, "aten.addmm": _addmm,
    "aten.permute": lambda x, dims: st.transpose(x, tuple(d % x.ndim for d in dims)),
    "aten.view": lambda x, size: st.reshape(x, tuple(size)), "aten.expand": _expand,
    "aten.unsqueeze": lambda x, dim: st.expand_dims(x, dim % (x.ndim + 1)), "aten.squeeze": _squeeze,
    # torch.export records x.detach() as alias: a program keeps no trace of the detach (see from_torch).
    "aten.clone": lambda x, **_: st.identity(x), "aten.alias": lambda x: st.identity(x),
    "aten._to_copy": _to_copy, "aten.select": _select, "aten.slice": _slice,
    "aten.split_with_sizes": _split_with_sizes,
    "aten.cat": lambda xs, dim=0: indexing.concatenate(list(xs), axis=dim),
    "aten.full": _full, "aten.full_like": _full_like, "aten.arange": _arange,
    "aten.scalar_tensor": lambda v, *, dtype=None, **_: constant(np.asarray(v, _torch_dtype(dtype, np.float32))),
    "aten.sum": _reduce(st.sum), "aten.mean": _reduce(red.mean), "aten.amax": _reduce(red.max),
    "aten.amin": _reduce(red.min), "aten.any": _reduce(numeric.any),
    "aten.native_layer_norm": _layer_norm, "aten.convolution": _convolution,
    "aten._native_batch_norm_legit_no_training": _batch_norm,
    "aten.max_pool2d_with_indices": _max_pool2d,
    "aten.embedding": _embedding,
    "aten.flip": lambda x, dims: arrays.flip(x, tuple(dims)),
    "getitem": lambda xs, i: xs[i],
    # A check of dtype and device that .to() leaves in the graph: nothing to compute.
    "aten._assert_tensor_metadata": lambda *args, **kwargs: None,
}

#: The ATen operators (overload packets) :func:`from_torch` replays, after ``run_decompositions()``.
TORCH_OPERATORS = sorted(_RULES)


def _key(target) -> str:
    if target is operator.getitem:
        return "getitem"
    packet = getattr(target, "overloadpacket", None)
    return str(packet) if packet is not None else getattr(target, "__name__", str(target))


def _scope(node) -> tuple[str, ...]:
    """The module labels of ``nn_module_stack``, each relative to its parent's path (``layers.0``, ``attn``)."""
    stack = node.meta.get("nn_module_stack") or {}
    labels, parent = [], ""
    for path, _ in stack.values():
        if not path or path == parent:
            continue
        labels.append(path[len(parent) + 1:] if parent and path.startswith(parent + ".") else path)
        parent = path
    return tuple(labels)


def from_torch(module_or_fn, *args, parameters: str = "inputs", name: str | None = None):
    """The :class:`Program` of a ``torch.nn.Module`` (or a function of tensors) on example arguments.

    ``torch.export.export`` records it as ATen operators, ``run_decompositions()``
    reduces them to the core set (when some have no rule here), and each node is replayed with the library's
    operations. ``args``: tensors or arrays (converted with ``torch.as_tensor``);
    ``module_or_fn`` may also be an ``ExportedProgram`` (then no ``args``).
    Program inputs are the user inputs (named as the module's forward names
    them), then, with ``parameters="inputs"`` (the default), every parameter
    under its qualified name (``0.weight``), in ``module.named_parameters()``
    order, so ``ad.grad_program`` gives the gradients ``torch.autograd`` gives;
    with ``parameters="constants"`` they are named constant parameters and the
    program takes the user inputs only. Buffers and lifted constants are named
    constants. Scopes are the module paths (``nn_module_stack``); sources the
    user's lines. An operator without a rule raises :class:`FrontendError`
    listing every one (see :data:`TORCH_OPERATORS`). A module that updates its
    buffers in the call (a training-mode BatchNorm) is refused: call ``.eval()``.
    ``torch.export`` records ``x.detach()`` as an alias, so the program
    differentiates through it where ``torch.autograd`` stops.
    Shapes and dtypes: those of the export (static shapes).

    Example (needs torch; not run as a doctest)::

        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh())
        prog = ad.from_torch(model, torch.randn(2, 3))
        params = [p.detach().numpy() for p in model.parameters()]
        prog(np.ones((2, 3), np.float32), *params)          # (2, 4)
        ad.render(prog, view="bipartite")                   # clusters '0' and '1'
    """
    torch = require("torch", "torch")
    if parameters not in ("inputs", "constants"):
        raise FrontendError(f"from_torch: parameters={parameters!r}; expected 'inputs' or 'constants'")
    if isinstance(module_or_fn, torch.export.ExportedProgram):
        if args:
            raise FrontendError("from_torch: an ExportedProgram comes with its example inputs; pass no args")
        module, ep = None, module_or_fn
    else:
        module = module_or_fn
        if not isinstance(module, torch.nn.Module):
            module = _function_module(torch, module_or_fn)
        targs = tuple(a if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a)) for a in args)
        ep = torch.export.export(module, targs)
    if any(_key(n.target) not in _RULES for n in ep.graph.nodes if n.op == "call_function"):
        # (Decomposing costs about as much as exporting again: skipped when every operator has a rule.)
        ep = ep.run_decompositions()
    graph = ep.graph
    signature = ep.graph_signature
    outputs_kinds = [spec.kind.name for spec in signature.output_specs]
    if any(k != "USER_OUTPUT" for k in outputs_kinds):
        updates = ", ".join(sorted(set(outputs_kinds) - {"USER_OUTPUT"}))
        raise FrontendError(f"from_torch: the module updates its state in the call ({updates}): a training-mode "
                            f"BatchNorm, or an in-place update; call .eval() first")
    calls = [n for n in graph.nodes if n.op == "call_function"]
    refuse_missing("from_torch", "operator", [_key(n.target) for n in calls if _key(n.target) not in _RULES])
    kinds = {spec.arg.name: spec for spec in signature.input_specs}
    env, user, params = {}, [], []
    tied: dict[int, Tensor] = {}  # a tensor's id -> its input: tied weights are one parameter, as in torch
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        spec = kinds[node.name]
        kind, target = spec.kind.name, spec.target
        value = node.meta["val"]
        if kind == "USER_INPUT":
            t = program_input(np.zeros(tuple(value.shape), dtype=_torch_dtype(value.dtype, None)), node.name)
            user.append(t)
        elif kind == "PARAMETER" and id(ep.state_dict[target]) in tied:
            # (torch.export gives each name of a tied weight a placeholder; named_parameters() the first.)
            t = tied[id(ep.state_dict[target])]
        elif kind == "PARAMETER":
            array = ep.state_dict[target].detach().cpu().numpy().copy()
            if parameters == "inputs":
                t = program_input(np.zeros_like(array), target)
                params.append((target, t))
            else:
                t = Tensor(array, name=target, requires_grad=array.dtype.kind == "f")
            tied[id(ep.state_dict[target])] = t
        elif kind in ("BUFFER", "CONSTANT_TENSOR"):
            values = ep.state_dict if target in ep.state_dict else ep.constants
            t = constant(values[target].detach().cpu().numpy().copy(), name=target)
        else:
            raise FrontendError(f"from_torch: an input of kind {kind} ('{target}') cannot be imported")
        env[node] = t
    if module is not None:
        order = {n: k for k, (n, _) in enumerate(module.named_parameters())}
        params.sort(key=lambda p: order.get(p[0], len(order)))
    inputs = user + [t for _, t in params]
    source = None
    with tracing(inputs), np.errstate(all="ignore"):
        for node in calls:
            # A node a decomposition made has no stack trace: it belongs to the line before's.
            source = source_from_trace(node.meta.get("stack_trace")) or source
            operands = _substitute(node.args, env, node)
            kwargs = _substitute(node.kwargs, env, node)
            kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "layout", "pin_memory", "memory_format")}
            with attributed_to(source, _scope(node)):
                try:
                    env[node] = _RULES[_key(node.target)](*operands, **kwargs)
                except FrontendError:
                    raise
                except Exception as exc:
                    raise FrontendError(f"from_torch: cannot replay node '{node.name}' ({node.target}) with "
                                        f"arguments {node.args}, {node.kwargs}: {exc}") from exc
        output = next(n for n in graph.nodes if n.op == "output")
        outs = _substitute(output.args[0], env, output)
    outs = tuple(outs) if isinstance(outs, (list, tuple)) else (outs,)
    label = name or (type(module_or_fn).__name__ if isinstance(module_or_fn, torch.nn.Module)
                     else "exported" if module is None else getattr(module_or_fn, "__name__", "f"))
    return build(inputs, outs[0] if len(outs) == 1 else outs, label)


def _substitute(value, env, node):
    """``value`` (a node's argument) with every graph node replaced by its replayed result."""
    if isinstance(value, (list, tuple)):
        return type(value)(_substitute(v, env, node) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(v, env, node) for k, v in value.items()}
    if type(value).__name__ == "Node":
        out = env[value]
        if isinstance(out, _Unavailable):
            raise FrontendError(f"from_torch: node '{node.name}' reads {out.what}, which autograd_dag does "
                                f"not compute")
        return out
    return value


def _function_module(torch, fn):
    """A function of tensors as a module, for ``torch.export``."""
    class Function(torch.nn.Module):
        def forward(self, *args):
            return fn(*args)
    return Function()
