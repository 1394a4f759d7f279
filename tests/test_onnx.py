"""ONNX export and import: every primitive of the table alone on ONNX Runtime, gradient
programs, the LeNet and TransformerLM models, the round trip, the command line.

Needs the ``onnx`` and ``onnxruntime`` packages (``pip install 'autograd-dag[onnx]'``;
``make test`` installs them); the module is skipped, saying so, without them.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX tests need the 'onnx' package: pip install 'autograd-dag[onnx]'")
ort = pytest.importorskip("onnxruntime",
                          reason="ONNX tests need 'onnxruntime': pip install 'autograd-dag[onnx]'")

import autograd_dag as ad  # noqa: E402
from autograd_dag.onnx import UnsupportedPrimitiveError  # noqa: E402
from tests.test_primitives_table import ALL_CASES, case_id, closure, make_args, wrt_positions  # noqa: E402

# ONNX Runtime's CPU kernels for Det exist in float32 only: those cases run in float32.
FLOAT32_ONLY = {"det", "logabsdet", "slogdet_sign"}


def _program(case):
    """The case's primitive as a program: its float arguments are inputs, the others constants."""
    args = make_args(case)
    if wrt_positions(case, args):
        g, wrt_args = closure(case, args)
    else:
        def g(*xs):
            return case.fn(*xs)
        g.__name__ = case_id(case).replace("-", "_")
        wrt_args = tuple(np.asarray(a) for a in args)
    if case.prim in FLOAT32_ONLY:
        wrt_args = tuple(a.astype(np.float32) for a in wrt_args)
    return ad.trace(g, *wrt_args), wrt_args


def _uses_unsupported(program) -> list[str]:
    return sorted({n.op for n in program.nodes if n.prim is not None and n.op not in ad.onnx.RULES})


@pytest.mark.parametrize("case", ALL_CASES, ids=[case_id(c) for c in ALL_CASES])
def test_every_primitive_alone_on_onnxruntime(case):
    program, args = _program(case)
    missing = _uses_unsupported(program)
    if missing:
        assert case.prim in ad.onnx.UNSUPPORTED or set(missing) <= set(ad.onnx.UNSUPPORTED)
        with pytest.raises(UnsupportedPrimitiveError) as err:
            ad.onnx.export(program)
        assert err.value.missing == missing and all(m in str(err.value) for m in missing)
        return
    assert case.prim not in ad.onnx.UNSUPPORTED
    model = ad.onnx.export(program)  # check_model(full_check=True) runs inside
    expected = program(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = ad.onnx.run(model, *args)
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        if e.dtype.kind == "f":
            tol = 1e-5 if e.dtype == np.float32 else 1e-10
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, e)


def test_unsupported_primitives_are_exactly_the_decompositions():
    assert set(ad.onnx.unsupported_primitives()) == {"inv", "solve", "cholesky", "eigh", "svd", "qr", "pinv"}
    assert len(ad.onnx.supported_primitives()) + 7 == len(ad.PRIMITIVES)


def test_unsupported_primitive_names_every_missing_one_and_writes_nothing(tmp_path):
    prog = ad.trace(lambda a, b: ad.sum(ad.linalg.inv(a) + ad.linalg.solve(a, b)), np.eye(3), np.eye(3))
    path = tmp_path / "m.onnx"
    with pytest.raises(UnsupportedPrimitiveError) as err:
        ad.onnx.export(prog, path=path)
    assert err.value.missing == ["inv", "solve"]
    assert "inv" in str(err.value) and "solve" in str(err.value)
    assert not path.exists() and not list(tmp_path.iterdir())
    assert isinstance(err.value, ad.AutogradDagError)


FLOAT_CASES = [c for c in ALL_CASES if all(np.asarray(a).dtype.kind == "f" for a in make_args(c))]


@pytest.mark.parametrize("case", FLOAT_CASES, ids=[case_id(c) for c in FLOAT_CASES])
def test_every_primitive_alone_in_float32(case):
    args = tuple(np.asarray(a, dtype=np.float32) for a in make_args(case))

    def g(*xs):
        return case.fn(*xs)
    g.__name__ = case_id(case).replace("-", "_")
    program = ad.trace(g, *args)
    if _uses_unsupported(program):
        pytest.skip("no ONNX mapping (asserted in float64)")
    expected = program(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = ad.onnx.run(ad.onnx.export(program), *args)
    for e, g in zip(expected, got):
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, e)
