"""Overlays: numbers per node computed by running a program, drawn by the renderer as fill colours.

The numbers are checked against independent numpy computations (a hand-written
backward pass, numpy's own statistics); the pictures are laid out by ``dot`` for
real and their fill colours read back from the SVG.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.errors import RenderError
from autograd_dag.render import as_program

SVG = "{http://www.w3.org/2000/svg}"


def svg_fills(graph) -> dict[str, str]:
    """{Graphviz node id: fill colour of its shape} from the SVG that ``dot`` writes."""
    root = ET.fromstring(graph.pipe(format="svg"))
    fills = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "node":
            continue
        title = g.find(f"{SVG}title").text
        for shape in g.iter():   # (inside the <a> a tooltip adds)
            fill = shape.get("fill")
            if shape.tag in (f"{SVG}polygon", f"{SVG}ellipse", f"{SVG}path") and fill not in (None, "none"):
                fills[title] = fill.lower()
                break
    return fills


def dot_attr(source: str, node_id: str, attr: str) -> str | None:
    """An attribute of node ``node_id`` in DOT text (None when absent)."""
    m = re.search(rf"^\s*{re.escape(node_id)} \[(.*)\]$", source, re.M)
    assert m, f"no node {node_id} in the DOT"
    found = re.search(rf'\b{attr}="?([^" \]]+)"?', m.group(1))
    return found.group(1) if found else None


def luminance(color: str) -> float:
    """Relative luminance (sRGB, ITU-R BT.709), written here apart from the library's: viridis grows in it."""
    rgb = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def mlp_loss():
    """A two-layer tanh network's squared error, with every array to recompute its gradient in numpy."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(6, 4)), rng.normal(size=(6, 3))
    W1, b1, W2 = rng.normal(size=(4, 5)), rng.normal(size=5), rng.normal(size=(5, 3)) * 3.0
    tW1 = ad.Tensor(W1, requires_grad=True, name="W1")
    tb1 = ad.Tensor(b1, requires_grad=True, name="b1")
    tW2 = ad.Tensor(W2, requires_grad=True, name="W2")
    tx = ad.Tensor(x, name="x")
    h = ad.tanh(tx @ tW1 + tb1)
    loss = (((h @ tW2) - y) ** 2).sum() * 0.5
    return as_program(loss), dict(x=x, y=y, W1=W1, b1=b1, W2=W2)


def test_gradient_norms_equal_a_hand_written_backward_pass():
    prog, a = mlp_loss()
    norms = ad.overlays.gradient_norms(prog, a["x"])
    # numpy: forward, then backward by hand.
    z = a["x"] @ a["W1"] + a["b1"]
    h = np.tanh(z)
    r = h @ a["W2"] - a["y"]
    d_out = r                                # d(0.5 Σ r²)/d(h W2)
    d_h = d_out @ a["W2"].T
    d_z = d_h * (1 - h ** 2)
    expected = {"W1": a["x"].T @ d_z, "b1": d_z.sum(0), "W2": h.T @ d_out, "x": d_z @ a["W1"].T}
    by_name = {prog.nodes[k].name: k for k in prog.inputs + tuple(
        n.index for n in prog.nodes if n.op is ad.NodeKind.PARAMETER)}
    tanh = next(n.index for n in prog.nodes if n.op == "tanh")
    # The library sums the products in other orders than numpy here: equal up to rounding.
    for name, g in expected.items():
        np.testing.assert_allclose(norms[by_name[name]], np.linalg.norm(g), rtol=1e-12)
    np.testing.assert_allclose(norms[tanh], np.linalg.norm(d_h), rtol=1e-12)
    assert norms[prog.outputs[0]] == 1.0
    # Constants (y, 0.5, 2) carry no gradient: no number, drawn neutral.
    constants = [n.index for n in prog.nodes if n.op is ad.NodeKind.CONSTANT]
    assert constants and not any(k in norms for k in constants)
    # ... and equal ad.grad of the same function with respect to the first layer's weights.
    g = ad.grad(lambda W1: (((ad.tanh(a["x"] @ W1 + a["b1"]) @ a["W2"]) - a["y"]) ** 2).sum() * 0.5)(a["W1"])
    np.testing.assert_allclose(norms[by_name["W1"]], np.linalg.norm(g), rtol=1e-12)


def test_gradient_norms_of_other_orders_and_non_finite_gradients_outlined():
    prog = ad.trace(lambda x: ad.sqrt(x).sum(), np.ones(3))
    x = np.array([4.0, 0.0, 1.0])   # d sqrt/dx at 0 is inf
    o = ad.overlays.gradient_norms(prog, x, ord=np.inf)
    assert 0 not in o and o.outline == (0,)
    np.testing.assert_allclose(o[1], 1.0)   # d sum/d sqrt(x) = ones: max-norm 1
    assert "non-finite gradient" in o.outline_text


def test_profile_times_every_function_node():
    prog, a = mlp_loss()
    times = ad.profile(prog, a["x"], repeat=3)
    computed = {n.index for n in prog.nodes if n.prim is not None}
    assert set(times) == computed
    assert all(t >= 0 for t in times.values()) and sum(times.values()) > 0
    assert times.target == "function" and times.aggregate == "sum"
    # Its numbers colour the bipartite view's function boxes, never the variables.
    fills = svg_fills(ad.render(prog, view="bipartite", overlay=times))
    variables = [node for node in fills if node.startswith("v")]
    assert len(variables) >= len(prog.inputs) + 3 and all(fills[v] == "#f4f4f4" for v in variables)
    assert all(fills[f"f{k}"] != "#f4f4f4" for k in computed)


def test_nonfinite_outlines_the_first_non_finite_node_in_topological_order():
    def f(x, y):
        a = ad.sqrt(x)       # NaN where x < 0: the first non-finite node
        b = ad.log(y)        # -inf where y == 0, later
        return (a + b).sum()
    x, y = np.array([1.0, -1.0, 4.0]), np.array([0.0, 1.0, 1.0])
    with np.errstate(all="ignore"):   # tracing runs f on these very values
        prog = ad.trace(f, x, y)
    o = ad.overlays.nonfinite(prog, x, y)
    sqrt = next(n.index for n in prog.nodes if n.op == "sqrt")
    log = next(n.index for n in prog.nodes if n.op == "log")
    assert o.first == sqrt and sqrt < log
    with np.errstate(all="ignore"):
        expected = {0: x, 1: y, sqrt: np.sqrt(x), log: np.log(y)}
    for k, v in expected.items():
        assert o[k] == np.count_nonzero(~np.isfinite(v))
    assert o[prog.outputs[0]] == 1.0
    source = ad.render(prog, overlay=o).source
    outlined = [k for k in range(len(prog.nodes)) if dot_attr(source, f"n{k}", "penwidth") == "4"]
    assert outlined == [sqrt]
    assert f"first non-finite: %{sqrt}" in source
    assert ad.overlays.nonfinite(prog, np.ones(3), np.ones(3)).first is None


def test_value_stats_equal_numpy():
    x = np.array([[-3.0, 0.5], [2.0, 1.0]])
    prog = ad.trace(lambda x: ad.exp(x) * x, x)
    values = {0: x, 1: np.exp(x), 2: np.exp(x) * x}
    for stat, fn in [("absmax", lambda v: np.abs(v).max()), ("range", np.ptp), ("std", np.std),
                     ("rms", lambda v: np.sqrt((v ** 2).mean()))]:
        o = ad.overlays.value_stats(prog, x, stat=stat)
        for k, v in values.items():
            np.testing.assert_allclose(o[k], fn(v), rtol=1e-12)   # a reduction: order of sums may differ


def test_saved_bytes_counts_the_operands_of_differentiated_nodes():
    # f(x, n) = exp(x * 2.0) + n: n (an integer input) is not differentiated, but add holds it.
    prog = ad.trace(lambda x, n: (ad.exp(x * 2.0) + n).sum(), np.ones((3, 4)), np.ones(4, dtype=np.int64))
    o = ad.overlays.saved_bytes(prog)
    by_op = {str(n.op): n.index for n in prog.nodes}
    assert o[prog.inputs[0]] == 3 * 4 * 8 and o[prog.inputs[1]] == 4 * 8
    assert o[by_op["multiply"]] == 96 and o[by_op["exp"]] == 96 and o[by_op["add"]] == 96
    assert by_op["sum"] not in o   # the output is held by the caller, not for backward
    # Differentiating nothing keeps nothing.
    nothing = ad.trace(lambda n: (n * 2).sum(), np.ones(4, dtype=np.int64))
    with pytest.raises(RenderError, match="gives no node a number"):
        ad.render(nothing, overlay=ad.overlays.saved_bytes(nothing))


@pytest.mark.parametrize("scale", ["linear", "log"])
@pytest.mark.parametrize("view", ["dag", "bipartite"])
def test_fill_colours_in_the_svg_follow_the_order_of_the_numbers(scale, view):
    prog = ad.trace(lambda x: ad.tanh(ad.exp(ad.sin(ad.cos(x))) * 2.0).sum(), np.ones(3))
    rng = np.random.default_rng(1)
    numbers = {k: float(v) for k, v in enumerate(10.0 ** rng.uniform(-4, 2, len(prog.nodes)))}
    graph = ad.render(prog, view=view, overlay=ad.Overlay(numbers, scale=scale, label="random"),
                      inline_constants=False)
    fills = svg_fills(graph)   # dot ran for real
    prefix = "n" if view == "dag" else "v"
    order = sorted(numbers, key=numbers.get)
    lum = [luminance(fills[f"{prefix}{k}"]) for k in order]
    assert lum == sorted(lum) and lum[0] < lum[-1]
    assert fills[f"{prefix}{order[0]}"] == "#440154" and fills[f"{prefix}{order[-1]}"] == "#fde725"
    # The colour bar sits in the legend with the ends of the scale.
    assert f"({scale} scale)" in graph.source and "#440154" in graph.source


def test_collapsed_scopes_show_the_aggregate_of_their_members():
    def f(x):
        with ad.name_scope("block"):
            y = ad.exp(x) * 2.0
            y = ad.sin(y)
        return (y * x).sum()
    prog = ad.trace(f, np.ones(3))
    # The scalar constant 2.0 is inlined into its multiply's label: no member of the box.
    members = [n.index for n in prog.nodes if n.scope and n.scope[0] == "block" and n.parents]
    assert len(members) == 3
    numbers = {k: float(k + 1) for k in range(len(prog.nodes))}
    for aggregate, expected in [("max", max(numbers[k] for k in members)),
                                ("mean", np.mean([numbers[k] for k in members])),
                                ("sum", sum(numbers[k] for k in members))]:
        for view in ("dag", "bipartite"):
            g = ad.render(prog, view=view, depth=0, overlay=ad.Overlay(numbers, aggregate=aggregate,
                                                                       scale="linear"))
            assert f"{aggregate} {expected:.3g}" in g.source
            assert f"collapsed boxes: {aggregate} of their members" in g.source


def test_nodes_are_named_by_index_name_or_node_object():
    prog, a = mlp_loss()
    w1 = next(n for n in prog.nodes if n.name == "W1")
    for key in (w1.index, "W1", w1):
        src = ad.render(prog, overlay={key: 5.0, prog.outputs[0]: 1.0}).source
        assert dot_attr(src, f"n{w1.index}", "fillcolor") == "#fde725"
        assert dot_attr(src, "n0", "fillcolor") == "#f4f4f4"   # x: no number, neutral


def test_bad_overlays_are_refused_with_the_library_error():
    prog, a = mlp_loss()
    with pytest.raises(RenderError, match="no node is named 'nope'"):
        ad.render(prog, overlay={"nope": 1.0})
    with pytest.raises(RenderError, match="node %99 does not exist"):
        ad.render(prog, overlay={99: 1.0})
    other = ad.trace(ad.exp, np.ones(2))
    with pytest.raises(RenderError, match="is not a node of program"):
        ad.render(prog, overlay={other.nodes[1]: 1.0})
    for bad in (np.nan, np.inf):
        with pytest.raises(RenderError, match=r"node 'W1' \(%\d+\) has the number .*finite numbers"):
            ad.render(prog, overlay={"W1": bad, 0: 1.0})
    with pytest.raises(RenderError, match="must be a real number"):
        ad.render(prog, overlay={0: "big"})
    with pytest.raises(RenderError, match="gives no node a number"):
        ad.render(prog, overlay={})
    with pytest.raises(RenderError, match="log scale needs positive numbers"):
        ad.render(prog, overlay=ad.Overlay({0: -1.0, 1: 0.0}, scale="log"))
    with pytest.raises(RenderError, match="scale must be one of"):
        ad.Overlay({0: 1.0}, scale="cubic")
    with pytest.raises(RenderError, match="limits must be finite with low < high"):
        ad.Overlay({0: 1.0}, limits=(2.0, 1.0))
    with pytest.raises(RenderError, match="color_by='op' and overlay"):
        ad.render(prog, overlay={0: 1.0}, color_by="op")
    with pytest.raises(RenderError, match="mapping from node"):
        ad.render(prog, overlay=[1.0, 2.0])
    with pytest.raises(ad.errors.ProgramInputError):
        ad.overlays.gradient_norms(prog, np.ones((2, 2)))


def test_log_scale_chosen_for_numbers_spanning_decades_and_shared_limits():
    prog = ad.trace(lambda x: ad.exp(x).sum(), np.ones(2))
    wide = ad.render(prog, overlay={0: 1e-6, 1: 1.0, 2: 1e3}).source
    narrow = ad.render(prog, overlay={0: 1.0, 1: 2.0, 2: 3.0}).source
    assert "(log scale)" in wide and "(linear scale)" in narrow
    # Fixed limits: the same number gets the same colour in two pictures.
    o1 = ad.Overlay({0: 1.0, 1: 2.0}, limits=(0.0, 4.0))
    o2 = ad.Overlay({0: 1.0, 1: 4.0}, limits=(0.0, 4.0))
    s1, s2 = ad.render(prog, overlay=o1).source, ad.render(prog, overlay=o2).source
    assert dot_attr(s1, "n0", "fillcolor") == dot_attr(s2, "n0", "fillcolor")
    assert dot_attr(s2, "n1", "fillcolor") == "#fde725"
