"""Tests of the Graphviz renderer: they run `dot` for real and parse the SVG it writes."""

from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.cli import main
from autograd_dag.render import RenderedGraph, as_program, save
from autograd_dag.render.collapse import group_nodes
from autograd_dag.gallery import GALLERY, book_program, chain_program, mlp_program
from autograd_dag.graph_algorithms import to_bipartite
from autograd_dag.render.layout import add_references
from autograd_dag.render.dag import dag_scene
from autograd_dag.render.scene import Labeller

SVG = "{http://www.w3.org/2000/svg}"


def svg_of(graph) -> ET.Element:
    """Lay ``graph`` out with dot and parse the SVG (fails on invalid XML)."""
    return ET.fromstring(graph.pipe(format="svg"))


def titles(root: ET.Element, cls: str) -> list[str]:
    return [g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g") if g.get("class") == cls]


def texts(root: ET.Element) -> str:
    return "\n".join(t.text or "" for t in root.iter(f"{SVG}text"))


def no_scalar_constants(x1, x2):
    e = ad.exp(x1)
    a = x2 * e
    return a * ad.sqrt(x1 + a) + x1 * x1  # x1 * x1: two edges between the same nodes


# ------------------------------------------------------------------ counts


@pytest.mark.parametrize("inline", [True, False])
def test_dag_view_draws_one_node_per_program_node_and_every_edge(inline):
    program = ad.trace(no_scalar_constants, 1.0, 2.0)
    assert not any(n.op is ad.NodeKind.CONSTANT for n in program.nodes)
    root = svg_of(ad.render(program, legend=False, inline_constants=inline))
    assert len(titles(root, "node")) == len(program.nodes)
    assert len(titles(root, "edge")) == program.num_edges


def test_bipartite_view_counts_variables_and_functions():
    program = ad.trace(lambda x1, x2: x2 * ad.exp(x1) * ad.sqrt(x1 + x2 * ad.exp(x1)), 1.0, 2.0)
    n, r, m = len(program.nodes), len(program.roots()), program.num_edges
    root = svg_of(ad.render(program, "bipartite", legend=False))
    nodes = titles(root, "node")
    assert len(nodes) == 2 * n - r
    assert len(titles(root, "edge")) == (n - r) + m
    b = to_bipartite(program.to_graph())  # the graph module's own count agrees
    assert len(nodes) == len(b.vertices)
    assert sum(1 for v in nodes if v.startswith("f")) == n - r
    assert sum(1 for v in nodes if v.startswith("v")) == n


def test_scalar_constants_are_inlined_unless_asked_not_to():
    program = ad.trace(lambda x: ad.exp(x * 2.0) + 0.5, np.ones(3))
    consts = [k for k in range(len(program.nodes)) if program.nodes[k].op is ad.NodeKind.CONSTANT]
    assert len(consts) == 2
    inlined = ad.render(program, legend=False)
    root = svg_of(inlined)
    assert len(titles(root, "node")) == len(program.nodes) - 2
    assert len(titles(root, "edge")) == program.num_edges - 2
    assert "(\u00b7, 2)" in texts(root) and "(\u00b7, 0.5)" in texts(root)  # multiply(·, 2), add(·, 0.5)
    full = svg_of(ad.render(program, legend=False, inline_constants=False))
    assert len(titles(full, "node")) == len(program.nodes)
    assert len(titles(full, "edge")) == program.num_edges
    bip = svg_of(ad.render(program, "bipartite", legend=False, inline_constants=False))
    n, r = len(program.nodes), len(program.roots())
    assert len(titles(bip, "node")) == 2 * n - r


# -------------------------------------------------------- scopes, collapse, fold


def test_name_scopes_become_dashed_labelled_clusters():
    program = mlp_program()
    graph = ad.render(program)
    root = svg_of(graph)
    assert len(titles(root, "cluster")) == 5  # layer0..layer3, loss
    assert all(f"layer{i}" in texts(root) for i in range(4)) and "loss" in texts(root)
    assert 'style="dashed,rounded"' in graph.source


def test_depth_collapses_scopes_and_folds_identical_siblings():
    program = mlp_program()  # layer1 and layer2 are both 16 -> 16 with tanh: identical
    root = svg_of(ad.render(program, depth=0, legend=False))
    text = texts(root)
    assert "layer \u00d7 2" in text and "layer0" in text and "layer3" in text
    assert "in: float64[8,16]" in text and "out: float64[8,3]" in text
    assert titles(root, "cluster") == []
    # x, layer0, layer x 2, layer3, loss: parameters go with the layer using them.
    assert len(titles(root, "node")) == 5
    unfolded = svg_of(ad.render(program, depth=0, fold=False, legend=False))
    assert len(titles(unfolded, "node")) == 6 and "layer \u00d7 2" not in texts(unfolded)


def test_nested_scopes_collapse_below_depth():
    def f(x):
        with ad.name_scope("block"):
            with ad.name_scope("inner"):
                x = ad.tanh(x) * ad.exp(x)
            x = x + 1.0
        return ad.sum(x)
    program = ad.trace(f, np.ones(3))
    shallow = ad.render(program, depth=1, legend=False)
    root = svg_of(shallow)
    assert len(titles(root, "cluster")) == 1 and "block" in texts(root)
    assert "inner" in texts(root) and "3 ops" in texts(root)
    deep = svg_of(ad.render(program, legend=False))
    assert len(titles(deep, "cluster")) == 2


def test_a_scope_entered_several_times_gives_separate_clusters():
    def act(x):
        with ad.name_scope("activation"):
            return ad.tanh(x)

    def f(x):
        for i in range(3):
            with ad.name_scope(f"dense{i}"):
                x = x * 2.0
            x = act(x)
        return ad.sum(x)
    program = ad.trace(f, np.ones(2))
    root = svg_of(ad.render(program, legend=False))
    assert len(titles(root, "cluster")) == 6
    collapsed = svg_of(ad.render(program, depth=0, legend=False, fold=False))
    assert len(titles(collapsed, "node")) == 1 + 6 + 1  # x, 6 scope nodes, sum


def test_auto_collapse_above_max_nodes_warns():
    program = mlp_program()
    with pytest.warns(UserWarning, match="max_nodes=10"):
        graph = ad.render(program, max_nodes=10, legend=False)
    assert len(titles(svg_of(graph), "node")) <= 10
    flat = ad.trace(lambda x: ad.sum(ad.tanh(ad.exp(x))), np.ones(2))
    with pytest.warns(UserWarning, match="no name_scope"):
        ad.render(flat, max_nodes=2)


# ------------------------------------------------------- legend, styles, labels


def test_legend_lists_the_roles_drawn():
    program = mlp_program()
    root = svg_of(ad.render(program))
    assert "legend" in titles(root, "node")
    text = texts(root)
    for role in ("input", "parameter", "intermediate", "output"):
        assert role in text
    grad = svg_of(ad.render(ad.grad_program(book_program())))
    assert "gradient (output)" in texts(grad)


def test_gradient_program_outputs_are_styled_as_gradients():
    gradient = ad.grad_program(book_program())
    graph = ad.render(gradient, "bipartite")
    for k in gradient.outputs:
        line = next(l for l in graph.body if l.lstrip().startswith(f"v{k} "))
        assert "#f7cdd6" in line and "peripheries=2" in line
    assert "df/dx1" in texts(svg_of(graph))


def test_options_rankdir_shapes_dtypes_edge_labels_color_by():
    program = book_program()
    graph = ad.render(program, rankdir="LR", show_dtypes=False, edge_labels="shape", color_by="op")
    assert "rankdir=LR" in graph.source
    text = texts(svg_of(graph))
    assert "float64" not in text and "%2 []" in text and "[]" in text
    assert "exp" in text  # legend lists the op colours
    lean = texts(svg_of(ad.render(program, show_shapes=False, show_dtypes=False, legend=False)))
    assert "[]" not in lean
    with pytest.raises(ad.RenderError, match="view"):
        ad.render(program, view="tree")


def test_highlight_and_highlight_path_draw_bold_and_dim():
    program = book_program()  # %0 x1, %1 x2, %2 exp, %3 mul, %4 add, %5 sqrt, %6 mul
    path = ad.highlight_path(program, "x1", program.outputs[0])
    assert path == [0, 2, 3, 4, 5, 6]
    graph = ad.render(program, highlight=path, legend=False)
    bold = [l for l in graph.body if "penwidth=2.5" in l]
    assert sum("->" in l for l in bold) == sum(1 for j in path for p in program.nodes[j].parents if p in path)
    assert sum("->" not in l for l in bold) == len(path)
    assert any(l.lstrip().startswith("n1 ") and "#cccccc" in l for l in graph.body)  # x2 dimmed
    svg_of(graph)
    assert ad.highlight_path(program, 1, 3) == [1, 3]
    with pytest.raises(ad.RenderError, match="no path"):
        ad.highlight_path(program, 3, 0)
    with pytest.raises(ad.RenderError, match="no node is named"):
        ad.render(program, highlight=["nope"])


HOSTILE = ['<lambda>', 'a & b', 'say "hi"', "it's", 'back\\slash \\N \\G', 'two\nlines',
           'caf\u00e9 \u03bb\u2207 \U0001f600', 'ctrl\x01\x1f', '</TD></TR>', ']]> <!-- -->']


@pytest.mark.parametrize("view", ["dag", "bipartite"])
def test_hostile_names_give_valid_dot_and_svg(view):
    op = ad.primitive("weird<op>&\"\\n", lambda x: x * 1.0, vjp=lambda ct, out, x: (ct,),
                      jvp=lambda t, out, x: t[0], replace=True)

    def f(x):
        for i, name in enumerate(HOSTILE):
            with ad.name_scope(name):
                x = ad.tanh(x)
                x.name = name
        return op(ad.sum(x))
    program = ad.trace(f, np.ones(2))
    program.nodes[0].name = HOSTILE[0]
    root = svg_of(ad.render(program, view, edge_labels="shape"))
    text = texts(root)
    for s in ("<lambda>", "a & b", 'say "hi"', "it's", "back\\slash \\N \\G", "caf\u00e9 \u03bb\u2207",
              "\U0001f600", "</TD></TR>", 'weird<op>&"\\n'):
        assert s in text, s
    assert "two" in text and "lines" in text
    collapsed = svg_of(ad.render(program, view, depth=0, fold=False))
    assert "<lambda>" in texts(collapsed)


# ----------------------------------------------------------- output and errors


def test_missing_dot_raises_with_install_instructions(tmp_path, monkeypatch):
    graph = ad.render(book_program())
    monkeypatch.setenv("PATH", str(tmp_path))
    assert graph.source.startswith("digraph")  # DOT never needs Graphviz
    assert save(graph, tmp_path / "f.dot") and (tmp_path / "f.dot").read_text().startswith("digraph")
    with pytest.raises(ad.GraphvizNotFoundError) as info:
        graph.pipe(format="svg")
    message = str(info.value)
    assert "apt-get install graphviz" in message and "brew install graphviz" in message
    assert "conda install graphviz" in message
    assert isinstance(info.value, ad.AutogradDagError)
    with pytest.raises(ad.GraphvizNotFoundError):
        graph.render(str(tmp_path / "f.svg"))
    with pytest.raises(ad.GraphvizNotFoundError):
        graph.render("f", directory=str(tmp_path), format="svg")
    with pytest.raises(ad.GraphvizNotFoundError):
        ad.render_to(book_program(), tmp_path / "f.png")
    assert "install" in graph._repr_mimebundle_()["text/plain"]


def test_render_path_suffix_picks_the_format(tmp_path):
    graph = ad.render(book_program())
    assert isinstance(graph, RenderedGraph)
    graph.render(str(tmp_path / "a.svg"))
    ET.parse(tmp_path / "a.svg")
    graph.render(str(tmp_path / "a.png"))
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    graph.render(str(tmp_path / "a.dot"))
    assert (tmp_path / "a.dot").read_text(encoding="utf-8") == graph.source
    ad.render_to(book_program(), tmp_path / "b.pdf", view="bipartite")
    assert (tmp_path / "b.pdf").read_bytes()[:4] == b"%PDF"
    assert "image/svg+xml" in graph._repr_mimebundle_()
    assert isinstance(graph.copy(), RenderedGraph)
    with pytest.raises(ad.RenderError, match="format"):
        save(graph, tmp_path / "noext")


def test_layout_timeout_raises_render_error():
    graph = ad.render(chain_program(200), timeout=1e-4, max_nodes=None)   # drawn whole: a real layout
    with pytest.raises(ad.RenderError, match="timeout|within"):
        graph.pipe(format="svg")


def test_dot_is_deterministic_for_the_same_program_traced_twice():
    for build in (book_program, mlp_program):
        for view in ("dag", "bipartite"):
            for options in ({}, {"depth": 0}):
                assert ad.render(build(), view, **options).source == ad.render(build(), view, **options).source


def test_tensor_outputs_render_as_their_recorded_graph():
    x = ad.Tensor(np.ones((2, 3)), name="x")
    w = ad.Tensor(np.ones((3, 4)), requires_grad=True, name="w")
    loss = ad.sum(ad.tanh(ad.matmul(x, w)) * 3.0)
    program = as_program(loss)
    assert [program.nodes[k].op for k in program.inputs] == [ad.NodeKind.INPUT]
    assert sorted(str(n.op) for n in program.nodes if not n.parents) == ["constant", "input", "parameter"]
    graph = ad.render(loss, "bipartite")
    text = texts(svg_of(graph))
    assert "x" in text and "w" in text and "(\u00b7, 3)" in text


def test_long_edges_become_references_above_the_budget():
    program = chain_program(300)
    grouping = group_nodes(program)
    scene = dag_scene(grouping, Labeller(program, grouping, True, True))
    edges = len(scene.edges)
    replaced = add_references(scene, budget=50)
    assert replaced > 0 and len(scene.edges) == edges
    assert sum(n.role == "reference" for n in scene.nodes) == replaced
    # W, U and b feed every step: by default their edges become references too.
    assert re.search(r"\br\d+ -> n\d+ \[style=dashed\]", ad.render(program, legend=False, max_nodes=None).source)
    small = ad.render(book_program(), legend=False)  # small programs keep every edge
    assert not re.search(r"\br\d+ -> ", small.source) and "style=dashed" not in small.source


# ---------------------------------------------------------------------- CLI


def test_cli_render_module_function_and_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "models_for_cli.py").write_text(
        "import numpy as np, autograd_dag as ad\n"
        "def build():\n"
        "    return ad.trace(lambda x: ad.sum(ad.exp(x) * x), np.ones(3))\n"
        "def tensor():\n"
        "    x = ad.Tensor(np.ones(3), name='x')\n"
        "    return ad.sum(ad.tanh(x))\n"
        "def needs_args(a):\n"
        "    return a\n")
    out = tmp_path / "g.svg"
    assert main(["render", f"{tmp_path / 'models_for_cli.py'}:build", "--grad", "--view", "bipartite",
                 "-o", str(out)]) == 0
    assert "gradient" in texts(ET.parse(out).getroot())
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["render", "models_for_cli:tensor", "--depth", "0", "-o", "t.dot"]) == 0
    assert (tmp_path / "t.dot").read_text().startswith("digraph")
    assert main(["render", "models_for_cli:needs_args"]) == 2
    assert "without arguments" in capsys.readouterr().err
    assert main(["render", "no_such_module_xyz:f"]) == 2


def test_cli_gallery_writes_svg_and_dot(tmp_path):
    assert main(["gallery", "--out", str(tmp_path), "--only", "book", "mlp_collapsed"]) == 0
    for name in ("book_dag", "book_bipartite", "mlp_collapsed_dag", "mlp_collapsed_bipartite"):
        ET.parse(tmp_path / f"{name}.svg")
        assert (tmp_path / f"{name}.dot").read_text(encoding="utf-8").startswith("digraph")
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert all(entry.name in readme for entry in GALLERY)


def test_jupyter_displays_a_program_as_svg_and_text():
    program = ad.trace(lambda x: ad.exp(x) * 2.0, np.ones(2))
    bundle = program._repr_mimebundle_()
    assert bundle["text/plain"] == str(program)
    root = ET.fromstring(bundle["image/svg+xml"].encode())
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.parametrize("c", [1e-8, 2.5e-6, -3.7e-5, 1e-7, 1e20, 6.02e23, 0.1, 2.0, 1234.5])
def test_constant_labels_show_the_constant_not_a_rounded_zero(c):
    # Positional formatting with six decimals printed 1e-8 (a log's epsilon) as
    # "0" and 2.5e-6 as "0.000003", in print(program) and in the picture alike.
    prog = ad.trace(lambda x: x + c, np.ones(2))
    listing = re.search(r"constant (\S+)", str(prog)).group(1)
    label = re.search(r"<B>add</B>\(&#183;, ([^)]+)\)", ad.render(prog).source).group(1)
    for text in (listing, label):
        assert abs(float(text) - c) <= 1e-6 * abs(c), (text, c)


def test_highlight_takes_numpy_integers_and_depth_is_checked():
    # highlight=np.int64(1) raised "'numpy.int64' object is not iterable" and an index
    # array was refused as "got int64"; depth="1" or 1.5 raised bare TypeErrors.
    prog = ad.trace(lambda x: ad.exp(x) * x, np.ones(2))
    by_ints = ad.render(prog, highlight=[1, 2]).source
    assert ad.render(prog, highlight=np.array([1, 2])).source == by_ints
    assert ad.render(prog, highlight=[np.int64(1), np.int32(2)]).source == by_ints
    assert ad.render(prog, highlight=np.int64(1)).source == ad.render(prog, highlight=1).source
    for depth in ("1", 1.5, -1, True):
        with pytest.raises(ad.RenderError, match=r"depth must be a whole number >= 0 or None"):
            ad.render(prog, depth=depth)
    assert ad.render(prog, depth=np.int64(0)).source == ad.render(prog, depth=0).source


def test_a_folded_group_counts_the_ops_of_one_block():
    # "layer × 3" read "9 ops" (all three blocks together) beside in/out types of one
    # block, and its tooltip said "layer0: 9 nodes"; one block has 3 ops.
    def f(x):
        for i in range(3):
            with ad.name_scope(f"layer{i}"):
                x = ad.tanh(x * 2.0) + 1.0
        return x
    source = ad.render(ad.trace(f, np.ones(2)), depth=0).source
    label = re.sub(r"<[^>]+>", " ", re.search(r"g0 \[label=<(.*?)> color", source).group(1))
    assert "layer &#215; 3" in label and "3 ops each (9 in all)" in label, label
    assert 'tooltip="layer0..layer2 (3 folded): 9 nodes' in source


def _without_numbers(source: str) -> str:
    """``source`` with colours and numbers replaced by placeholders (colours first: they hold digits)."""
    source = re.sub(r"#[0-9a-fA-F]{6}", "#colour", source)
    return re.sub(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", "N", source)


def test_masking_numbers_keeps_what_an_overlay_picture_draws():
    # The masked comparison of the gallery's overlay entry must still see a node or a label change.
    a = 'n0 [label=<x<BR/>4.83e-08> fillcolor="#440154"]'
    assert _without_numbers(a) == _without_numbers('n0 [label=<x<BR/>4.84e-08> fillcolor="#46327e"]')
    assert _without_numbers(a) == _without_numbers('n0 [label=<x<BR/>10> fillcolor="#46327e"]')
    assert _without_numbers(a) != _without_numbers('n0 [label=<y<BR/>4.83e-08> fillcolor="#440154"]')
    assert _without_numbers(a) != _without_numbers('n0 [label=<x<BR/>4.83e-08> fillcolor="#440154"]\nn0 -> n1')


def test_the_committed_gallery_sources_are_what_the_library_draws_now():
    # viz/ is regenerated by `autograd-dag gallery`; a change to a derivative rule that changes a
    # gradient program (one more node) must come with the regenerated pictures, or the gallery
    # shows another program than the library makes. The .dot sources need no Graphviz.
    import pathlib
    from autograd_dag.gallery import GALLERY, render_options
    viz = pathlib.Path(__file__).resolve().parent.parent / "viz"
    stale = []
    for entry in GALLERY:
        program = entry.build()
        for view in entry.views:
            committed = (viz / f"{entry.name}_{view}.dot").read_text(encoding="utf-8")
            with warnings.catch_warnings():
                # chain_1000 shows the default a user gets, collapse warning and all
                warnings.filterwarnings("ignore", "render: .* more than max_nodes", UserWarning)
                source = ad.render(program, view, **render_options(entry, program)).source
            if callable(entry.options.get("overlay")):
                # An overlay's numbers come from running the program (matmul, exp, sums): another CPU's
                # BLAS may differ in the last bits, which can flip a colour (17 samples) or a printed
                # digit, so that entry's numbers and colours are masked; its boxes, edges, labels and
                # which nodes are coloured are still compared exactly.
                source, committed = _without_numbers(source), _without_numbers(committed)
            if source != committed:
                stale.append(f"{entry.name}_{view}")
    assert not stale, f"viz/ is stale for {stale}: run `autograd-dag gallery` and commit viz/"


def test_folding_many_sibling_scopes_walks_each_node_a_bounded_number_of_times(monkeypatch):
    # Folding grew a run of equal sibling scopes one scope at a time and walked the
    # program afresh for each candidate: O(N²) in the number of scopes (a 3,000-block
    # chain's gradient took 30 s to draw). Counted in Program.children calls, not timed.
    n = 600

    def f(x):
        for i in range(n):
            with ad.name_scope(f"b{i % 7}"):    # b0..b6 share the base name "b": one run
                x = ad.tanh(x) * 0.5 + 0.1
        return ad.sum(x)

    program = ad.trace(f, np.ones(3))
    gradient = ad.grad_program(program)
    calls = [0]
    children = ad.Program.children

    def counted(self, k):
        calls[0] += 1
        return children(self, k)

    monkeypatch.setattr(ad.Program, "children", counted)
    forward = group_nodes(program, depth=0)
    assert [(g.title, len(g.members)) for g in forward.groups] == [(f"b \u00d7 {n}", 3 * n)]
    assert calls[0] <= 10 * len(program)
    calls[0] = 0
    backward = group_nodes(gradient, depth=0)
    # The gradient's scopes each hold forward and backward nodes: merging two would close a
    # cycle through the blocks between them, so none folds.
    assert len(backward.groups) == n
    assert calls[0] <= 10 * len(gradient)


def test_render_of_deeply_nested_scopes_neither_recurses_nor_leaves_cyclic_garbage():
    # The clusters were drawn by a nested function calling itself once per scope level
    # (RecursionError past Python's limit), and its closure referred to itself, so each
    # render left its whole scene (two objects per drawn node) for the cyclic collector.
    import contextlib
    import gc
    import inspect
    import sys
    levels = 150

    def f(x):
        with contextlib.ExitStack() as scopes:
            for i in range(levels):
                scopes.enter_context(ad.name_scope(f"s{i}"))
                x = ad.tanh(x)
        return ad.sum(x)

    program = ad.trace(f, np.ones(2))
    gc.collect()
    gc.disable()
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 100)
    try:
        source = ad.render(program).source
        sys.setrecursionlimit(old)
        assert gc.collect() == 0
    finally:
        sys.setrecursionlimit(old)
        gc.enable()
    assert source.count("subgraph cluster_") == levels
    assert re.search(r"subgraph cluster_149 \{", source)
    # nested: every cluster's closing brace comes after the innermost one's
    assert source.index("cluster_149") > source.index("cluster_0")


def test_render_refuses_a_suffix_it_cannot_write_and_writes_a_known_one_as_named(tmp_path):
    # render("out.xyz") wrote out.xyz (the DOT source) and out.xyz.pdf without a word; and a known
    # suffix with directory= or cleanup= went to graphviz, which wrote out.svg as DOT and out.svg.pdf.
    graph = ad.render(book_program())
    for name in ("out.xyz", "out"):
        with pytest.raises(ad.RenderError, match=r"\.svg.*\.png.*\.pdf") as info:
            graph.render(str(tmp_path / name))
        assert repr(str(tmp_path / name)) in str(info.value)
    assert list(tmp_path.iterdir()) == []
    assert graph.render("out.svg", directory=str(tmp_path), cleanup=True) == str(tmp_path / "out.svg")
    ET.parse(tmp_path / "out.svg")  # an SVG, not DOT
    graph.render(str(tmp_path / "b.png"), cleanup=True)
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png", "out.svg"]
    graph.render(str(tmp_path / "c.svg"), engine="neato")  # a graphviz option: still an SVG at the name
    ET.parse(tmp_path / "c.svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png", "c.svg", "out.svg"]
    # graphviz's own form, a source name with format=, is left as graphviz does it
    graph.render("src", directory=str(tmp_path), format="svg", cleanup=True)
    ET.parse(tmp_path / "src.svg")
