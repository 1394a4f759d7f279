"""Parameter names given by a root module call stay right when the module tree changes between calls.

``Module.__call__`` at the root names every parameter by its dotted path, so
that programs and pictures show "fc3.weight"; each kind of change a call must
see is made after a call here (guards for any cache of those names).
"""

from __future__ import annotations

import numpy as np

import autograd_dag as ad
from autograd_dag import nn


class _Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(2, 2, rng=0)]
        self.head = nn.Linear(2, 1, rng=1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def _names(model):
    return sorted(p.name for p in model.parameters())


def test_a_root_call_names_parameters_after_every_kind_of_change():
    """Each change below happens after a call; the next call must name by dotted path again."""
    model, x = _Stack(), np.ones((3, 2))
    spare, other = nn.Linear(2, 2, rng=2), nn.Linear(2, 2, rng=3)   # made before the calls
    model(x)
    assert _names(model) == ["head.bias", "head.weight", "layers.0.bias", "layers.0.weight"]
    # A layer appended to a plain list: no __setattr__ sees it (its parameters keep their short names until the call).
    model.layers.append(spare)
    assert model.layers[1].weight.name == "weight"
    model(x)
    assert model.layers[1].weight.name == "layers.1.weight"
    # A list item replaced in place, the old one freed: the new one is named.
    model.layers[0] = other
    model(x)
    assert model.layers[0].bias.name == "layers.0.bias"
    # A name the user overwrote is given back, as on every root call.
    model.head.weight.name = "mine"
    model(x)
    assert model.head.weight.name == "head.weight"
    # An attribute deleted, then a new parameter under a new attribute of a layer.
    del model.head
    model.head = nn.Linear(2, 1, rng=4)
    model.head.extra = nn.Parameter(np.zeros(1))
    model(x)
    assert model.head.extra.name == "head.extra"
    assert _names(model) == sorted(["head.bias", "head.weight", "head.extra", "layers.0.bias",
                                    "layers.0.weight", "layers.1.bias", "layers.1.weight"])


def test_functional_call_then_a_call_names_the_module_own_parameters():
    model, x = _Stack(), np.ones((3, 2))
    model(x)
    given = ad.Tensor(np.ones((1, 2)))
    nn.functional_call(model, {"head.weight": given}, x)
    assert given.name is None               # a substituted Tensor is not the module's parameter
    model(x)
    assert model.head.weight.name == "head.weight"
