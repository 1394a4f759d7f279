"""Bugs found in review, pinned so they stay fixed."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.cli import main
from tests import helpers


def test_argnums_out_of_range_or_repeated_is_refused():
    with pytest.raises(ad.AutogradDagError, match="argnums"):
        ad.jacobian(lambda x: x * x, argnums=3)(np.ones(2))
    with pytest.raises(ad.AutogradDagError, match="twice"):
        ad.grad(lambda x, y: (x * y).sum(), argnums=(0, 0))(np.ones(2), np.ones(2))


def test_grad_program_of_a_sum_names_each_gradient():
    prog = ad.trace(lambda x, y: x + y, 1.0, 2.0)
    gprog = ad.grad_program(prog)
    names = [gprog.nodes[k].name for k in gprog.outputs]
    assert names == ["df/dx", "df/dy"]
    np.testing.assert_allclose(gprog(np.float64(3.0), np.float64(4.0)), (1.0, 1.0))


def test_grad_program_of_a_program_returning_a_one_tuple():
    prog = ad.trace(lambda x: ((x * x).sum(),), np.ones(2))
    np.testing.assert_allclose(ad.grad_program(prog)(np.array([1.0, 2.0])), [2.0, 4.0])


def test_mse_loss_refuses_shapes_that_would_broadcast():
    with pytest.raises(ad.ShapeError, match="same shape"):
        ad.nn.functional.mse_loss(ad.Tensor(np.zeros((3, 1))), np.zeros(3))


def test_optimizer_step_is_all_or_nothing():
    a = ad.nn.Parameter(np.ones(2))
    b = ad.nn.Parameter(np.ones(3))
    opt = ad.optim.SGD([a, b], lr=0.1)
    a.grad = ad.Tensor(np.ones(2))
    b.grad = ad.Tensor(np.ones(2))  # wrong shape
    with pytest.raises(ad.AutogradDagError, match="parameter 1"):
        opt.step()
    np.testing.assert_array_equal(a.value, np.ones(2))
    assert opt.steps == 0


def test_numpy_reduction_keywords_are_refused_not_ignored():
    t = ad.Tensor([1.0, 2.0, 3.0])
    # where= is honoured now (numpy_more.py), out= still refused: never silently ignored.
    assert float(np.sum(t, where=np.array([True, False, False])).value) == 1.0
    with pytest.raises(ad.AutogradDagError, match="out="):
        np.sum(t, out=np.zeros(()))
    assert float(np.sum(t).value) == 6.0


def test_circuit_command_on_a_bare_variable(capsys):
    assert main(["circuit", "x"]) == 0
    assert "ratio" in capsys.readouterr().out


def test_missing_vjp_is_refused_before_anything_is_freed():
    no_vjp = ad.primitive("regression_no_vjp", lambda x: 2.0 * x, jvp=lambda t, out, x: t[0] * 2.0,
                          replace=True)
    x = ad.Tensor([1.0, 2.0], requires_grad=True)
    y = ad.exp(x)
    loss = (no_vjp(y) + y).sum()
    with pytest.raises(ad.NotDifferentiableError, match="regression_no_vjp"):
        loss.backward()
    # Nothing was freed: the graph can still be turned into a program.
    ad.Program.from_outputs(x, loss)


def test_shape_errors_from_argument_checks_name_the_users_line():
    with pytest.raises(ad.ShapeError) as err:
        ad.concatenate([])
    assert "test_regressions.py:" in str(err.value)


@pytest.mark.slow
def test_a_recorded_million_node_chain_is_freed_without_recursion():
    x = ad.Tensor(np.ones(1), requires_grad=True)
    y = x
    for _ in range(1_000_000):
        y = ad.tanh(y)
    ref = __import__("weakref").ref(y)
    del y  # CPython frees the chain of parents; it must not overflow the C stack
    assert ref() is None


def test_tensors_iterate_by_rows_and_refuse_item_assignment():
    t = ad.Tensor(np.arange(6.0).reshape(2, 3))
    rows = list(t)
    assert len(rows) == 2 and all(r.prim is not None and r.shape == (3,) for r in rows)
    with pytest.raises(ad.AutogradDagError, match="in place"):
        t[0, 0] = 1.0
    with pytest.raises(ad.AutogradDagError, match=r"shape \(2, 3\) is ambiguous"):
        bool(t > 0)


def test_a_reductions_dtype_casts_the_entries_before_accumulating_as_numpy_does():
    # np.sum([0.6, 0.6], dtype=int) adds int(0.6) + int(0.6) = 0; summing first gave int(1.2) = 1.
    a = np.array([[0.6, 0.6], [1.7, -0.6]])
    t = ad.Tensor(a)
    for ours, theirs in [(np.sum(t, dtype=np.int32), np.sum(a, dtype=np.int32)),
                         (t.sum(axis=0, dtype=np.int64), a.sum(axis=0, dtype=np.int64)),
                         (np.cumsum(t, dtype=np.int64), np.cumsum(a, dtype=np.int64)),
                         (t.cumsum(axis=1, dtype=np.int64), a.cumsum(axis=1, dtype=np.int64)),
                         (np.trace(t * 0.9, dtype=np.int64), np.trace(a * 0.9, dtype=np.int64)),
                         (np.mean(t, dtype=np.float32), np.mean(a, dtype=np.float32)),
                         (np.mean(t * 10, axis=1, dtype=np.int64), np.mean(a * 10, axis=1, dtype=np.int64))]:
        assert ours.dtype == theirs.dtype
        if theirs.dtype.kind == "f":   # the float32 mean: a sum of both signs, whose order is not the point
            np.testing.assert_allclose(ours.value, theirs, rtol=0,
                                       atol=helpers.reordered_sum_rtol(a.size, np.float32) * np.abs(a).mean())
        else:
            np.testing.assert_array_equal(ours.value, theirs)
    # The derivative through a float32 accumulation comes back to the float64 input.
    g = ad.grad(lambda x: np.sum(x * x, dtype=np.float32))(a)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * a, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.uint8, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("exponent", [2, 2.0, 3, 3.0, 0.5, 1, 0])
def test_a_static_power_has_numpys_dtype_eager_and_traced(dtype, exponent):
    # bool ** 2.0 gave int8 (np.square's dtype for bool), numpy's float64: the square fast path
    # is numpy's for an integer 2 or a float array only. The traced program's abstract dtype too.
    x = np.array([0, 1, 1], dtype=dtype)
    expected = x ** exponent
    got = ad.Tensor(x) ** exponent
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.value, expected)   # small integers and 0.5 powers of 0 and 1: exact
    traced = ad.trace(lambda t: t ** exponent, x)
    assert traced.nodes[-1].dtype == expected.dtype
