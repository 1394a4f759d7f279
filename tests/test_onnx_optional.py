"""Without the onnx package the library still imports, and ad.onnx says how to install it."""

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["onnx"] = None          # as if onnx were not installed
sys.modules["onnxruntime"] = None
import numpy as np, autograd_dag as ad
print(len(ad.onnx.supported_primitives()) > 90)
try:
    ad.onnx.export(lambda x: ad.exp(x), np.ones(2))
except ad.onnx.OnnxExportError as exc:
    print("pip install" in str(exc) and "onnx" in str(exc))
"""


def test_library_imports_without_onnx_and_export_explains():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]
