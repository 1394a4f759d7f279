"""Export programs to ONNX and import ONNX models as programs.

Export reads programs, like the renderer: one mapping table from primitive
names to standard ONNX operators (:data:`RULES`), no evaluation of its own.
``export`` writes a :class:`~autograd_dag.Program` (or a function traced on
example arguments) as an ONNX model, gradient programs included; ``load``
reads an ONNX model built elsewhere back into a Program that executes on
numpy, differentiates and renders (graph inputs that fix a shape, such as
Reshape's shape, are specialised on values given to ``load(constants=...)``,
or on each call's with ``load_function``, as jit does for static arguments);
``run`` executes a model on ONNX Runtime (or, without it, on onnx's
reference evaluator).

The ``onnx`` and ``onnxruntime`` packages are optional
(``pip install 'autograd-dag[onnx]'``); this module imports without them and
raises :class:`OnnxExportError` saying so when they are needed.

Example (needs onnx; not run as a doctest)::

    import numpy as np, autograd_dag as ad
    prog = ad.trace(lambda x: ad.softmax(x * 2.0), np.zeros((2, 5)))
    model = ad.onnx.export(prog, path="softmax.onnx")
    ad.onnx.run(model, np.ones((2, 5)))          # [array of shape (2, 5)]
    ad.onnx.load("softmax.onnx")(np.ones((2, 5)))  # the same values, on numpy
    served = ad.onnx.export(lambda x: ad.softmax(x * 2.0), np.zeros((2, 5)),
                            dynamic_axes={"x": {0: "batch"}})
    ad.onnx.run(served, np.ones((7, 5)))         # any batch: [array of shape (7, 5)]
"""

from ._export import (DEFAULT_OPSET, OnnxExportError, UnsupportedPrimitiveError, export, supported_primitives,
                      to_model, unsupported_primitives)
from ._models import forward_program, training_step_program
from ._import import SUPPORTED_ONNX_OPS, OnnxFunction, OnnxImportError, load, load_function
from ._run import run, session
from ._table import RULES, UNSUPPORTED

__all__ = ["export", "to_model", "forward_program", "training_step_program", "load", "load_function", "OnnxFunction", "run", "session", "supported_primitives", "unsupported_primitives",
           "RULES", "UNSUPPORTED", "SUPPORTED_ONNX_OPS", "DEFAULT_OPSET", "OnnxExportError",
           "UnsupportedPrimitiveError", "OnnxImportError"]
