"""Running an exported model: ONNX Runtime when installed, onnx's reference evaluator otherwise."""

from __future__ import annotations

import numpy as np

from ._export import OnnxExportError, require_onnx


def session(model):
    """An ``onnxruntime.InferenceSession`` (CPU) for ``model`` (a ModelProto, bytes or a path).

    Falls back to ``onnx.reference.ReferenceEvaluator`` when onnxruntime is not
    installed; both have ``run(None, feeds)``.
    """
    onnx = require_onnx()
    if isinstance(model, onnx.ModelProto):
        data = model.SerializeToString()
    elif isinstance(model, bytes):
        data = model
    else:
        with open(model, "rb") as f:
            data = f.read()
    try:
        import onnxruntime as ort  # optional: the reference evaluator is the fallback
    except ImportError:
        from onnx.reference import ReferenceEvaluator  # noqa: PLC0415
        return ReferenceEvaluator(onnx.load_from_string(data))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as Missing  # noqa: PLC0415
    try:
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Missing as exc:
        # A valid model (onnx.checker passes) with an operator/dtype pair this runtime has no kernel for.
        raise OnnxExportError(f"onnx.run: ONNX Runtime {ort.__version__} has no CPU kernel for an operator of "
                              f"this model: {str(exc).splitlines()[0][:300]}") from None


def run(model_or_session, *args, **kwargs) -> list[np.ndarray]:
    """Execute an ONNX model on arrays given by position (graph input order) or by input name.

    Shapes: one array per graph input -> the list of output arrays. bfloat16, float8, float4, int4
    and int2 values are ml_dtypes arrays both ways (ONNX Runtime's own numpy bridge has no type for
    them); a model ONNX Runtime has no kernel for raises :class:`OnnxExportError` naming the operator.
    Example: ``ad.onnx.run(ad.onnx.export(lambda x: x * 2, np.ones(3)), np.ones(3))[0]`` is ``[2. 2. 2.]``.
    """
    sess = model_or_session if hasattr(model_or_session, "run") and not hasattr(model_or_session, "graph") \
        else session(model_or_session)
    names = [i.name for i in sess.get_inputs()] if hasattr(sess, "get_inputs") else list(sess.input_names)
    if len(args) > len(names):
        raise OnnxExportError(f"onnx.run: the model takes {len(names)} input(s) ({', '.join(names)}); "
                              f"got {len(args)}")
    feeds = {n: np.asarray(a) for n, a in zip(names, args)}
    feeds.update({k: np.asarray(v) for k, v in kwargs.items()})
    if hasattr(sess, "io_binding") and any(a.dtype.name in _NARROW for a in feeds.values()) | any(
            o.type[len("tensor("):-1] in _ORT_NARROW for o in sess.get_outputs()):
        return _run_narrow(sess, feeds)
    return list(sess.run(None, feeds))


# ONNX Runtime's Python layer has no numpy type for these (float8 comes back as uint8): they cross as
# raw bytes, sub-byte ones packed as ONNX stores them (element i in the low bits first).
_ORT_NARROW = {"bfloat16": "bfloat16", "float8e4m3fn": "float8_e4m3fn", "float8e4m3fnuz": "float8_e4m3fnuz",
               "float8e5m2": "float8_e5m2", "float8e5m2fnuz": "float8_e5m2fnuz", "float8e8m0": "float8_e8m0fnu",
               "int4": "int4", "uint4": "uint4", "float4e2m1": "float4_e2m1fn", "int2": "int2", "uint2": "uint2"}
_NARROW = set(_ORT_NARROW.values())


def _bits(dtype: np.dtype) -> int:
    return 2 if dtype.name in ("int2", "uint2") else 4 if dtype.name in ("int4", "uint4", "float4_e2m1fn") \
        else 8 * dtype.itemsize


def _to_ortvalue(ort, onnx, a: np.ndarray):
    """An OrtValue holding ``a`` (an ml_dtypes array) in ONNX's layout."""
    bits, flat = _bits(a.dtype), np.ascontiguousarray(a).reshape(-1).view(np.uint8 if a.itemsize == 1 else np.uint16)
    if bits < 8:
        per = 8 // bits
        codes = np.zeros(-(-flat.size // per) * per, np.uint8)
        codes[:flat.size] = flat & ((1 << bits) - 1)
        packed = np.bitwise_or.reduce(codes.reshape(-1, per) << (bits * np.arange(per, dtype=np.uint8)), axis=1)
        # ONNX Runtime takes the logical shape and reads only the packed bytes at its front.
        flat = np.zeros(max(flat.size, packed.size), np.uint8)
        flat[:packed.size] = packed
    buf = flat[:a.size].reshape(a.shape) if a.size else flat.reshape(a.shape)
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buf, onnx.helper.np_dtype_to_tensor_dtype(a.dtype))


def _from_ortvalue(value, type_name: str) -> np.ndarray:
    import ctypes  # noqa: PLC0415 - only this path reads a tensor's bytes
    import ml_dtypes  # noqa: PLC0415 - onnx needs it, so it is there whenever a model is run
    dtype, shape = np.dtype(getattr(ml_dtypes, _ORT_NARROW[type_name])), tuple(value.shape())
    raw = np.frombuffer(ctypes.string_at(value.data_ptr(), value.tensor_size_in_bytes()), np.uint8)
    size, bits = int(np.prod(shape)), _bits(dtype)
    if bits >= 8:
        return raw.view(np.uint8 if bits == 8 else np.uint16)[:size].view(dtype).reshape(shape)
    per = 8 // bits
    codes = ((raw[:, None] >> (bits * np.arange(per, dtype=np.uint8))) & ((1 << bits) - 1)).reshape(-1)[:size]
    if dtype.name in ("int4", "int2"):
        half = 1 << (bits - 1)
        return ((codes.astype(np.int8) ^ half) - half).astype(dtype).reshape(shape)
    return codes.view(dtype).reshape(shape) if dtype.name == "float4_e2m1fn" else codes.astype(dtype).reshape(shape)


def _run_narrow(sess, feeds) -> list[np.ndarray]:
    """``sess.run`` for a model whose inputs or outputs have dtypes ONNX Runtime's numpy bridge lacks."""
    import onnxruntime as ort  # noqa: PLC0415 - sess is an ONNX Runtime session
    onnx = require_onnx()
    binding = sess.io_binding()
    for name, a in feeds.items():
        if a.dtype.name in _NARROW:
            binding.bind_ortvalue_input(name, _to_ortvalue(ort, onnx, a))
        else:
            binding.bind_cpu_input(name, a)
    outputs = sess.get_outputs()
    for o in outputs:
        binding.bind_output(o.name, "cpu")
    sess.run_with_iobinding(binding)
    return [_from_ortvalue(v, o.type[len("tensor("):-1]) if o.type[len("tensor("):-1] in _ORT_NARROW else v.numpy()
            for v, o in zip(binding.get_outputs(), outputs)]
