"""The exporter's exceptions (a module of their own: export and its dynamic axes both raise them)."""

from __future__ import annotations

from ..errors import AutogradDagError


class OnnxExportError(AutogradDagError):
    """A program cannot be written as ONNX (an unsupported primitive, dtype or opset)."""


class UnsupportedPrimitiveError(OnnxExportError):
    """The program uses primitives without an ONNX mapping; ``missing`` lists them."""

    def __init__(self, message: str, missing: list[str]):
        super().__init__(message)
        self.missing = list(missing)
