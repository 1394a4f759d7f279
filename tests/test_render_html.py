"""The interactive HTML view (issue 25, item 3): render_html, render_to(.html), RenderedGraph.save(.html).

Expected facts come from the program's own nodes and the HTML text parsed here, never from the
html_view module; the browser test drives Debian's chromium through playwright (no browser download).
"""

import html as _html
import json
import os
import re
import shutil

import numpy as np
import pytest

import autograd_dag as ad
from autograd_dag import nn
from autograd_dag.render import as_program

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
CHROMIUM = "/usr/bin/chromium"
PARAMETER = "block.1.ffn.W1"


@pytest.fixture(scope="module")
def lm():
    model = nn.TransformerLM(vocab_size=12, d_model=8, heads=2, hidden=16, layers=2, rng=0)
    tokens = np.array([[1, 5, 2, 7, 3], [4, 4, 9, 0, 11]])
    loss = nn.functional.cross_entropy(model.logits(tokens[:, :-1]), tokens[:, 1:])
    return as_program(loss, parameters_as_inputs=True)


@pytest.fixture(scope="module")
def page(lm):
    # max_nodes=20: the two blocks fold into one collapsed box on the first page.
    return ad.render_html(lm, max_nodes=20).html


def embedded(text):
    return json.loads(re.search(r'<script type="application/json" id="ad-data">(.*?)</script>', text,
                                re.S).group(1).replace("<\\/", "</"))


def page_files(text):
    return re.findall(r'<div class="ad-page" data-file="([^"]+)"', text)


def scope_of(node):
    return ".".join(node.scope)


@needs_dot
def test_the_page_fetches_nothing(page):
    # XML namespace names are identifiers, never fetched; anything else http(s) would need a network.
    urls = re.findall(r"(?:https?:)?//[A-Za-z0-9][^\s\"'<>]*", page)
    assert [u for u in urls if u not in ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")] == []
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert "<!DOCTYPE svg" not in page


@needs_dot
def test_every_link_leads_to_a_page_in_the_file(page):
    files = page_files(page)
    assert len(files) == len(set(files)) > 1
    targets = set(re.findall(r'xlink:href="([^"]+)"', page)) | set(re.findall(r'\shref="([^"]+)"', page))
    assert targets and targets <= set(files)
    assert "program.dag.svg" in files and "scope-block.0.dag.svg" in targets


@needs_dot
def test_the_node_data_is_the_programs(lm, page):
    data = embedded(page)
    assert len(data["nodes"]) == len(lm.nodes)
    for node, row in zip(lm.nodes, data["nodes"]):
        assert row["name"] == (node.name or "")
        assert row["shape"] == list(node.shape)
        assert row["dtype"] == node.dtype.name
        assert row["scope"] == scope_of(node)
        if node.source is None:
            assert row["source"] == ""
        else:
            file, line = node.source
            assert row["source"] == f"{file}:{line}" and line > 0
        assert row["primitive"] == (node.op.value if node.prim is None else str(node.op))
    assert sum(1 for n in lm.nodes if n.source is not None) > len(lm.nodes) // 2
    assert set(data["pages"]) == set(page_files(page))
    # A scope's page draws that scope's nodes and the values entering it (their parents), nothing else.
    for file, info in data["pages"].items():
        if not info["scope"] or "/" in info["scope"]:
            continue
        inside = {k for k, n in enumerate(lm.nodes)
                  if scope_of(n) == info["scope"] or scope_of(n).startswith(info["scope"] + ".")}
        entering = {p for k in inside for p in lm.nodes[k].parents} - inside
        drawn = {k for members in info["boxes"].values() for k in members}
        assert inside <= drawn <= inside | entering, file


@needs_dot
def test_render_to_and_save_write_the_view_and_jupyter_shows_it_in_an_iframe(lm, tmp_path):
    a = ad.render_to(lm, tmp_path / "a.html", max_nodes=20)
    with pytest.warns(UserWarning, match="max_nodes=20"):
        b = ad.render(lm, max_nodes=20).save(str(tmp_path / "b.html"))
    texts = [open(p, encoding="utf-8").read() for p in (a, b)]
    assert all(t.startswith("<!DOCTYPE html>") and page_files(t) for t in texts)
    assert page_files(texts[0]) == page_files(texts[1])
    # Any other name still saves the DOT source, as graphviz does.
    with pytest.warns(UserWarning, match="max_nodes=20"):
        dot = ad.render(lm, max_nodes=20).save(str(tmp_path / "c.gv"))
    assert open(dot).read().startswith("digraph")
    view = ad.render_html(lm, max_nodes=20)
    shown = view._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and _html.unescape(shown.split('"')[1]) == view.html


def test_bad_options_are_refused(lm):
    with pytest.raises(ad.errors.RenderError, match="max_nodes"):
        ad.render_html(lm, max_nodes=0)
    with pytest.raises(ad.errors.RenderError, match="unknown options"):
        ad.render_html(lm, depth=2)


@needs_dot
def test_in_a_headless_browser_expand_collapse_search_and_screenshot(lm, tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no browser: {CHROMIUM} is absent (make setup installs Debian's chromium as root)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")
    path = ad.render_html(lm, max_nodes=20).save(tmp_path / "model.html")
    block0 = {f"%{k}" for k, n in enumerate(lm.nodes) if scope_of(n).startswith("block.0.")}
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 900})
            tab.goto("file://" + os.path.abspath(path))
            top = tab.locator('div.ad-page[data-file="program.dag.svg"]')
            inner = tab.locator('div.ad-page[data-file="scope-block.0.dag.svg"]')
            assert top.is_visible() and not inner.is_visible()
            # Expand: click the collapsed blocks' box.
            top.locator("xpath=.//*[local-name()='a'][@*[local-name()='href']='scope-block.0.dag.svg']").first.click()
            assert inner.is_visible() and not top.is_visible()
            assert block0 & set(re.findall(r"%\d+", inner.inner_html()))
            # Collapse: the ↑ box goes back to the whole program.
            inner.locator("xpath=.//*[local-name()='a'][@*[local-name()='href']='program.dag.svg']").first.click()
            assert top.is_visible() and not inner.is_visible()
            # Search a parameter: its details appear in the panel and its box is outlined on the page shown.
            tab.fill("#ad-search", PARAMETER)
            panel = tab.inner_text("#ad-panel")
            node = next(n for n in lm.nodes if n.name == PARAMETER)
            assert PARAMETER in panel and f"[{', '.join(map(str, node.shape))}]" in panel
            assert tab.locator(".ad-page .ad-hit").count() == 1 and tab.locator(".ad-hit").first.is_visible()
            shot = tmp_path / "model.png"
            tab.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
