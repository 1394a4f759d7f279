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
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def run(model_or_session, *args, **kwargs) -> list[np.ndarray]:
    """Execute an ONNX model on arrays given by position (graph input order) or by input name.

    Shapes: one array per graph input -> the list of output arrays.
    """
    sess = model_or_session if hasattr(model_or_session, "run") and not hasattr(model_or_session, "graph") \
        else session(model_or_session)
    names = [i.name for i in sess.get_inputs()] if hasattr(sess, "get_inputs") else list(sess.input_names)
    if len(args) > len(names):
        raise OnnxExportError(f"onnx.run: the model takes {len(names)} input(s) ({', '.join(names)}); "
                              f"got {len(args)}")
    feeds = {n: np.asarray(a) for n, a in zip(names, args)}
    feeds.update({k: np.asarray(v) for k, v in kwargs.items()})
    return list(sess.run(None, feeds))
