"""Regressions for what a new user hit (issue 11): each test is one rough edge, now smooth."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.cli import main


def write_module(tmp_path, text, name="user_model.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_cli_grad_of_a_tensor_built_from_parameters_differentiates_them(tmp_path, capsys):
    path = write_module(tmp_path, (
        "import numpy as np, autograd_dag as ad\n"
        "def loss():\n"
        "    w = ad.Tensor(np.ones((3, 2)), requires_grad=True, name='w')\n"
        "    b = ad.Tensor(np.ones(2), requires_grad=True)\n"
        "    x = np.arange(12.0).reshape(4, 3) / 10\n"
        "    return (ad.tanh(x @ w) + b).sum()\n"))
    out = tmp_path / "g.dot"
    assert main(["render", f"{path}:loss", "--grad", "-o", str(out)]) == 0
    source = out.read_text()
    assert "df/dw" in source and "df/dparam1" in source and "gradient program" in source
    # The program drawn is the gradient with respect to w and b, and it is right.
    from autograd_dag.cli import _gradient_of, load_target
    gprog = _gradient_of(load_target(f"{path}:loss"), "loss")
    x = np.arange(12.0).reshape(4, 3) / 10
    dw, db = gprog(np.ones((3, 2)), np.ones(2))
    np.testing.assert_allclose(dw, x.T @ (1 - np.tanh(x @ np.ones((3, 2))) ** 2))
    np.testing.assert_allclose(db, [4.0, 4.0])

