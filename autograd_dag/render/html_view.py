"""An interactive drill-down view in one self-contained HTML file (``ad.render_html``).

The pages are those of :func:`~autograd_dag.render.api.render_site` (one SVG per
collapsed scope, laid out by ``dot`` here), embedded as hidden ``<div>`` s with a
small script: a click on a collapsed box shows its scope's page (expand), the
``↑`` box goes back (collapse); a search box finds nodes by name or number
across pages; a side panel shows the clicked box's nodes (primitive, shape,
dtype, source line, scope) from JSON embedded in the page. Nothing is fetched:
no network, no CDN.
"""

from __future__ import annotations

import html as _html
import json
import re

from .drill import scope_names
from .output import check_path, write_file

# The script reads the pages and node data from the document itself; kept small and free of
# any URL so the file works offline (file://, a Jupyter iframe).
_SCRIPT = r"""
(function () {
  var data = JSON.parse(document.getElementById("ad-data").textContent);
  var pages = document.querySelectorAll(".ad-page");
  var panel = document.getElementById("ad-panel");
  var current = null;
  function show(file) {
    for (var i = 0; i < pages.length; i++) {
      pages[i].style.display = pages[i].getAttribute("data-file") === file ? "block" : "none";
    }
    current = file;
    document.getElementById("ad-where").textContent = data.pages[file].scope || "(whole program)";
  }
  function target(a) {
    return a.getAttribute("xlink:href") || a.getAttribute("href") ||
           a.getAttributeNS("http://www.w3.org/1999/xlink", "href");
  }
  function describe(list) {
    panel.innerHTML = "";
    list.slice(0, 50).forEach(function (k) {
      var n = data.nodes[k], div = document.createElement("div");
      div.className = "ad-node";
      div.textContent = "%" + k + (n.name ? " " + n.name : "") + "\nprimitive: " + n.primitive +
        "\nshape: [" + n.shape.join(", ") + "]\ndtype: " + n.dtype + "\nscope: " + (n.scope || "(top)") +
        "\nsource: " + (n.source || "-");
      panel.appendChild(div);
    });
    if (list.length > 50) { panel.appendChild(document.createTextNode("... " + (list.length - 50) + " more")); }
  }
  function mark(g) {
    var old = document.querySelectorAll(".ad-hit");
    for (var i = 0; i < old.length; i++) { old[i].classList.remove("ad-hit"); }
    if (g) { g.classList.add("ad-hit"); }
  }
  function box(file, name) {
    var gs = document.querySelectorAll('.ad-page[data-file="' + file + '"] g.node');
    for (var i = 0; i < gs.length; i++) {
      var t = gs[i].querySelector("title");
      if (t && t.textContent === name) { return gs[i]; }
    }
    return null;
  }
  document.getElementById("ad-pages").addEventListener("click", function (ev) {
    var a = ev.target.closest("a");
    if (a && data.pages[target(a)]) {
      ev.preventDefault();
      show(target(a));
      return;
    }
    var g = ev.target.closest("g.node");
    if (g && current) {
      var t = g.querySelector("title"), members = data.pages[current].boxes[t ? t.textContent : ""];
      if (members) { mark(g); describe(members); }
    }
  });
  document.getElementById("ad-search").addEventListener("input", function (ev) {
    var q = ev.target.value.trim().toLowerCase();
    if (!q) { return; }
    var hits = [];
    for (var k = 0; k < data.nodes.length; k++) {
      var n = data.nodes[k];
      if (("%" + k) === q || (n.name && n.name.toLowerCase().indexOf(q) >= 0)) { hits.push(k); }
    }
    document.getElementById("ad-count").textContent = hits.length + " found";
    if (!hits.length) { return; }
    // The page drawing the first hit in the smallest box: the deepest view of it.
    var best = null;
    for (var file in data.pages) {
      var boxes = data.pages[file].boxes;
      for (var name in boxes) {
        if (boxes[name].indexOf(hits[0]) >= 0 && (!best || boxes[name].length < best[2])) {
          best = [file, name, boxes[name].length];
        }
      }
    }
    if (best) { show(best[0]); mark(box(best[0], best[1])); }
    describe(hits);
  });
  show(data.top);
})();
"""

_STYLE = """
body { font-family: sans-serif; margin: 0; display: flex; height: 100vh; }
#ad-main { flex: 1; overflow: auto; padding: 8px; }
#ad-side { width: 320px; border-left: 1px solid #ccc; padding: 8px; overflow: auto; }
#ad-panel .ad-node { white-space: pre-wrap; font-family: monospace; font-size: 12px;
  border-bottom: 1px solid #eee; padding: 4px 0; }
.ad-hit polygon, .ad-hit ellipse, .ad-hit path { stroke: #e8590c !important; stroke-width: 4px !important; }
svg a { cursor: pointer; }
"""


class HtmlView:
    """A self-contained interactive page of a program (see :func:`render_html`).

    ``html`` is the page's text; ``save(path)`` writes it; Jupyter shows it
    inline (``_repr_html_``: an ``<iframe srcdoc>``, so its script and style
    stay apart from the notebook's); ``pages``: the site's
    :class:`~autograd_dag.render.drill.Page` list, top first.
    """

    def __init__(self, html: str, pages: list, name: str):
        self.html = html
        self.pages = pages
        self.name = name

    def save(self, path) -> str:
        """Write the page to ``path`` (UTF-8); returns the path."""
        return write_file(check_path(path, "HtmlView.save"), self.html, "HtmlView.save")

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{_html.escape(self.html, quote=True)}" style="width:100%;height:640px;'
                f'border:1px solid #ccc"></iframe>')

    def __repr__(self) -> str:
        return f"<HtmlView {self.name}: {len(self.pages)} pages>"


def node_data(program) -> list[dict]:
    """Per-node facts shown in the side panel: name, primitive, shape, dtype, scope, source line."""
    names = scope_names(program)
    rows = []
    for node, scope in zip(program.nodes, names):
        rows.append({"name": node.name or "", "primitive": str(node.op),
                     "shape": [int(d) for d in node.shape], "dtype": str(node.dtype),
                     "scope": ".".join(scope), "source": _where(node.source)})
    return rows


def _where(source) -> str:
    """``file:line`` of a recorded source location (``(file, line)``), ``""`` when none was recorded."""
    if source is None:
        return ""
    if isinstance(source, tuple) and len(source) == 2:
        return f"{source[0]}:{source[1]}"
    return str(source)


def _strip_svg(svg: str) -> str:
    # An inline <svg> needs neither the XML declaration nor the DOCTYPE (whose URL names the DTD).
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def build_html(program, pages: list, svgs: dict, boxes: dict, view: str) -> str:
    """The page's text: ``svgs[file]`` and ``boxes[file]`` per page file (see :func:`render_html`)."""
    data = {"top": pages[0].files[view], "nodes": node_data(program),
            "pages": {p.files[view]: {"scope": p.scope, "parent": p.parent, "boxes": boxes[p.files[view]]}
                      for p in pages}}
    # Inside a <script>, "</script" ends it early and "<!--<script" makes the browser skip the real
    # "</script>" (swallowing the page's script): no "<" at all, as the JSON escape \u003c (a name
    # "<!--<script>" left the page with no script and unparseable data).
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    title = _html.escape(program.name)
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">', f"<title>{title}</title>",
             f"<style>{_STYLE}</style></head><body>",
             f'<div id="ad-main"><h3>{title}: <span id="ad-where"></span></h3><div id="ad-pages">']
    for p in pages:
        f = p.files[view]
        parts.append(f'<div class="ad-page" data-file="{_html.escape(f)}" style="display:none">'
                     f"{_strip_svg(svgs[f])}</div>")
    parts.append("</div></div>")
    parts.append('<div id="ad-side"><input id="ad-search" type="search" placeholder="search node or parameter"'
                 ' style="width:95%"> <span id="ad-count"></span>'
                 "<p>Click a box to see its nodes; a box with a link opens its inside, \u2191 goes back.</p>"
                 '<div id="ad-panel"></div></div>')
    parts.append(f'<script type="application/json" id="ad-data">{blob}</script>')
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"


def has_network_reference(text: str) -> list[str]:
    """The ``http(s)://`` references of ``text`` other than XML namespace names (which are never fetched)."""
    found = re.findall(r"https?://[^\s\"'<>)]+", text)
    return [u for u in found if u not in ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")]
