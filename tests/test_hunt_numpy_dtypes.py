"""numpy's result dtypes (and values) for numpy calls on integer and boolean Tensors, where the random
programs (float operands only) do not reach. The reference is numpy itself on the same arrays; the
derivatives of the float cases are checked against PyTorch.
"""

import numpy as np
import pytest

import autograd_dag as ad

INTS = [np.bool_, np.int8, np.uint8, np.int16, np.int64]


def _operand(dtype):
    a = np.array([[0, 1, 2], [3, 1, 1]])
    return a > 0 if dtype == np.bool_ else a.astype(dtype)


def _same(ours, theirs):
    # Exact: the results are integers, booleans, or one rounding of one product in numpy's dtype.
    ours = ours.value if isinstance(ours, ad.Tensor) else np.asarray(ours)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", INTS)
def test_vecdot_keeps_the_operands_dtype(dtype):
    # np.linalg.vecdot is a gufunc in the operands' dtype: of booleans an OR of ANDs ([False, True],
    # not the counts [0, 2] that an int64 sum gave), of int8 an int8 that wraps as numpy's does.
    a = _operand(dtype)
    b = a[::-1] if dtype == np.bool_ else (a * 50).astype(dtype)
    _same(np.linalg.vecdot(ad.Tensor(a), ad.Tensor(b)), np.linalg.vecdot(a, b))
    _same(np.linalg.vecdot(ad.Tensor(a), ad.Tensor(a), axis=0), np.linalg.vecdot(a, a, axis=0))


def test_vecdot_float_value_and_gradient_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4, 3))
    x = ad.Tensor(a, requires_grad=True)
    out = np.linalg.vecdot(x, ad.Tensor(b), axis=0)
    xt = torch.tensor(a, requires_grad=True)
    ref = torch.linalg.vecdot(xt, torch.tensor(b), dim=0)
    w = rng.standard_normal(3)
    (out * w).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.value, ref.detach().numpy(), rtol=1e-12)  # (sums of 4 products)
    np.testing.assert_allclose(x.grad.value, xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("fn", [np.deg2rad, np.rad2deg, np.radians, np.degrees])
def test_degrees_of_integers_in_numpys_float(fn, dtype):
    # numpy computes int8, uint8 and bool in float16 and int16 in float32 (as np.exp does);
    # x * (π/180) made them float64.
    a = _operand(dtype)
    ours = fn(ad.Tensor(a))
    assert ours.dtype == fn(a).dtype
    # (one product rounded to the result's dtype on both sides)
    np.testing.assert_allclose(ours.value, fn(a), rtol=np.finfo(fn(a).dtype).eps)


def test_degrees_gradient_against_torch():
    torch = pytest.importorskip("torch")
    a = np.array([1.0, -30.0, 270.0])
    x = ad.Tensor(a, requires_grad=True)
    np.deg2rad(x).sum().backward()
    xt = torch.tensor(a, requires_grad=True)
    torch.deg2rad(xt).sum().backward()
    np.testing.assert_allclose(x.grad.value, xt.grad.numpy(), rtol=1e-15)


@pytest.mark.parametrize("dtype", INTS + [np.float16, np.float32])
def test_select_keeps_the_choices_dtype(dtype):
    # numpy's default is the Python int 0 (it promotes weakly): integer choices stay integers.
    a = _operand(dtype)
    _same(np.select([a > 1], [ad.Tensor(a)]), np.select([a > 1], [a]))
    _same(np.select([a > 1], [ad.Tensor(a)], default=7), np.select([a > 1], [a], default=7))


JOINS = {
    "concatenate list": lambda t: np.concatenate([t, [[5, 6, 7]]]),
    "concatenate axis None": lambda t: np.concatenate([t, [5]], axis=None),
    "stack list": lambda t: np.stack([t, [[5, 6, 7], [7, 8, 9]]]),
    "hstack list": lambda t: np.hstack([t, [[5], [6]]]),
    "vstack list": lambda t: np.vstack([t, [5, 6, 7]]),
    "column_stack list": lambda t: np.column_stack([t, [5, 6]]),
    "append scalar": lambda t: np.append(t, 5),
    "append list axis": lambda t: np.append(t, [[5, 6, 7]], axis=0),
    "diff prepend scalar": lambda t: np.diff(t, prepend=0),
    "diff append list": lambda t: np.diff(t, append=[[1], [2]]),
}


@pytest.mark.parametrize("dtype", INTS + [np.float16, np.float32])
@pytest.mark.parametrize("name", sorted(JOINS))
def test_joining_python_numbers_as_numpy_reads_them(name, dtype):
    # numpy reads a Python number or list with np.asarray (int64, bool); they became float64 Tensors,
    # so np.append(int_t, 5) was float64 where numpy's is int64.
    a = _operand(dtype)
    f = JOINS[name]
    if dtype == np.bool_ and name.startswith("diff"):
        a = a.astype(np.int8)
    _same(f(ad.Tensor(a)), f(a))


def test_diff_of_booleans_is_not_equal():
    # numpy's diff of booleans is not_equal (bool subtraction is refused); it raised a ShapeError.
    a = np.array([[True, False, False, True], [True, True, False, False]])
    for n in (1, 2):
        _same(np.diff(ad.Tensor(a), n=n), np.diff(a, n=n))
        _same(np.diff(ad.Tensor(a), axis=0), np.diff(a, axis=0))


def test_diff_with_python_prepend_gradient_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4))
    x = ad.Tensor(a, requires_grad=True)
    out = np.diff(x, n=2, axis=1, prepend=0, append=[[1.0], [2.0], [3.0]])
    xt = torch.tensor(a, requires_grad=True)
    ref = torch.diff(xt, n=2, dim=1, prepend=torch.zeros(3, 1, dtype=torch.float64),
                     append=torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.float64))
    w = rng.standard_normal(ref.shape)
    (out * w).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(out.value, ref.detach().numpy(), rtol=1e-12, atol=1e-15)  # (sums of 3 terms)
    np.testing.assert_allclose(x.grad.value, xt.grad.numpy(), rtol=1e-12, atol=1e-15)


CLIP_BOUNDS = [(150.5, None), (np.int16(1000), None), (np.array([200, 0, 0]), None), ([200, 0, 0], None),
               (np.float32(1.5), None), (None, np.float32(1.5)), (None, -200.5), (2, None), (None, 2),
               (np.int16(3), None), (None, True)]


@pytest.mark.parametrize("dtype", INTS + [np.float16, np.float32])
@pytest.mark.parametrize("a_min, a_max", CLIP_BOUNDS)
def test_clip_with_one_bound_widening_the_dtype(dtype, a_min, a_max):
    # The missing bound was x's own extreme: np.clip(int8_x, 150.5, None) gave 127 where numpy gives 150.5,
    # np.clip(int8_x, [200, 0, 0], None) [127, 0, 100] where numpy gives [200, 0, 100]; and a bool x
    # became float64.
    a = np.array([1, 0, 100]).astype(dtype) if dtype != np.bool_ else np.array([True, False, True])
    _same(np.clip(ad.Tensor(a), a_min, a_max), np.clip(a, a_min, a_max))


def test_clip_with_one_bound_gradient_against_torch():
    torch = pytest.importorskip("torch")
    a = np.array([-2.0, 0.5, 3.0, 1.0], dtype=np.float32)
    for a_min, a_max in ((1.0, None), (None, 1.0)):
        x = ad.Tensor(a, requires_grad=True)
        out = np.clip(x, a_min, a_max)
        xt = torch.tensor(a, requires_grad=True)
        ref = torch.clamp(xt, a_min, a_max)
        out.sum().backward()
        ref.sum().backward()
        assert out.dtype == np.float32 and x.grad.dtype == np.float32
        np.testing.assert_array_equal(out.value, ref.detach().numpy())
        np.testing.assert_array_equal(x.grad.value, xt.grad.numpy())  # (0s and 1s, bound included)


LISTED = {
    "add list": lambda t: t + [1, 2, 3],
    "radd list": lambda t: [1, 2, 3] + t,
    "multiply list": lambda t: t * [[2], [3]],
    "maximum list": lambda t: np.maximum(t, [0, 2, 1]),
    "where list": lambda t: np.where(t > 1, t, [7, 8, 9]),
    "matmul list": lambda t: t @ [1, 2, 3],
    "dot list": lambda t: np.dot(t, [1, 2, 3]),
    "dot python number": lambda t: np.dot(t, 2),
    "outer list": lambda t: np.outer(t[0], [1, 2]),
    "kron list": lambda t: np.kron(t, [[1, 2]]),
    "inner list": lambda t: np.inner(t, [1, 2, 3]),
    "tensordot list": lambda t: np.tensordot(t, [1, 2, 3], 1),
    "clip list": lambda t: np.clip(t, [0, 1, 1], None),
}


@pytest.mark.parametrize("dtype", INTS + [np.float16, np.float32])
@pytest.mark.parametrize("name", sorted(LISTED))
def test_python_list_beside_a_tensor_as_numpy_reads_it(name, dtype):
    # A Python list beside array operands is np.asarray's: int_t + [1, 2, 3] is int64 in numpy (it was
    # float64, the rule for a list alone, ad.Tensor([1, 2])); beside floats the result is unchanged.
    a = _operand(dtype)
    f = LISTED[name]
    _same(f(ad.Tensor(a)), f(a))


def test_a_list_alone_is_still_float64():
    assert ad.Tensor([1, 2]).dtype == np.float64
    assert ad.exp([0, 1]).dtype == np.float64


def test_take_along_axis_default_axis_and_axis_none_against_torch():
    # numpy 2's take_along_axis(arr, indices) runs along axis -1 and axis=None along the flattened arr;
    # ours required axis and refused None ("axis None is out of range").
    torch = pytest.importorskip("torch")
    a = np.arange(12.0).reshape(3, 4)
    rows = np.array([[3, 0], [1, 1], [2, 2]])
    _same(np.take_along_axis(ad.Tensor(a), rows), np.take_along_axis(a, rows))
    flat = np.array([11, 0, 11])                     # (repeats: the gradient adds)
    x = ad.Tensor(a, requires_grad=True)
    out = np.take_along_axis(x, flat, axis=None)
    _same(out, np.take_along_axis(a, flat, axis=None))
    xt = torch.tensor(a, requires_grad=True)
    ref = torch.take_along_dim(xt, torch.tensor(flat))  # (torch: dim None flattens too)
    w = np.array([1.0, 2.0, 3.0])
    (out * w).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(x.grad.value, xt.grad.numpy())  # (sums of at most two small integers)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_modes_as_numpy(mode, axis):
    # np.take(t, i, mode='wrap' / 'clip') raised TypeError (no mode keyword). The gradient adds at the
    # moved indices: numpy's own np.add.at on the indices numpy's take used is the reference.
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 5, -7], [13, -1, 2]])
    x = ad.Tensor(a, requires_grad=True)
    out = np.take(x, idx, axis=axis, mode=mode)
    _same(out, np.take(a, idx, axis=axis, mode=mode))
    w = np.arange(out.size, dtype=float).reshape(out.shape)
    (out * w).sum().backward()
    size = a.size if axis is None else a.shape[axis]
    moved = idx % size if mode == "wrap" else np.clip(idx, 0, size - 1)
    expected = np.zeros(a.size if axis is None else a.shape)
    lead = () if axis is None else (slice(None),) * (axis % a.ndim)
    np.add.at(expected, lead + (moved,), w)
    np.testing.assert_array_equal(x.grad.value, expected.reshape(a.shape))  # (sums of small integers)
