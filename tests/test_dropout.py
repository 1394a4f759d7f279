"""Dropout: the mask as a pure function of a seed, in eager mode, jit, checkpoint and vmap.

The reference mask is drawn here from NumPy's generator as the docstring of
``dropout_mask`` specifies; gradients are compared with that mask, not with
the library's own rules.
"""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.errors import AutogradDagError, ShapeError, TracingError
from autograd_dag.nn import functional as F

RNG = np.random.default_rng(11)


def _mask(shape, seed, p, stream=0):
    return (np.random.default_rng([stream, seed]).random(shape) >= p) / (1.0 - p)


def test_values_and_gradient_are_the_seeds_mask():
    x = RNG.standard_normal((4, 5))
    w = RNG.standard_normal((4, 5))
    t = ad.Tensor(x, requires_grad=True)
    y = F.dropout(t, 0.4, seed=9)
    np.testing.assert_array_equal(y.value, x * _mask((4, 5), 9, 0.4))
    ad.sum(y * w).backward()
    np.testing.assert_array_equal(t.grad.value, w * _mask((4, 5), 9, 0.4))
    ad.check_grads(lambda x: ad.sum(ad.tanh(F.dropout(x, 0.4, seed=9))), (x,), order=2)


def test_the_expected_value_is_kept():
    y = F.dropout(np.ones(200_000), 0.3, seed=1).value
    assert abs(np.mean(y == 0) - 0.3) < 0.005
    assert abs(np.mean(y) - 1.0) < 0.01


def test_eval_mode_and_p_zero_are_the_identity_and_bad_p_is_refused():
    x = ad.Tensor(np.ones(3))
    assert F.dropout(x, 0.5, training=False) is x and F.dropout(x, 0.0) is x
    drop = nn.Dropout(0.5, rng=0)
    assert drop.eval()(x) is x
    for p in (1.0, -0.1, 1.5):
        with pytest.raises(ShapeError, match="drop probability"):
            F.dropout(x, p)
        with pytest.raises(ShapeError, match="drop probability"):
            nn.Dropout(p)


def test_a_module_draws_a_new_mask_each_call_reproducibly_from_its_rng():
    a, b = nn.Dropout(0.5, rng=3), nn.Dropout(0.5, rng=3)
    first, second = a(np.ones(64)).value, a(np.ones(64)).value
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, b(np.ones(64)).value)
    np.testing.assert_array_equal(second, b(np.ones(64)).value)


def test_float32_stays_float32():
    y = F.dropout(np.ones(8, np.float32), 0.5, seed=0)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.value, _mask(8, 0, 0.5).astype(np.float32))


def test_jit_refuses_a_seed_it_would_freeze_and_draws_new_masks_from_a_seed_argument():
    with pytest.raises(TracingError, match="random_seed"):
        ad.jit(lambda x: F.dropout(x, 0.5))(np.ones(3))
    x = RNG.standard_normal(32)
    w = np.linspace(0.5, 1.5, 32)

    def loss(w, x, seed):
        with ad.random_seed(seed):
            h = F.dropout(x * w, 0.5)               # stream 0
            return ad.sum(F.dropout(h, 0.25) ** 2)   # stream 1

    def expect(w, seed):
        m0, m1 = _mask(32, seed, 0.5, 0), _mask(32, seed, 0.25, 1)
        return 2 * (x * w * m0 * m1) * m1 * m0 * x

    step = ad.jit(ad.grad(loss))
    for seed in (1, 2, np.int64(3), 1):
        np.testing.assert_allclose(step(w, x, seed), expect(w, int(seed)), rtol=1e-14)
    assert len(step.programs) <= 2  # a Python int and an int64 seed: no trace per value
    np.testing.assert_allclose(ad.grad(loss)(w, x, 2), expect(w, 2), rtol=1e-14)


def test_a_seed_block_opened_outside_a_jit_does_not_freeze_into_it():
    with ad.random_seed(0):
        step = ad.jit(lambda x: F.dropout(x, 0.5))
        with pytest.raises(TracingError, match="random_seed"):
            step(np.ones(4))
        # A block opened inside the traced function with a constant seed is an explicit choice.
        fixed = ad.jit(lambda x: _fixed(x))
        np.testing.assert_array_equal(fixed(np.ones(6)), _mask(6, 5, 0.5))


def _fixed(x):
    with ad.random_seed(5):
        return F.dropout(x, 0.5)


def test_a_non_integral_seed_an_integer_operand_and_a_misshapen_seed_are_refused():
    with pytest.raises(ShapeError, match="integer seeds"):
        F.dropout(np.ones(3), 0.5, seed=np.float64(1.5))
    with pytest.raises(ShapeError, match="floating-point operand"):
        F.dropout(np.ones(3, np.int64), 0.3, seed=0)   # 1/(1 − p) would be truncated to 1
    with pytest.raises(ShapeError, match="prefix"):
        ad.primitives.random.dropout_mask(np.ones((2, 3)), np.array([1, 2, 3]), 0.5)


def test_checkpoint_needs_an_explicit_seed_and_then_differentiates_the_same_mask():
    x = RNG.standard_normal(16)
    with pytest.raises(AutogradDagError, match="checkpoint needs an explicit seed"):
        ad.checkpoint(lambda x: F.dropout(x, 0.5))(ad.Tensor(x, requires_grad=True))

    def block(x):
        return ad.tanh(F.dropout(x, 0.5, seed=4)) ** 2
    plain = ad.grad(lambda x: ad.sum(block(x)))(x)
    checkpointed = ad.grad(lambda x: ad.sum(ad.checkpoint(block)(x)))(x)
    np.testing.assert_array_equal(plain, checkpointed)
    m = _mask(16, 4, 0.5)
    np.testing.assert_allclose(plain, 2 * np.tanh(x * m) * (1 - np.tanh(x * m) ** 2) * m, rtol=1e-14)


def test_vmap_gives_each_seed_its_mask_and_one_seed_the_same_mask_for_every_example():
    xs = RNG.standard_normal((3, 10))
    seeds = np.array([5, 6, 7])
    per_seed = ad.vmap(lambda x, s: F.dropout(x, 0.5, seed=s))(xs, seeds)
    np.testing.assert_array_equal(per_seed, np.stack([x * _mask(10, s, 0.5) for x, s in zip(xs, seeds)]))
    shared = ad.vmap(lambda x: F.dropout(x, 0.5, seed=5))(xs)
    np.testing.assert_array_equal(shared, xs * _mask(10, 5, 0.5))


def test_a_traced_program_takes_the_seed_as_an_input():
    def f(x, seed):
        with ad.random_seed(seed):
            return F.dropout(x, 0.5)
    program = ad.trace(f, np.ones(20), np.int64(0))
    assert "dropout_mask" in {node.prim.name for node in program.nodes if node.prim is not None}
    np.testing.assert_array_equal(program(np.ones(20), np.int64(8)), _mask(20, 8, 0.5))
    np.testing.assert_array_equal(program(np.ones(20), np.int64(9)), _mask(20, 9, 0.5))


def test_transformer_and_bert_dropout_is_on_in_training_and_off_in_eval():
    tokens = np.array([[1, 2, 3, 4]])
    for make in (lambda p: nn.TransformerLM(7, d_model=8, heads=2, hidden=16, layers=2, dropout=p, rng=0),
                 lambda p: nn.BERT(7, d_model=8, heads=2, hidden=16, layers=1, max_length=8, dropout=p, rng=0)):
        plain, dropped = make(0.0), make(0.3)
        dropped.load_state_dict(plain.state_dict())
        run = (lambda m: m(tokens).value) if isinstance(plain, nn.TransformerLM) else (
            lambda m: m.hidden_states(tokens).value)
        assert not any(isinstance(m, nn.Dropout) for m in plain.modules())
        assert not np.allclose(run(dropped), run(plain))     # training mode: masks drawn
        dropped.eval()
        np.testing.assert_array_equal(run(dropped), run(plain))
