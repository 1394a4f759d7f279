"""Red-team of the renderer: every picture says exactly what the program is.

The pictures are read back *independently of the renderer*: Graphviz's own
``dot -Tjson`` layout is parsed (node names, HTML labels reduced to text,
edges by endpoint names, attributes) and compared with the program itself
(its nodes, parents in order, outputs), never with the renderer's scene.
"""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autograd_dag as ad
from autograd_dag.program import NodeKind
from autograd_dag.testing.strategies import recipes  # the random-program generator of the property tests

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")


def label_text(label: str) -> str:
    """An HTML-like label as the text a reader sees: line breaks kept, tags dropped, entities decoded."""
    text = re.sub(r"<BR\s*/?>", "\n", label, flags=re.I)
    text = re.sub(r"<[^>]*>", "", text)
    return html_module.unescape(text).replace("\\\\", "\\")


def read_picture(graph) -> dict:
    """What Graphviz laid out: {"nodes": {name: {"text", attrs...}}, "edges": [(tail, head, text)], "clusters"}."""
    laid_out = json.loads(graph.pipe(format="json"))
    objects = laid_out.get("objects", [])
    by_gvid, nodes, clusters = {}, {}, {}
    for obj in objects:
        if "nodes" in obj or str(obj.get("name", "")).startswith("cluster"):
            clusters[obj["name"]] = {"text": label_text(obj.get("label", "")),
                                     "members": [objects[i]["name"] for i in obj.get("nodes", ())]}
            continue
        by_gvid[obj["_gvid"]] = obj["name"]
        assert obj["name"] not in nodes, f"node {obj['name']} drawn twice"
        nodes[obj["name"]] = dict(obj, text=label_text(obj.get("label", "")))
    edges = [(by_gvid[e["tail"]], by_gvid[e["head"]], label_text(e.get("label", "")))
             for e in laid_out.get("edges", [])]
    bold_edges = [(by_gvid[e["tail"]], by_gvid[e["head"]]) for e in laid_out.get("edges", [])
                  if e.get("penwidth") == "2.5"]
    return {"nodes": nodes, "edges": edges, "clusters": clusters, "bold_edges": bold_edges}


NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def check_constant_text(value, text: str) -> None:
    """A constant's label line shows its numbers (up to 8 of them, to 6 significant digits) or its shape."""
    v = np.asarray(value)
    if v.size > 8 or v.dtype.kind not in "biuf":
        assert text == f"array[{','.join(map(str, v.shape))}]", text
    elif v.dtype.kind == "b":
        assert re.findall(r"True|False", text) == [str(b) for b in np.ravel(v)], text
    else:
        shown = [float(t) for t in re.findall(NUMBER, text)]
        np.testing.assert_allclose(shown, np.ravel(v).astype(float), rtol=1e-6, atol=0, err_msg=text)


def check_dag_picture(program, pic) -> None:
    """Every program node drawn once as ``n{k}`` with its op/name/type, every parent reference one edge."""
    nodes, outputs = pic["nodes"], set(program.outputs)
    drawn = {name for name in nodes if name != "legend"}
    assert drawn == {f"n{k}" for k in range(len(program.nodes))}
    for node in program.nodes:
        k, text = node.index, nodes[f"n{node.index}"]["text"]
        lines = text.split("\n")
        assert lines[-1] == f"%{k} {np.dtype(node.dtype)}[{','.join(map(str, node.shape))}]", text
        if node.op is NodeKind.INPUT:
            assert lines[0] == (node.name or f"x{k}")
        elif node.op is NodeKind.PARAMETER:
            assert lines[0] == (node.name or "parameter")
        elif node.op is NodeKind.CONSTANT:
            check_constant_text(node.value, lines[0])
        else:
            assert lines[0] == str(node.op), text
            if node.name:
                assert node.name in lines, text
        is_output = nodes[f"n{k}"].get("peripheries") == "2"
        assert is_output == (k in outputs), f"%{k}: output marking {is_output}, program says {k in outputs}"
    expected = Counter((f"n{p}", f"n{node.index}") for node in program.nodes for p in node.parents)
    assert Counter((a, b) for a, b, _ in pic["edges"]) == expected
    ordered = {"subtract", "divide", "matmul", "power"}
    for node in program.nodes:
        if node.op in ordered:
            a, b = node.parents
            into = Counter((s, t) for s, d, t in pic["edges"] if d == f"n{node.index}")
            assert into == Counter([(f"n{a}", "a"), (f"n{b}", "b")]), (node.op, into)


def check_bipartite_picture(program, pic) -> None:
    """Variables ``v{k}`` and functions ``f{k}`` alternate; f_k's inputs are its parents, its output v_k."""
    nodes = pic["nodes"]
    roots = {n.index for n in program.nodes if not n.parents}
    drawn = {name for name in nodes if name != "legend"}
    assert drawn == ({f"v{k}" for k in range(len(program.nodes))}
                     | {f"f{k}" for k in range(len(program.nodes)) if k not in roots})
    for a, b, _ in pic["edges"]:
        assert a[0] != b[0], f"edge {a} -> {b} joins two {'variables' if a[0] == 'v' else 'functions'}"
    expected = Counter([(f"f{k}", f"v{k}") for k in range(len(program.nodes)) if k not in roots]
                       + [(f"v{p}", f"f{n.index}") for n in program.nodes for p in n.parents])
    assert Counter((a, b) for a, b, _ in pic["edges"]) == expected
    for node in program.nodes:
        if node.parents:
            assert nodes[f"f{node.index}"]["text"].split("\n")[0] == str(node.op)
        is_output = nodes[f"v{node.index}"].get("peripheries") == "2"
        assert is_output == (node.index in set(program.outputs))


def _recipe_program(recipe, grad: bool):
    recipe = recipe.resolved(np.linspace(-1, 1, 6).reshape(2, 3), np.array([0.3, -0.7, 1.1]))
    def f(x, y):
        out = recipe(x, y)
        return ad.sum(out) if grad else (out, out * 2.0)
    program = ad.trace(f, np.linspace(-1, 1, 6).reshape(2, 3), np.array([0.3, -0.7, 1.1]))
    return ad.grad_program(program) if grad else program


@settings(max_examples=25, deadline=None, database=None)
@given(recipe=recipes(ops=["add", "multiply", "subtract", "tanh", "sum_keepdims", "reshape_transpose", "matmul",
                           "maximum"], max_size=6),
       view=st.sampled_from(["dag", "bipartite"]), grad=st.booleans())
def test_random_programs_are_drawn_node_for_node_and_edge_for_edge(recipe, view, grad):
    program = _recipe_program(recipe, grad)
    pic = read_picture(ad.render(program, view=view, inline_constants=False, long_edges="keep", max_nodes=None))
    (check_dag_picture if view == "dag" else check_bipartite_picture)(program, pic)


def _blocks(first, second, inline_constants=True):
    """Two sibling scopes that apply ``first(x)`` then ``second(x)``, drawn collapsed at depth 0."""
    def f(x):
        with ad.name_scope("layer0"):
            x = first(x)
        with ad.name_scope("layer1"):
            x = second(x)
        return x
    program = ad.trace(f, np.linspace(0.5, 1.5, 5))
    return read_picture(ad.render(program, depth=0, inline_constants=inline_constants))


def _group_titles(pic) -> list[str]:
    return sorted(n["text"].split("\n")[0] for name, n in pic["nodes"].items() if name.startswith("g"))


def test_identical_blocks_fold_and_say_how_many():
    pic = _blocks(lambda x: ad.tanh(x * 2.0), lambda x: ad.tanh(x * 2.0))
    assert _group_titles(pic) == ["layer × 2"]


@pytest.mark.parametrize("first, second, inline", [
    # an array constant differing in its values (same shape and dtype)
    (lambda x: x + np.arange(5.0), lambda x: x + np.arange(5.0)[::-1].copy(), True),
    # scalar constants that differ beyond the digits a label shows
    (lambda x: x * 1.0, lambda x: x * 1.0000001, True),
    # scalar constants drawn as nodes of their own
    (lambda x: x * 2.0, lambda x: x * 3.0, False),
], ids=["array-constant", "scalar-beyond-label-digits", "constants-as-nodes"])
def test_blocks_differing_in_a_constant_never_fold(first, second, inline):
    pic = _blocks(first, second, inline)
    assert _group_titles(pic) == ["layer0", "layer1"]


def _scoped_loss(x, w):
    with ad.name_scope("layer0"):
        h = ad.tanh(x * w)
    with ad.name_scope("loss"):
        return ad.sum(h * h)


@pytest.mark.parametrize("grad", [False, True], ids=["program", "gradient"])
@pytest.mark.parametrize("view", ["dag", "bipartite"])
def test_outputs_inside_collapsed_scopes_are_still_marked(view, grad):
    program = ad.trace(_scoped_loss, np.linspace(-1, 1, 3), np.full(3, 0.5))
    if grad:
        def g(x, w):  # the gradient computed inside a scope too
            with ad.name_scope("backward"):
                return ad.grad(_scoped_loss, argnums=(0, 1))(x, w)
        program = ad.trace(g, np.linspace(-1, 1, 3), np.full(3, 0.5))
    assert all(program.nodes[k].scope for k in program.outputs)  # every output is inside a scope
    pic = read_picture(ad.render(program, view=view, depth=0))
    marked = [name for name, n in pic["nodes"].items() if n.get("peripheries") == "2"]
    assert marked, "no node of the picture is marked as an output"
    for k in program.outputs:
        # The marked node standing for output k names it (%k), as every drawn node names its program nodes.
        assert any(re.search(rf"%{k}\b", pic["nodes"][name]["text"]) for name in marked), (k, marked)
    legend = pic["nodes"]["legend"]["text"]
    assert "output" in legend


LONG_NAMES = ["transformer.encoder.layers.11.self_attn.out_proj.weight",
              "transformer.encoder.layers.11.self_attn.out_proj.bias"]


@pytest.mark.parametrize("view", ["dag", "bipartite"])
def test_long_parameter_and_scope_names_are_shown_whole(view):
    # Two names alike in their first 40 characters must still read differently (and whole).
    w = ad.Tensor(np.ones((3, 3)), requires_grad=True, name=LONG_NAMES[0])
    b = ad.Tensor(np.zeros(3), requires_grad=True, name=LONG_NAMES[1])
    scope = "a_rather_long_scope_name_for_the_output_projection_block"

    def f(x):
        with ad.name_scope(scope):
            y = x @ w + b
        y.name = "output_projection_of_the_last_encoder_layer_before_the_head"
        return y
    program = ad.trace(f, np.ones(3))
    pic = read_picture(ad.render(program, view=view))
    texts = [n["text"].replace("\n", "") for n in pic["nodes"].values()]
    for name in LONG_NAMES + ["output_projection_of_the_last_encoder_layer_before_the_head"]:
        assert any(name in t for t in texts), (name, texts)
    assert [c["text"].replace("\n", "") for c in pic["clusters"].values()] == [scope]


def _reachable(program, start: int, forward: bool) -> set[int]:
    """Nodes reachable from ``start`` along edges (or against them), by breadth-first search."""
    children: dict[int, list[int]] = {}
    for node in program.nodes:
        for p in node.parents:
            children.setdefault(p, []).append(node.index)
    seen, frontier = {start}, [start]
    while frontier:
        k = frontier.pop()
        for nxt in (children.get(k, []) if forward else program.nodes[k].parents):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return seen


@settings(max_examples=20, deadline=None, database=None)
@given(recipe=recipes(ops=["add", "multiply", "subtract", "tanh", "sum_keepdims"], max_size=6),
       data=st.data())
def test_highlight_path_bolds_exactly_the_nodes_on_some_path(recipe, data):
    program = _recipe_program(recipe, grad=False)
    src = data.draw(st.integers(0, len(program.nodes) - 1))
    dst = data.draw(st.integers(0, len(program.nodes) - 1))
    on_path = _reachable(program, src, True) & _reachable(program, dst, False)
    if not on_path:
        with pytest.raises(ad.RenderError):
            ad.highlight_path(program, src, dst)
        return
    path = ad.highlight_path(program, src, dst)
    assert path == sorted(on_path)
    pic = read_picture(ad.render(program, highlight=path, inline_constants=False, long_edges="keep"))
    bold = {int(name[1:]) for name, n in pic["nodes"].items() if n.get("penwidth") == "2.5"}
    assert bold == on_path
    expected = Counter((f"n{p}", f"n{n.index}") for n in program.nodes if n.index in on_path
                       for p in n.parents if p in on_path)
    assert Counter(pic["bold_edges"]) == expected


def test_highlight_path_from_a_name_shared_by_several_nodes_starts_at_each():
    # Two branches each naming their result "h": paths from "h" start at either of them.
    def f(x, y):
        a = ad.tanh(x)
        a.name = "h"
        b = ad.exp(y)
        b.name = "h"
        return a * b
    program = ad.trace(f, np.ones(2), np.ones(2))
    named = [n.index for n in program.nodes if n.name == "h"]
    assert len(named) == 2
    out = program.outputs[0]
    expected = set().union(*(_reachable(program, s, True) for s in named)) & _reachable(program, out, False)
    assert ad.highlight_path(program, "h", out) == sorted(expected)


def test_a_jit_function_renders_as_the_program_it_traced():
    W = np.arange(6.0).reshape(3, 2)
    fast = ad.jit(lambda x, y: (ad.tanh(x @ W) - y, 2.0 / ad.exp(y)))
    with pytest.raises(ad.RenderError, match="call it once"):
        ad.render(fast)  # nothing traced yet: nothing to draw
    fast(np.ones((4, 3)), np.ones((4, 2)))
    (program, _), = fast.programs.values()
    for view, check in (("dag", check_dag_picture), ("bipartite", check_bipartite_picture)):
        check(program, read_picture(ad.render(fast, view=view, inline_constants=False)))
    fast(np.ones((5, 3)), np.ones((5, 2)))  # a second signature: which one to draw must be said
    with pytest.raises(ad.RenderError, match=r"2 programs.*\.programs"):
        ad.render(fast)


GRADIENT_FILL = "#f7cdd6"  # the legend's colour of "gradient (output)"


def test_the_value_output_of_a_gradient_program_is_not_drawn_as_a_gradient():
    program = ad.trace(lambda x: ad.sum(ad.exp(x)), np.ones(2))
    both = ad.grad_program(program, with_value=True)  # outputs: the value, then df/dx
    value, gradient = both.outputs
    pic = read_picture(ad.render(both))
    assert pic["nodes"][f"n{gradient}"]["fillcolor"] == GRADIENT_FILL
    assert pic["nodes"][f"n{value}"]["fillcolor"] != GRADIENT_FILL
    assert pic["nodes"][f"n{value}"].get("peripheries") == "2"  # still an output
    assert "output" in pic["nodes"]["legend"]["text"].replace("gradient (output)", "")


BLOCK_KINDS = {
    "tanh*2": lambda x: ad.tanh(x * 2.0),
    "tanh*3": lambda x: ad.tanh(x * 3.0),
    "tanh*2.0000001": lambda x: ad.tanh(x * 2.0000001),
    "exp*2": lambda x: ad.exp(ad.tanh(x) * 2.0),
    "+arange": lambda x: x + np.arange(4.0),
    "+arange reversed": lambda x: x + np.arange(4.0)[::-1].copy(),
    "sum keepdims": lambda x: x - ad.sum(x, keepdims=True),
    "mean keepdims": lambda x: x - ad.mean(x, keepdims=True),
}


@settings(max_examples=30, deadline=None, database=None)
@given(kinds=st.lists(st.sampled_from(sorted(BLOCK_KINDS)), min_size=1, max_size=7),
       inline=st.booleans(), view=st.sampled_from(["dag", "bipartite"]))
def test_folding_merges_exactly_the_runs_of_identical_blocks(kinds, inline, view):
    def f(x):
        for i, kind in enumerate(kinds):
            with ad.name_scope(f"block{i}"):
                x = BLOCK_KINDS[kind](x)
        return x
    program = ad.trace(f, np.linspace(-1, 1, 4))
    pic = read_picture(ad.render(program, view=view, depth=0, inline_constants=inline))
    expected, i = [], 0
    while i < len(kinds):  # runs of consecutive equal blocks, written independently of the renderer
        j = i
        while j + 1 < len(kinds) and kinds[j + 1] == kinds[i]:
            j += 1
        expected.append(f"block × {j - i + 1}" if j > i else f"block{i}")
        i = j + 1
    assert _group_titles(pic) == sorted(expected)


@pytest.mark.parametrize("view", ["dag", "bipartite"])
def test_small_array_constants_show_their_values(view):
    def f(x):
        return (x + np.array([1.0, 2.5, -3.0])) * np.array([[0.5, 1e-8], [4.0, 7.0]])[0, :1]
    program = ad.trace(f, np.ones(3))
    pic = read_picture(ad.render(program, view=view))
    texts = [n["text"] for n in pic["nodes"].values()]
    constants = [n for n in program.nodes if n.op is NodeKind.CONSTANT and np.size(n.value) > 1]
    assert constants
    for node in constants:
        # the values read back from the label, parsed as numbers, are the constant's
        label = next(t for t in texts if re.search(rf"%{node.index}\b", t))
        numbers = [float(s) for s in re.findall(NUMBER, label.split("\n")[0])]
        np.testing.assert_array_equal(numbers, np.ravel(node.value))


def test_jupyter_display_of_a_program_honours_include_and_exclude():
    program = ad.trace(lambda a, b: a / b, np.ones(2), np.ones(2))
    svg = program._repr_mimebundle_()["image/svg+xml"]
    assert "a / b" in svg and svg.lstrip().startswith(("<?xml", "<svg"))
    assert "image/svg+xml" not in program._repr_mimebundle_(exclude=["image/svg+xml"])
    assert set(program._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
