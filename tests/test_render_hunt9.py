"""Defect hunt 9 of the renderer: scope addresses (dotted names vs nested scopes, torch's module paths),
and what pictures say about unusual programs.

Every picture test lays the picture out with ``dot`` for real and reads the SVG back.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")

SVG = "{http://www.w3.org/2000/svg}"


def svg_of(graph) -> ET.Element:
    """Lay ``graph`` out with dot and parse the SVG (a RenderError or invalid XML fails the test)."""
    return ET.fromstring(graph.pipe(format="svg"))


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def _dotted_and_nested(x):
    with ad.name_scope("layer.1"):
        x = ad.exp(x)
    with ad.name_scope("layer"), ad.name_scope("1"):
        x = ad.tanh(x)
    return ad.sum(x)


def test_an_address_two_scopes_spell_is_refused_listing_both():
    # "layer.1" was the union of name_scope("layer.1") and name_scope("layer")/("1"): one picture of
    # two unrelated scopes, exp and tanh side by side.
    p = ad.trace(_dotted_and_nested, np.ones(2))
    with pytest.raises(ad.RenderError, match=r"scope 'layer.1' is ambiguous.*\('layer', '1'\) \(1 nodes\) and "
                                             r"\('layer.1',\) \(1 nodes\).*scope=\('layer', '1'\)"):
        ad.render(p, scope="layer.1")
    nested = texts(svg_of(ad.render(p, scope=("layer", "1"))))
    dotted = texts(svg_of(ad.render(p, scope=("layer.1",))))
    assert "tanh" in nested and "exp" not in nested
    assert "exp" in dotted and "tanh" not in dotted
    assert "tanh" in texts(svg_of(ad.render(p, scope="layer")))  # "layer" alone is one scope
    with pytest.raises(ad.RenderError, match=r"has no scope 'layer\.2'"):
        ad.render(p, scope=("layer", "2"))


def test_a_site_of_the_ambiguous_program_still_writes(tmp_path):
    p = ad.trace(_dotted_and_nested, np.ones(2))
    site = ad.render_site(p, tmp_path, max_nodes=3, view="dag")
    assert site.pages and (tmp_path / "index.html").exists()


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 2))
        self.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

    def forward(self, x):
        for layer in self.layers:  # iterated, never called: the list opens no scope
            x = ad.relu(layer(x))
        return ad.sum(self.seq(x))


def _members(graph) -> set:
    """The program node numbers ``%k`` drawn as operations (not boundary values) in a scope's picture."""
    return {line.split("%")[1].split()[0].split("<")[0] for line in graph.source.splitlines()
            if "%" in line and "boundary" not in line and "from " not in line and "label=<<B>" in line}


def test_torch_module_paths_find_their_scopes():
    # torch's named_modules paths ("seq.0", "layers.1") were "no scope": the clusters are titled
    # Linear0 (class and index), and a list that is only iterated opens no scope at all.
    model = _Net()
    p = ad.trace(model, np.ones((1, 2)))
    names = dict(model.named_parameters())
    assert "seq.0.weight" in names and "layers.1.weight" in names
    assert _members(ad.render(p, scope="seq.0")) == _members(ad.render(p, scope="seq.Linear0"))
    assert _members(ad.render(p, scope="seq.1")) == _members(ad.render(p, scope="seq.Tanh1"))
    assert _members(ad.render(p, scope="layers.1")) == _members(ad.render(p, scope="Linear1"))
    assert _members(ad.render(p, scope="layers.1")) != _members(ad.render(p, scope="Linear0"))
    listing = texts(svg_of(ad.render(p, scope="layers.1")))
    assert any("matmul" in t for t in listing) and not any("tanh" in t for t in listing)
    with pytest.raises(ad.RenderError, match="no scope 'layers'.*list that is only iterated|no scope 'layers'"):
        ad.render(p, scope="layers")  # the list itself has no scope: refused, not the whole program
    g = ad.grad_program(p)
    assert _members(ad.render(g, scope="backward pass.seq.2")) == _members(ad.render(g, scope="backward pass.seq.Linear2"))


def test_an_unknown_scope_lists_the_scopes_ending_in_it():
    def f(x):
        for i in range(3):
            with ad.name_scope(f"block{i}"), ad.name_scope("attention"):
                x = ad.tanh(x)
        return ad.sum(x)

    with pytest.raises(ad.RenderError, match=r"no scope 'attention'; scopes ending in it: 'block0.attention', "
                                             r"'block1.attention', 'block2.attention'"):
        ad.render(ad.trace(f, np.ones(2)), scope="attention")
