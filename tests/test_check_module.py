"""ad.nn.check_module: every parameter's gradient of a model's loss, by finite differences, named by path."""

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn

RNG = np.random.default_rng(0)


def test_layers_pass_and_every_parameter_is_reported_by_path():
    cases = [
        (nn.MLP([3, 4, 2], activation="tanh", rng=0), RNG.random((5, 3)), None),
        (nn.Linear(40, 30, rng=0), RNG.random((5, 40)), None),
        (nn.LayerNorm(6), RNG.random((5, 6)), lambda y: (y * y * np.arange(6.0)).sum()),
        (nn.Conv2d(2, 3, 3, rng=0), RNG.random((2, 2, 6, 6)), None),
        (nn.MultiHeadAttention(8, heads=2, rng=0), RNG.random((4, 8)), None),
        (nn.TransformerBlock(8, heads=2, hidden=16, rng=0), RNG.random((4, 8)), lambda y: (y * y).sum()),
    ]
    for model, x, loss in cases:
        report = nn.check_module(model, x, loss=loss)
        assert report.ok and report.failed == []
        assert [p.name for p in report.parameters] == [n for n, _ in model.named_parameters()]
    assert "attention.W_Q" in str(report) and "norm2.beta" in str(report)


def test_big_parameters_are_sampled_deterministically_by_seed():
    model, x = nn.Linear(40, 30, rng=0), RNG.random((5, 40))
    weight = nn.check_module(model, x, max_entries=10, directions=3).parameters[0]
    assert weight.checked == "10 random entries of 1200 + 3 random directions"
    assert weight.evaluations == 2 * (10 + 3)
    again = nn.check_module(model, x, max_entries=10, directions=3).parameters[0]
    assert again.max_abs_err == weight.max_abs_err     # the same seed draws the same entries: the same run


# A layer with a custom primitive whose VJP for its parameter drops a factor x.
scaled_tanh = ad.primitive(
    "scaled_tanh_module_check", lambda x, s: s * np.tanh(x),
    vjp=lambda ct, out, x, s: (ct * s * (1.0 - ad.tanh(x) ** 2), ad.sum(ct, axis=0) * 1.0),
    jvp=lambda t, out, x, s: ((t[0] * s * (1.0 - ad.tanh(x) ** 2) if t[0] is not None else 0.0)
                              + (t[1] * ad.tanh(x) if t[1] is not None else 0.0)),
    replace=True)


class ScaledTanh(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(np.linspace(0.5, 1.5, n))

    def forward(self, x):
        return scaled_tanh(x, self.scale)


def test_a_broken_custom_primitive_is_named_by_its_parameter():
    model = nn.Sequential(nn.Linear(3, 4, rng=0), ScaledTanh(4), nn.Linear(4, 2, rng=1))
    x = RNG.random((5, 3))
    with pytest.raises(ad.GradientCheckError) as info:
        nn.check_module(model, x)
    msg = str(info.value)
    assert "wrong: 1.scale" in msg and "WRONG 1.scale (4,)" in msg
    assert "ok    0.weight" in msg        # the layer below gets the right cotangent through x
    report = nn.check_module(model, x, raise_on_failure=False)
    assert report.failed == ["1.scale"]
    assert "entry (" in report.parameters[2].worst[0]


def test_a_wrong_entry_of_a_big_parameter_is_caught_by_the_directions():
    # The same wrong rule, on a parameter too big to check entry by entry: the entry
    # sample may miss the wrong entries, the random directions do not.
    model = nn.Sequential(nn.Linear(3, 64, rng=0), ScaledTanh(64))
    # (all_up_to=0: its 64 entries would otherwise all be checked, the default bound being 256)
    report = nn.check_module(model, RNG.random((5, 3)), max_entries=2, directions=2, raise_on_failure=False,
                             all_up_to=0)
    assert report.failed == ["1.scale"]
    assert any("direction" in w for w in report.parameters[2].worst)


def test_a_random_model_is_refused():
    model = nn.Sequential(nn.Linear(3, 4, rng=0), nn.Dropout(0.5, rng=0))
    with pytest.raises(ad.AutogradDagError, match="model.eval"):
        nn.check_module(model, np.ones((5, 3)))
    assert nn.check_module(model.eval(), np.ones((5, 3))).ok
