"""Importer defects that gave wrong values with no error (issue 28): each is a one-node model built
with onnx.helper, loaded with ``ad.onnx.load`` and compared with an independent numpy computation of
the ONNX operator's definition (the spec's text, not ONNX Runtime).

Needs the ``onnx`` package; skipped, saying so, without it.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")

import autograd_dag as ad  # noqa: E402
from onnx import helper  # noqa: E402


def _model(op, args, outputs=("y",), opset=21, inits=(), **attrs):
    """A one-node model: inputs x0, x1, ... for ``args`` (a None arg is an empty input name),
    initializers ``inits`` ((name, array) pairs, appended to the node's inputs)."""
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(args)]
    info = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, args) if a is not None]
    node = helper.make_node(op, names + [n for n, _ in inits], list(outputs), **attrs)
    graph = helper.make_graph([node], "g", info, [helper.make_tensor_value_info(o, 0, None) for o in outputs],
                              [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _run(model, *args):
    out = ad.onnx.load(model)(*[a for a in args if a is not None])
    return out if isinstance(out, tuple) else (out,)


# ------------------------------------------------------------------ Shape


def _shape_spec(shape, start=None, end=None):
    # The spec: negative axes count from the back, then both are clamped to [0, r].
    r = len(shape)
    start = 0 if start is None else start
    end = r if end is None else end
    start, end = (min(max(a + r if a < 0 else a, 0), r) for a in (start, end))
    return np.array(shape[start:end], dtype=np.int64)


@pytest.mark.parametrize("attrs", [{}, {"start": 1, "end": 2}, {"start": -1}, {"end": -1}, {"start": 1},
                                   {"start": -10}, {"end": 10}, {"start": -10, "end": 10}, {"start": 2, "end": 1},
                                   {"start": 5}, {"end": -5}, {"start": -2, "end": -1}])
def test_shape_slices_by_start_and_end(attrs):
    x = np.zeros((3, 4, 5), np.float32)
    (got,) = _run(_model("Shape", [x], **attrs), x)
    expected = _shape_spec(x.shape, attrs.get("start"), attrs.get("end"))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    if attrs == {"start": 1, "end": 2}:
        np.testing.assert_array_equal(got, [4])   # the reproduction
