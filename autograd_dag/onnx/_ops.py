"""The importer's operator registry: :data:`HANDLERS` maps an ONNX op_type to a
function replaying one node with the library's operations (see ``_import.load``)."""

from __future__ import annotations

import numpy as np

from ..core import Tensor
from ..errors import AutogradDagError


class OnnxImportError(AutogradDagError):
    """An ONNX model uses an operator (or a form of one) the library cannot express."""


class _ValueNeeded(Exception):
    """A handler asked for the value of an operand that is not known when the model is loaded.

    Not an AutogradDagError: handlers that catch library errors must let it through to ``load``,
    which turns it into one error naming every graph input whose value is missing.
    """

    def __init__(self, name: str, what: str):
        super().__init__(name, what)
        self.name, self.what = name, what


HANDLERS: dict = {}


def handles(*ops):
    def register(fn):
        for op in ops:
            HANDLERS[op] = fn
        return fn
    return register


class _Ctx:
    def __init__(self, onnx, node, env, consts, opset: int):
        self.onnx, self.node, self.env, self.consts, self.opset = onnx, node, env, consts, opset
        self.attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def arg(self, i):
        if i >= len(self.node.input) or not self.node.input[i]:
            return None
        return self.env[self.node.input[i]]

    def static(self, i, what: str):
        """Input i as a numpy array known when the model is loaded (None when the operand is absent).

        Known: an initializer, a ``Constant``, a graph input given to ``load(constants=...)``, or a
        node's result computed from such values only. Otherwise :class:`_ValueNeeded` is raised: the
        importer names the graph inputs behind it (see ``_import.load``); the handler needs no care.
        """
        if i >= len(self.node.input) or not self.node.input[i]:
            return None
        name = self.node.input[i]
        if name not in self.consts:
            raise _ValueNeeded(name, what)
        return self.consts[name]

    def attr(self, key, default=None):
        value = self.attrs.get(key, default)
        return value.decode() if isinstance(value, bytes) else value


def _shape(x) -> tuple:
    return tuple(np.shape(x.value if isinstance(x, Tensor) else x))


def _ndim(x) -> int:
    return len(_shape(x))


def _np_dtype(onnx, tensor_type: int) -> np.dtype:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type))
    except KeyError:
        # A sequence, optional or map value has no tensor element type (it reads as 0, UNDEFINED).
        raise OnnxImportError(f"onnx.load: the model has a value that is not a tensor (a sequence, optional "
                              f"or map; element type {tensor_type}): only tensors can be imported") from None

def _axes(c, ndim, *, attr="axes", index=1):
    axes = c.attr(attr)
    if axes is None and len(c.node.input) > index and c.node.input[index]:
        axes = c.static(index, "axes")
    if axes is None:
        return None
    return tuple(int(a) % ndim for a in np.asarray(axes).reshape(-1))
