"""The ONNX graph under construction: fresh names, nodes, constants and casts.

Only the exporter's mapping table writes through this; it never evaluates
anything (constants are the program's own values or index arithmetic on
static parameters).
"""

from __future__ import annotations

import re

import numpy as np

INT64_MIN = np.iinfo(np.int64).min


class Value:
    """One ONNX value during export: its name, shape and numpy dtype."""

    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name: str, shape, dtype):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Value({self.name}, {self.shape}, {self.dtype})"


def sanitize(name: str) -> str:
    """A name usable as an ONNX value name (letters, digits, ``_``, ``.``, ``/``, ``:``)."""
    return re.sub(r"[^A-Za-z0-9_./:\-]", "_", str(name)) or "v"


class SymDim(int):
    """A size that follows dynamic axes: ``k`` times the product of the named ``symbols``.

    It is the int it was at the example (so rules compute with it as with any
    size); :meth:`Builder.ints` writes it as the product of the inputs' runtime
    sizes instead of a constant. Arithmetic on it gives plain ints: a rule that
    derives a constant from it is caught by the export's comparison at two sizes.
    """

    k: int
    symbols: tuple

    def __new__(cls, value: int, k: int, symbols: tuple):
        obj = int.__new__(cls, value)
        obj.k, obj.symbols = k, tuple(symbols)
        return obj

    @property
    def label(self) -> str:
        """The dimension's name in the model: ``batch``, ``batch*time``, ``4*batch``."""
        return "*".join(([str(self.k)] if self.k != 1 else []) + list(self.symbols))

    def __repr__(self) -> str:
        return f"{int(self)}<{self.label}>"


class Builder:
    """Collects ONNX nodes and initializers with unique names."""

    def __init__(self, onnx_module):
        self.onnx = onnx_module
        self.helper = onnx_module.helper
        self.nodes: list = []
        self.initializers: list = []
        self.used: set[str] = set()
        self.prefix = "t"
        self._consts: dict = {}
        # Dynamic axes: symbol -> (graph input name, axis) its runtime size is read from.
        self.dims: dict[str, tuple[str, int]] = {}
        self._dim_values: dict = {}

    def fresh(self, hint: str) -> str:
        base = sanitize(hint)
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name

    def tensor_type(self, dtype) -> int:
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    def op(self, op_type: str, inputs, *, outputs: int | list = 1, hint: str | None = None, **attrs):
        """Add one node; returns its output name (or the list of names for several outputs)."""
        names = [i.name if isinstance(i, Value) else i for i in inputs]
        if op_type == "Reshape":
            attrs.setdefault("allowzero", 1)  # shapes are concrete: a 0 means an empty axis
        if isinstance(outputs, int):
            outs = [self.fresh(f"{hint or self.prefix}_{op_type}") for _ in range(outputs)]
            single = outputs == 1
        else:
            outs, single = list(outputs), len(outputs) == 1
        self.nodes.append(self.helper.make_node(op_type, names, outs, name=self.fresh(f"node_{outs[0]}"),
                                                **attrs))
        return outs[0] if single else outs

    def const(self, array, hint: str = "const", *, name: str | None = None) -> str:
        """An initializer holding ``array`` (small index/shape constants are shared)."""
        array = np.asarray(array)
        key = None
        if name is None and array.size <= 16:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in self._consts:
                return self._consts[key]
        out = name if name is not None else self.fresh(hint)
        self.used.add(out)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.array(array, order="C", copy=True), out))
        if key is not None:
            self._consts[key] = out
        return out

    def ints(self, values) -> str:
        """A 1-D int64 tensor of ``values``: a constant, or computed from the inputs' sizes where an
        entry is a :class:`SymDim` (a shape that follows a dynamic axis)."""
        values = list(values)
        if not any(isinstance(v, SymDim) for v in values):
            return self.const(np.asarray(values, dtype=np.int64), "ints")
        pieces, run = [], []
        for v in values:
            if isinstance(v, SymDim):
                if run:
                    pieces.append(self.const(np.asarray(run, dtype=np.int64), "ints"))
                    run = []
                pieces.append(self._dim_value(v))
            else:
                run.append(int(v))
        if run:
            pieces.append(self.const(np.asarray(run, dtype=np.int64), "ints"))
        return pieces[0] if len(pieces) == 1 else self.op("Concat", pieces, axis=0, hint="shape")

    def _dim_value(self, dim: SymDim) -> str:
        """[k · Π sizes of the symbols] as a 1-D int64 tensor, written once per distinct size."""
        key = (dim.k, dim.symbols)
        if key not in self._dim_values:
            out = None
            for sym in dim.symbols:
                if sym not in self._dim_values:
                    source, axis = self.dims[sym]
                    self._dim_values[sym] = self.op("Shape", [source], start=axis, end=axis + 1, hint=sym)
                out = self._dim_values[sym] if out is None else self.op("Mul", [out, self._dim_values[sym]],
                                                                         hint=dim.label)
            if dim.k != 1:
                out = self.op("Mul", [out, self.const(np.asarray([dim.k], dtype=np.int64), "ints")],
                              hint=dim.label)
            self._dim_values[key] = out
        return self._dim_values[key]

    def scalar(self, value, dtype) -> str:
        return self.const(np.asarray(value, dtype=dtype), "scalar")

    def cast(self, v: Value, dtype) -> Value:
        dtype = np.dtype(dtype)
        if v.dtype == dtype:
            return v
        return Value(self.op("Cast", [v], to=self.tensor_type(dtype)), v.shape, dtype)

    def reshape(self, v: Value | str, shape) -> str:
        return self.op("Reshape", [v, self.ints(shape)])

    def zeros(self, shape, dtype) -> str:
        return self.op("ConstantOfShape", [self.ints(shape)],
                       value=self.onnx.numpy_helper.from_array(np.zeros(1, dtype=dtype)))


# Operators that ONNX Runtime's CPU provider (measured on 1.32) has no kernel for on some integer types,
# or that ONNX defines on fewer types than numpy (MatMul, Neg, Relu): op -> (the inputs of type T, the
# types to move, the kind of operation). The node runs on a wider integer type and casts back, which
# gives numpy's values: every value fits ("order": the order is kept; "select": values are only moved)
# and "ring" sums/products wrap modulo 2**bits the same way once cast back (a Cast between integers
# keeps the low bits). uint64 has no wider type: it is reinterpreted as int64, with its order kept by
# flipping the sign bit (Xor with -2**63) for the "order" operators.
_I8, _I16, _U8, _U16, _U32, _U64 = "int8", "int16", "uint8", "uint16", "uint32", "uint64"
_AROUND = {
    "ReduceMax": ((0,), {_I16, _U16, _U32, _U64}, "order"), "ReduceMin": ((0,), {_I16, _U16, _U32, _U64}, "order"),
    "ArgMax": ((0,), {_I16, _U16, _U32, _U64}, "order"), "ArgMin": ((0,), {_I16, _U16, _U32, _U64}, "order"),
    "TopK": ((0,), {_U16, _U32, _U64}, "order"), "Relu": ((0,), {_I16}, "order"),
    "ReduceSum": ((0,), {_I8, _I16, _U8, _U16, _U32, _U64}, "ring"),
    "ReduceProd": ((0,), {_I8, _I16, _U8, _U16, _U32, _U64}, "ring"),
    "CumSum": ((0,), {_I8, _I16, _U8, _U16, _U32, _U64}, "ring"), "MatMul": ((0, 1), {_I8, _I16, _U8, _U16}, "ring"),
    "Where": ((1, 2), {_I16, _U16, _U64}, "select"), "Pad": ((0, 2), {_I16, _U16}, "select"),
    "Trilu": ((0,), {_I8, _I16, _U8, _U16, _U32, _U64}, "select"),
}
_WIDER = {_I8: np.int32, _I16: np.int32, _U8: np.int32, _U16: np.int32, _U32: np.int64, _U64: np.int64}
# ONNX Runtime has few kernels on bfloat16, float8 and float4 (not Div on bfloat16, not Identity on
# float8e8m0): every node but a Cast reading them runs on float32, which is what ml_dtypes does for
# each operation (float32, then one rounding) and holds every value exactly for the others.
NARROW_FLOATS = {"bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                  "float8_e8m0fnu", "float4_e2m1fn"}
# int4/int2 have even fewer (not Identity): nodes that only move values run on int8/uint8.
_SUB_BYTE = {"int4": np.int8, "int2": np.int8, "uint4": np.uint8, "uint2": np.uint8}
_MOVES = {"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Slice", "Gather", "GatherElements",
          "GatherND", "Concat", "Expand", "Flatten", "Tile", "Where", "Pad", "Split"}
AROUND_DTYPES = set(_WIDER) | NARROW_FLOATS | set(_SUB_BYTE)   # (names) a program with none needs no pass


def cast_around(onnx, model) -> None:
    """Rewrite, in place, the nodes of ``model`` that ONNX Runtime or ONNX cannot run on their type: the
    integer ones of ``_AROUND`` on a wider type, Neg of an unsigned x as 0 - x, Relu of an unsigned x as x
    (the table writes Relu of int64 as Max(x, 0): int64 is in nearly every program, so it does not trigger
    this pass); nodes reading bfloat16/float8/float4 on float32, nodes moving int4/int2 on int8/uint8."""
    graph = model.graph
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False).graph
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(inferred.value_info) + list(inferred.input) + list(inferred.output)}
    types.update({t.name: t.data_type for t in graph.initializer})
    b = Builder(onnx)
    b.used = {n for node in graph.node for n in list(node.input) + list(node.output)} | set(types)
    out = []
    for node in graph.node:
        name = _name_of(onnx, types.get(node.input[1 if node.op_type == "Where" else 0]) if node.input else None)
        b.nodes = out
        if node.op_type == "Neg" and name.startswith("uint"):
            zero = b.const(np.zeros((), name))
            out.append(onnx.helper.make_node("Sub", [zero, node.input[0]], list(node.output), name=node.name))
        elif node.op_type == "Relu" and name.startswith("uint"):
            out.append(onnx.helper.make_node("Identity", [node.input[0]], list(node.output), name=node.name))
        elif node.op_type in _AROUND and name in _AROUND[node.op_type][1]:
            positions, _, kind = _AROUND[node.op_type]
            _widen(b, node, name, positions, kind)
        elif node.op_type not in ("Cast", "CastLike") and any(
                _name_of(onnx, types.get(i)) in NARROW_FLOATS for i in node.input):
            _in_float32(onnx, b, node, types)
        elif node.op_type in _MOVES and any(_name_of(onnx, types.get(i)) in _SUB_BYTE for i in node.input):
            _in_float32(onnx, b, node, types, _SUB_BYTE)
        else:
            out.append(node)
    del graph.node[:]
    graph.node.extend(out)
    graph.initializer.extend(b.initializers)


def _widen(b, node, name: str, positions, kind: str) -> None:
    """``node`` on the wider type of ``name``; its outputs of type T cast back to ``name``."""
    wide = np.dtype(_WIDER[name])
    flip = kind == "order" and name == _U64
    sign = b.const(np.asarray(np.iinfo(np.int64).min, np.int64)) if flip else None
    inputs = list(node.input)
    for i in positions:
        if i < len(inputs) and inputs[i]:
            inputs[i] = b.op("Cast", [inputs[i]], to=b.tensor_type(wide), hint=f"{node.name}_wide")
            if flip:
                inputs[i] = b.op("BitwiseXor", [inputs[i], sign], hint=f"{node.name}_wide")
    # Arg* give indices, TopK's second output too: only the values come back.
    value_outputs = () if node.op_type in ("ArgMax", "ArgMin") else (0,)
    outputs = [b.fresh(f"{o}_wide") if k in value_outputs else o for k, o in enumerate(node.output)]
    attrs = {a.name: b.helper.get_attribute_value(a) for a in node.attribute}
    b.nodes.append(b.helper.make_node(node.op_type, inputs, outputs, name=node.name, **attrs))
    for k in value_outputs:
        v = b.op("BitwiseXor", [outputs[k], sign], hint=f"{node.name}_back") if flip else outputs[k]
        b.nodes.append(b.helper.make_node("Cast", [v], [node.output[k]], name=b.fresh(f"{node.name}_back"),
                                          to=b.tensor_type(np.dtype(name))))


def _name_of(onnx, tensor_type) -> str:
    return onnx.helper.tensor_dtype_to_np_dtype(tensor_type).name if tensor_type else ""


def _in_float32(onnx, b, node, types, wider=None) -> None:
    """``node`` with its bfloat16/float8/float4 inputs cast to float32 (or those of ``wider``'s dtypes to
    the dtype it gives) and those outputs cast back."""
    wider = wider or dict.fromkeys(NARROW_FLOATS, np.float32)
    inputs = [b.op("Cast", [i], to=b.tensor_type(wider[n]), hint=f"{node.name}_wide")
              if (n := _name_of(onnx, types.get(i))) in wider else i for i in node.input]
    back = {k: types[o] for k, o in enumerate(node.output) if _name_of(onnx, types.get(o)) in wider}
    outputs = [b.fresh(f"{o}_wide") if k in back else o for k, o in enumerate(node.output)]
    attrs = {a.name: b.helper.get_attribute_value(a) for a in node.attribute}
    b.nodes.append(b.helper.make_node(node.op_type, inputs, outputs, name=node.name, **attrs))
    for k, t in back.items():
        # (back as ml_dtypes rounds: float8 without saturating, float8e8m0 to nearest; see the astype rule)
        name = _name_of(onnx, t)
        attrs = {} if not name.startswith("float8") else {"saturate": 0, "round_mode": "nearest"} \
            if name == "float8_e8m0fnu" else {"saturate": 0}
        b.nodes.append(b.helper.make_node("Cast", [outputs[k]], [node.output[k]], name=b.fresh(f"{node.name}_back"),
                                          to=t, **attrs))
