"""ONNX model -> Program, for the operators the library has primitives for.

Each ONNX node is replayed with the library's own operations on Tensors, so
the nodes are recorded exactly as user code would record them: the resulting
:class:`Program` executes on numpy, differentiates and renders. Operands that
fix a shape (Reshape's shape, axes, slice bounds, pads, TopK's K, ...) must be
known when the model is loaded: initializers, ``Constant`` nodes, results of
nodes computed from those alone (constant folding: ``Shape`` of an input is
one, input shapes being static), or graph inputs whose values are given
(``load(constants=...)``, or per call with :func:`load_function`), on which
the program is then specialised, as ``jax.jit`` specialises on its static
arguments.
"""

from __future__ import annotations

import os

import numpy as np

from ..core import Tensor, concrete
from ..errors import AutogradDagError
from ..program import Program
from ..tracing import program_input, tracing
from ..primitives import elementwise as el, structure as st
from ._export import require_onnx
from ._ops import _ValueNeeded  # what _Ctx.static raises for a value not known when loading
from ._ops import HANDLERS, OnnxImportError, _Ctx, _np_dtype
# Each module registers its operators' handlers in HANDLERS when imported.
from . import (_ops_elementwise, _ops_structure, _ops_reductions, _ops_indexing, _ops_conv,  # noqa: F401,E402
               _ops_recurrent, _ops_activations, _ops_resize, _ops_nn)


SUPPORTED_ONNX_OPS = sorted(HANDLERS)

# Operators whose result is not a function of their inputs: never folded into a constant.
_RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                         "Multinomial", "Bernoulli"})


def load(model_or_path, *, name: str | None = None, constants: dict | None = None) -> Program:
    """An ONNX model (a path, bytes or a ModelProto) as a :class:`Program`.

    Graph inputs become program inputs (same names, shapes and dtypes: they
    must be static), initializers become named constants, and every node is
    replayed with the library's operations, so the program executes on numpy,
    differentiates (``ad.grad_program``) and renders. An operator outside
    :data:`SUPPORTED_ONNX_OPS` raises :class:`OnnxImportError` listing every
    missing one. Shapes: as the model's inputs and outputs.

    ``constants``: values of graph inputs, by name (arrays). A graph input
    whose value a node needs to fix a shape (Reshape's shape, Slice's starts,
    TopK's K, Range's bounds, a reduction's axes...) is specialised on the
    value given, as ``jax.jit`` specialises on ``static_argnums``: it becomes
    a named constant and is no longer a program input, so the program cannot
    be called with another value. Every other input given stays a program
    input (as jit traces its other arguments): its value is only checked
    against the declared dtype and shape, and fixes the shape where the model
    leaves it symbolic. A graph input that has an initializer (its default,
    a constant) takes the value given instead. A needed value that is not
    given raises :class:`OnnxImportError` naming every such input, with the
    operator that needs it. :func:`load_function` specialises on each call's
    values instead.

    Example (needs onnx; not run as a doctest)::

        prog = ad.onnx.load("model.onnx")
        ad.render(prog, view="bipartite").render("model")
        reshape = ad.onnx.load("reshape.onnx", constants={"shape": np.array([3, 2])})
        reshape(np.ones((2, 3))).shape       # (3, 2): 'shape' is now a constant
    """
    return _load(_read(model_or_path), name, constants or {})[0]


def load_function(model_or_path, *, name: str | None = None) -> "OnnxFunction":
    """An ONNX model as a function of all its graph inputs, specialised on each call's static values.

    Call it with every graph input (positionally in the model's order, or by
    name). Inputs whose values fix a shape (see :func:`load`'s ``constants``)
    are static, as ``jax.jit``'s ``static_argnums``: the model is loaded once
    per distinct value of them (and per shape of the others), the program
    cached, and run on the other inputs. ``.program(*args)`` gives the
    specialised :class:`Program` (to render or differentiate); ``.programs``
    holds every one made. Shapes: as the model's inputs and outputs.

    Example (needs onnx; not run as a doctest)::

        reshape = ad.onnx.load_function("reshape.onnx")       # inputs: data, shape
        reshape(np.ones((2, 3)), np.array([3, 2])).shape      # (3, 2)
        reshape(np.ones((2, 3)), np.array([6])).shape         # (6,): another program
        ad.render(reshape.program(np.ones((2, 3)), np.array([6])))
    """
    return OnnxFunction(_read(model_or_path), name)


class OnnxFunction:
    """A loaded ONNX model called with all its graph inputs; made by :func:`load_function`."""

    def __init__(self, model, name: str | None = None):
        self.model, self.name = model, name
        initializers = {t.name for t in model.graph.initializer}
        #: The graph inputs it takes, in order (initializers with a graph input of their name excepted).
        self.input_names = [vi.name for vi in model.graph.input if vi.name not in initializers]
        #: The specialised programs, by (input shapes and dtypes, values of the static inputs).
        self.programs: dict = {}
        self._static: dict = {}   # input shapes and dtypes -> the static inputs' names

    def _given(self, args, kwargs) -> dict:
        if len(args) > len(self.input_names):
            raise OnnxImportError(f"onnx.load_function: the model takes {len(self.input_names)} input(s) "
                                  f"{self.input_names}, got {len(args)} positional arguments")
        values = dict(zip(self.input_names, args))
        for key, value in kwargs.items():
            if key not in self.input_names or key in values:
                raise OnnxImportError(f"onnx.load_function: {key!r} is "
                                      f"{'given twice' if key in values else 'not an input of the model'}; "
                                      f"its inputs: {self.input_names}")
            values[key] = value
        absent = [n for n in self.input_names if n not in values]
        if absent:
            raise OnnxImportError(f"onnx.load_function: missing input(s) {absent}; the model takes "
                                  f"{self.input_names}")
        return values

    def program(self, *args, **kwargs) -> Program:
        """The :class:`Program` specialised on these arguments' static values (loaded on first use)."""
        return self._program(_arrays(self._given(args, kwargs)))[0]

    def _program(self, values: dict) -> tuple[Program, tuple[str, ...]]:
        signature = tuple((n, values[n].shape, values[n].dtype.str) for n in self.input_names)
        static = self._static.get(signature)
        if static is not None:
            program = self.programs.get((signature, _value_key(values, static)))
            if program is not None:
                return program, static
        program, static = _load(self.model, self.name, values)
        self._static[signature] = static
        self.programs[(signature, _value_key(values, static))] = program
        return program, static

    def __call__(self, *args, **kwargs):
        given = self._given(args, kwargs)
        program, static = self._program(_arrays(given))
        for n in static:
            # Inside jit/trace a static value computed from the traced function's inputs would be
            # this call's, frozen into the program for every later call: refused.
            concrete(given[n], f"the ONNX model's input '{n}' (it fixes a shape)")
        # The arguments as given: Tensors record through the program (ad.grad of a function calling it).
        return program(*[given[program.nodes[k].name] for k in program.inputs])


def _arrays(values: dict) -> dict:
    return {k: v.value if isinstance(v, Tensor) else np.asarray(v) for k, v in values.items()}


def _value_key(values: dict, names) -> tuple:
    return tuple((n, values[n].dtype.str, values[n].shape, values[n].tobytes() if values[n].dtype.kind != "O"
                  else repr(values[n].tolist())) for n in names)


def _read(model_or_path):
    onnx = require_onnx()
    source = "the bytes given" if isinstance(model_or_path, bytes) else repr(os.fspath(model_or_path)) \
        if isinstance(model_or_path, (str, os.PathLike)) else None
    try:
        if isinstance(model_or_path, onnx.ModelProto):
            model = model_or_path
        elif isinstance(model_or_path, bytes):
            model = onnx.load_from_string(model_or_path)
        else:
            model = onnx.load(os.fspath(model_or_path))
    except OSError as exc:
        raise OnnxImportError(f"onnx.load: cannot read {source}: {exc.strerror or exc}") from None
    except Exception as exc:  # protobuf's DecodeError and kin: not an ONNX file
        raise OnnxImportError(f"onnx.load: {source} is not an ONNX model ({type(exc).__name__}: "
                              f"{str(exc)[:200]})") from None
    if not model.graph.output:
        # Protobuf reads an empty (or foreign) file as an empty model without complaint.
        raise OnnxImportError(f"onnx.load: {source or 'the model'} is not an ONNX model with a graph: it has "
                              f"no outputs")
    return model


def _load(model, name: str | None, constants: dict) -> tuple[Program, tuple[str, ...]]:
    """The program, and the graph inputs it was specialised on (their values taken from ``constants``)."""
    onnx = require_onnx()
    graph = model.graph
    missing = sorted({n.op_type for n in graph.node if n.op_type not in HANDLERS}
                     | {f"{n.domain}:{n.op_type}" for n in graph.node if n.domain not in ("", "ai.onnx")})
    # An operator of another domain is named once, with its domain (com.example:Custom).
    standard = {n.op_type for n in graph.node if n.domain in ("", "ai.onnx")}
    missing = [m for m in missing if ":" in m or m in standard]
    if missing:
        raise OnnxImportError(f"onnx.load: the model uses {len(missing)} operator(s) autograd_dag cannot "
                              f"express: {', '.join(missing)}")
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    # Operators changed meaning across opsets (Softmax's axis, Clip's and Pad's attributes).
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                 onnx.defs.onnx_opset_version())
    given = _given(onnx, graph, initializers, constants)
    declared = _declared_dtypes(onnx, model)
    for key in initializers.keys() & given.keys():
        initializers[key] = given[key]   # an initializer of a graph input is its default value
    # Replay until no node asks for an input value not yet specialised on: each pass adds at
    # least one input, and a pass collects every need it meets (nodes behind one are skipped).
    static: list[str] = []
    while True:
        inputs, outputs, needs, skipped = _replay(onnx, graph, opset, initializers, given, static, declared)
        fresh = [n for n in needs if n in given]
        if not fresh:
            break
        static += fresh
    if needs:
        listed = "; ".join(f"'{n}' ({', '.join(uses[:3])}{', ...' if len(uses) > 3 else ''})"
                           for n, uses in needs.items())
        example = ", ".join(f"'{n}': ..." for n in needs)
        raise OnnxImportError(
            f"onnx.load: {len(needs)} graph input(s) must have known values to fix shapes when the model is "
            f"loaded: {listed}. Give them: ad.onnx.load(model, constants={{{example}}}) specialises the "
            f"program on these values (they become constants, no longer inputs); "
            f"ad.onnx.load_function(model) does so for the values of each call"
            + (f". ({skipped} node(s) reading results that need them were not replayed: they may need "
               f"more)" if skipped else ""))
    program = Program.from_outputs(tuple(inputs), outputs[0] if len(outputs) == 1 else tuple(outputs),
                                   name=name or graph.name or "model")
    return program, tuple(n for n in (vi.name for vi in graph.input) if n in static)


def _given(onnx, graph, initializers: dict, constants: dict) -> dict:
    """``constants`` as arrays of the graph inputs' declared dtypes, checked against their shapes."""
    declared = {vi.name: vi for vi in graph.input}
    unknown = [k for k in constants if k not in declared]
    if unknown:
        raise OnnxImportError(f"onnx.load: constants= names {unknown}, not graph inputs of the model; its "
                              f"inputs: {[n for n in declared if n not in initializers]}")
    given = {}
    for key, value in constants.items():
        if not declared[key].type.HasField("tensor_type"):
            continue  # a sequence or optional: no handler reads one statically
        tt = declared[key].type.tensor_type
        dtype = _np_dtype(onnx, tt.elem_type)
        array = value.value if isinstance(value, Tensor) else np.asarray(value)
        if array.dtype != dtype:
            cast = array.astype(dtype)
            # A Python list or number (int64, float64) of a declared int32 or float32 input: fine if exact.
            if array.dtype.kind not in "biuf" or not np.array_equal(cast, array):
                raise OnnxImportError(f"onnx.load: constants['{key}'] is {array.dtype}, and input '{key}' is "
                                      f"declared {dtype}")
            array = cast
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim] \
            if tt.HasField("shape") else None
        if dims is not None and (len(dims) != array.ndim or any(d is not None and d != s
                                                                 for d, s in zip(dims, array.shape))):
            raise OnnxImportError(f"onnx.load: constants['{key}'] has shape {array.shape}, and input '{key}' "
                                  f"is declared of shape {dims}")
        given[key] = array
    return given


def _declared_dtypes(onnx, model) -> dict:
    """The element type ONNX's type inference gives each value of the model (where it can)."""
    try:
        graph = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - inference is a check here: without it, the declared types
        graph = model.graph
    types = {}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            try:
                types[vi.name] = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
            except (KeyError, TypeError):
                pass
    return types


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or (dtype.kind == "V" and dtype.name.startswith(("bfloat", "float")))


def _as_declared(r, dtype, node, index: int):
    """``r`` with the element type ONNX gives the node's output.

    numpy (and so the library) computes some operations on the narrow float types of
    ml_dtypes in a wider type (matmul of bfloat16 gives float32): ONNX's operators keep their
    input's type, so the result is rounded once to it, as onnx's reference does. Any other
    difference of type would be a wrong value: refused.
    """
    have = getattr(r, "dtype", None)
    if dtype is None or have is None or np.dtype(have) == dtype:
        return r
    if _is_float(np.dtype(have)) and _is_float(dtype):
        return el.astype(r, dtype) if isinstance(r, Tensor) else np.asarray(r).astype(dtype)
    raise OnnxImportError(f"onnx.load: {_label(node, index)} gives {np.dtype(have)} where ONNX's types give "
                          f"{dtype}: autograd_dag cannot import it exactly")


def _replay(onnx, graph, opset: int, initializers: dict, given: dict, static: list, declared: dict):
    """Replay every node once: (program inputs, outputs, needs, number of nodes skipped).

    ``needs`` maps each graph input whose value a node asked for (and which is
    not in ``static``) to the uses that asked: then the pass is void (its
    program is not built) and the nodes behind those uses were skipped.
    """
    consts = dict(initializers)   # every value known when the model is loaded
    inputs, env = [], {}
    graph_inputs: dict = {}   # the inputs of unknown value -> their position
    for vi in graph.input:
        if vi.name in initializers:
            continue
        if vi.name in static:
            consts[vi.name] = given[vi.name]
            env[vi.name] = Tensor(given[vi.name], name=vi.name)
            continue
        graph_inputs[vi.name] = len(graph_inputs)
        tt = vi.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        if vi.name in given:
            dims = list(given[vi.name].shape)  # the value given fixes the symbolic dimensions
        if any(d is None for d in dims):
            raise OnnxImportError(f"onnx.load: input '{vi.name}' has a symbolic shape {dims}; only static "
                                  f"shapes can be imported (or give a value: load(model, constants="
                                  f"{{'{vi.name}': ...}}) or load_function)")
        inputs.append(program_input(np.zeros(dims, dtype=_np_dtype(onnx, tt.elem_type)), vi.name))
    input_ids = {id(i) for i in inputs}
    for t in inputs:
        env[t.name] = t
    for key, value in initializers.items():
        env[key] = Tensor(value, name=key)
    needs: dict = {}
    skipped: set = set()   # outputs of nodes not replayed in this pass
    n_skipped = 0
    producers = None
    # The inputs hold placeholder zeros: numpy's warnings about their values (log 0) mean nothing.
    with tracing(inputs), np.errstate(all="ignore"):
        for index, node in enumerate(graph.node):
            if skipped and _meets(node.input, skipped):
                skipped.update(node.output)
                n_skipped += 1
                continue
            try:
                result = HANDLERS[node.op_type](_Ctx(onnx, node, env, consts, opset))
            except _ValueNeeded as need:
                if producers is None:
                    producers = {out: (k, n) for k, n in enumerate(graph.node) for out in n.output}
                _note_need(need, node, index, producers, consts, graph_inputs, needs)
                skipped.update(node.output)
                continue
            except OnnxImportError as exc:
                # The handler's message says what is refused; the user must also learn where.
                if not exc.args or _label(node, index) not in str(exc.args[0]):
                    exc.args = (f"{exc.args[0] if exc.args else ''} (at {_label(node, index)})",) + exc.args[1:]
                raise
            except AutogradDagError as exc:
                raise OnnxImportError(f"onnx.load: {_label(node, index)}: {exc}") from None
            except Exception as exc:
                exc.add_note(f"(raised by autograd_dag's ONNX import of {_label(node, index)})")
                raise
            # A node of known operands has a known result (constant folding): a static operand
            # computed from them (Shape -> Gather -> Concat -> Reshape) can be read. A random
            # draw is not known before the program runs, whatever its operands.
            random = node.op_type in _RANDOM_OPS
            folded = not random and _within(node.input, consts)
            results = result if isinstance(result, tuple) else (result,)
            for out_name, r in zip(node.output, results):
                if not out_name:
                    continue
                r = _as_declared(r, declared.get(out_name), node, index)
                if isinstance(r, np.ndarray):
                    if not random:
                        consts[out_name] = r
                    r = Tensor(r, name=out_name)
                elif isinstance(r, Tensor) and not random and (
                        folded or (not r.requires_grad and r.prim is None and id(r) not in input_ids)):
                    # (An integer program input is a leaf that requires no gradient too: its
                    # value is a placeholder, not a constant.)
                    consts[out_name] = r.value
                env[out_name] = r
        if needs:
            return None, None, needs, n_skipped
        outputs = []
        # By id, in a set: a scan of the inputs per output was O(inputs × outputs)
        # (22 s to load a model with 10,000 of each).
        for vi in graph.output:
            t = env[vi.name]
            if not isinstance(t, Tensor) or id(t) in input_ids:
                t = st.identity(t)
            t.name = vi.name
            outputs.append(t)
    return inputs, outputs, needs, 0


def _meets(names, found: set) -> bool:
    for n in names:
        if n in found:
            return True
    return False


def _within(names, known: dict) -> bool:
    for n in names:
        if n and n not in known:
            return False
    return True


def _label(node, index: int) -> str:
    return f"node '{node.name}' ({node.op_type})" if node.name else f"{node.op_type} node #{index}"


def _note_need(need: _ValueNeeded, node, index: int, producers: dict, consts: dict, graph_inputs: dict,
               needs: dict) -> None:
    """Record in ``needs`` the graph inputs the value ``need.name`` is computed from (walking back
    through the nodes of unknown results); raise if no input's value would make it known."""
    found, random, seen, stack = [], [], {need.name}, [need.name]
    while stack:
        name = stack.pop()
        if name in graph_inputs:
            found.append(name)
            continue
        if name not in producers:
            continue
        k, producer = producers[name]
        if producer.op_type in _RANDOM_OPS:
            random.append(_label(producer, k))
        for i in producer.input:
            if i and i not in consts and i not in seen:
                seen.add(i)
                stack.append(i)
    where = f"the {need.what} of {_label(node, index)}"
    if not found:
        cause = (f"which {random[0]} draws at random when the model runs" if random else "which is not known when the model is loaded")
        raise OnnxImportError(f"onnx.load: {_label(node, index)} takes its {need.what} from '{need.name}', "
                              f"{cause}; only a {need.what} known when the model is loaded can be imported")
    for name in sorted(found, key=graph_inputs.__getitem__):
        needs.setdefault(name, []).append(where if name == need.name else f"{where}, through '{need.name}'")
