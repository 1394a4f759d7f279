"""Defect hunt 4 of the renderer: texts Graphviz rejected, and what a picture says about its program.

Every test lays the picture out with ``dot`` for real and reads the SVG back.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag.render import as_program, save

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"


def svg_of(graph) -> ET.Element:
    """Lay ``graph`` out with dot and parse the SVG (a RenderError or invalid XML fails the test)."""
    return ET.fromstring(graph.pipe(format="svg"))


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def tooltips(root: ET.Element) -> list[str]:
    return [a.get(f"{XLINK}title") or "" for a in root.iter(f"{SVG}a")]


# Graphviz 2.43 refused each of these (a syntax error, so render raised RenderError): a label
# text of just "]" or "]]", an empty <B></B> (an empty name, title or scope), and in a quoted
# tooltip a name ending in a backslash or holding a control character.
TEXTS = ["]", "]]", "", "a\\", "ctrl\x01"]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("view", ["dag", "bipartite"])
def test_program_names_titles_scopes_and_vertices_of_any_text_are_drawn(text, view):
    def f(x):
        with ad.name_scope(text), ad.name_scope(text):
            return ad.exp(x)
    program = ad.trace(f, np.ones(2))
    program.name = text
    assert "exp" in texts(svg_of(ad.render(program, view)))
    if text and not text.strip("]"):
        assert text in texts(svg_of(ad.render(program, view)))  # the scopes' cluster titles
    svg_of(ad.render(program, view, title=text))
    for depth in (0, 1):  # the scope collapsed: its box's title
        assert "1 nodes: 1 ops" in texts(svg_of(ad.render(program, view, depth=depth)))
    graph = ad.render(ad.Graph.from_edges([(text, "b"), ("b", "c")]), view)
    assert "c" in texts(svg_of(graph))


@pytest.mark.parametrize("text", TEXTS + ['say "hi"'])
def test_an_overlays_label_and_unit_of_any_text_reach_the_tooltip_whole(text):
    program = ad.trace(lambda x: ad.exp(x), np.ones(2))
    overlay = ad.Overlay({0: 1.0, 1: 2.0}, label=text, unit=text)
    root = svg_of(ad.render(program, overlay=overlay))
    printable = text.replace("\x01", "")  # control characters are dropped from tooltips
    shown = f"{printable}: 2" + (f" {printable}" if text else "")  # the unit follows the number
    assert any(t.endswith(shown) for t in tooltips(root)), tooltips(root)


@pytest.mark.parametrize("text", TEXTS)
def test_a_site_and_an_html_view_of_scopes_named_with_any_text(text, tmp_path):
    def f(x):
        for i in range(3):
            with ad.name_scope(f"{text}{i}"), ad.name_scope(text):
                x = ad.tanh(x * 2.0) + x
        return ad.sum(x)
    program = ad.grad_program(ad.trace(f, np.ones(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        site = ad.render_site(program, tmp_path, max_nodes=6)
    assert len(site.pages) > 1
    for page in site.pages:
        for name in page.files.values():
            ET.parse(os.path.join(site.directory, name))
    ad.render_html(program, max_nodes=6)


def laid_out_nodes(graph) -> dict:
    """{node name: its attributes} as Graphviz laid them out (``dot -Tjson``), the legend apart."""
    objects = json.loads(graph.pipe(format="json")).get("objects", [])
    return {o["name"]: o for o in objects if "nodes" not in o and not o["name"].startswith("cluster")}


@pytest.mark.parametrize("view", ["dag", "bipartite"])
def test_an_input_parameter_or_constant_the_program_returns_keeps_its_own_shape_and_fill(view):
    # Drawn as an output, each was a green box in the DAG view, read as an operation, and the
    # legend listed no input, parameter or constant at all.
    x = ad.Tensor(np.ones(3), name="x")
    w = ad.Tensor(np.ones(3), requires_grad=True, name="w")
    two = (x * 2.0).parents[1]  # a constant lifted from a Python number
    program = as_program((x, w, two, ad.exp(x) * w))
    roots = {n.index: n.op.value for n in program.nodes if not n.parents}
    assert sorted(roots.values()) == ["constant", "input", "parameter"]
    drawn = laid_out_nodes(ad.render(program, view, inline_constants=False))
    prefix = "n" if view == "dag" else "v"
    shapes = {"input": "ellipse", "parameter": "cylinder" if view == "dag" else "ellipse",
              "constant": "note" if view == "dag" else "ellipse"}
    fills = {"input": "#cfe3f7", "parameter": "#fde2c0", "constant": "#ececec"}
    for k, role in roots.items():
        node = drawn[f"{prefix}{k}"]
        assert node["shape"] == shapes[role] and node["fillcolor"] == fills[role], (k, role, node["shape"])
        assert (node.get("peripheries") == "2") == (k in program.outputs), (k, role)
    legend = drawn["legend"]["label"]
    for role in set(roots.values()):
        assert f">{role} " in legend or f">{role} (" in legend, role
    assert "double border: returned" in legend


def unscoped_program(n_ops: int, returned: int):
    """A program without scopes (so the budget cuts it into chunks) returning its last value summed
    and its value number ``returned``; each op reads a random earlier value and one of the last 20."""
    rng = random.Random(0)

    def f(x, y):
        vals = [x, y]
        for i in range(n_ops):
            a, b = vals[rng.randrange(len(vals))], vals[-1 - rng.randrange(min(len(vals), 20))]
            vals.append(ad.tanh(a) * b if i % 2 else a + b)
        return ad.sum(vals[-1]), vals[returned]
    return ad.trace(f, np.ones(3), np.ones(3))


def test_the_pooled_values_of_a_chunk_say_how_many_are_left_out_and_which_are_returned():
    # The bipartite view draws the outputs of a chunk as one "N values: %a, %b, %c, %d, …" node: it
    # read "4 values: %180, %184, %186, %191, …" for four values, and with %55, an output of the
    # program, among seven it did not say which value the double border was for.
    program = unscoped_program(280, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        drawn = laid_out_nodes(ad.render(program, "bipartite"))
    pooled = {name: node["label"] for name, node in drawn.items() if name.startswith("w")}
    assert pooled
    counts = []
    named = {int(name[1:]) for name in drawn if name.startswith("v")}
    for label in pooled.values():
        text = re.sub(r"<[^>]*>", "\n", label.replace("&#8230;", "\u2026"))
        n, listed = re.search(r"(\d+) values: ([^\n]*)", text).groups()
        counts.append(int(n))
        shown = re.findall(r"%(\d+)", listed)
        assert listed.endswith("\u2026") == (int(n) > len(shown)), text
        returned = re.search(r"returns ([^\n]*)", text)
        if returned:
            named.update(int(k) for k in re.findall(r"%(\d+)", returned.group(1)))
    assert 4 in counts  # the case that read "…" with nothing left out
    assert set(program.outputs) <= named


def test_pooled_gradients_of_a_gradient_program_are_drawn_as_gradients():
    # lm40_grad_bipartite in viz/ drew its 440 + 40 + 40 pooled weight gradients as plain outputs (green,
    # legend "output"): every value this gradient program returns is a gradient (no with_value).
    def f(x, *ws):
        for i, w in enumerate(ws):
            with ad.name_scope(f"block.{i}"):
                x = ad.tanh(x * w) + x
        return ad.sum(x)
    program = ad.grad_program(ad.trace(f, np.ones(3), *[np.full(3, 0.5)] * 12), wrt=tuple(range(1, 13)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        drawn = laid_out_nodes(ad.render(program, "bipartite", max_nodes=50))
    pooled = [node for name, node in drawn.items() if name.startswith("w") and node.get("peripheries") == "2"]
    assert pooled
    for node in pooled:
        assert node["fillcolor"] == "#f7cdd6", node["label"]  # the gradient role's fill
        assert "returns %" in node["label"] or "all returned (gradients)" in node["label"]
    assert "gradient (output)" in drawn["legend"]["label"] and ">output " not in drawn["legend"]["label"]


BAD_OPTIONS = [
    ("render", {"max_nodes": 0}), ("render", {"max_nodes": -1}), ("render", {"max_nodes": 1.5}),
    ("render", {"max_nodes": "10"}), ("render", {"max_nodes": True}),    # drawn with some budget, or a TypeError
    ("render", {"timeout": "5"}), ("render", {"timeout": -1}),            # a TypeError, or "within -1 s"
    ("render", {"axes": "seq"}),                                          # an AttributeError
    ("render_site", {"max_nodes": "3"}), ("render_html", {"max_nodes": 2.5}), ("render_html", {"timeout": 0}),
]


@pytest.mark.parametrize("entry, options", BAD_OPTIONS)
def test_options_that_mean_nothing_are_refused_at_the_users_line(entry, options, tmp_path):
    program = ad.trace(lambda x, y: ad.exp(x) * y, np.ones((2, 3)), np.ones(3))
    call = {"render": lambda: ad.render(program, **options).pipe(),
            "render_site": lambda: ad.render_site(program, tmp_path, **options),
            "render_html": lambda: ad.render_html(program, **options)}[entry]
    with pytest.raises(ad.RenderError) as info:
        call()
    name = next(iter(options))
    assert f"{entry}: {name} must be" in str(info.value) and repr(options[name]) in str(info.value)
    assert f"(at {__file__}:" in str(info.value)


@pytest.mark.parametrize("path", [3, None])
def test_a_file_name_that_is_no_path_is_refused_at_the_users_line(path):
    program = ad.trace(lambda x: ad.exp(x), np.ones(2))
    for call in (lambda: ad.render_to(program, path), lambda: ad.render(program).render(3),
                 lambda: save(ad.render(program), path)):
        with pytest.raises(ad.RenderError, match=r"must be a path .* got (int 3|NoneType None)") as info:
            call()
        assert f"(at {__file__}:" in str(info.value)


@pytest.mark.parametrize("name", ["<!--<script>", "</script><b>x", "<!--"])
def test_the_html_views_data_survives_any_node_name(name, tmp_path):
    # A node named "<!--<script>" put the browser's parser in the script's "double escaped" state: the
    # data block swallowed the page's script (one <script> left, data unparseable, nothing clickable).
    def f(x):
        with ad.name_scope("layer"):
            y = ad.exp(x)
            y.name = name
            return ad.sum(y)
    page = ad.render_html(ad.trace(f, np.ones(2)), max_nodes=20).html
    data = re.search(r'<script type="application/json" id="ad-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data  # no "<" at all: no "</script", no "<!--"
    assert name in json.dumps(json.loads(data), ensure_ascii=False)  # the name itself is kept
    browser = "/usr/bin/chromium"
    sync_api = pytest.importorskip("playwright.sync_api") if os.path.exists(browser) else None
    if sync_api is None:
        return
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=browser, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            tab = b.new_page()
            tab.goto(f"file://{path}")
            assert tab.evaluate("document.scripts.length") == 2
            assert tab.evaluate("JSON.parse(document.getElementById('ad-data').textContent).top") == "program.dag.svg"
        finally:
            b.close()
