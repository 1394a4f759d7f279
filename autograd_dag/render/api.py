"""``render`` and ``highlight_path``: the public entry points of the renderer."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping

import numpy as np

from ..core import Tensor
from ..errors import RenderError, located, user_source
from ..dag import Graph
from ..graph import topological_sort
from ..primitives.registry import PRIMITIVES
from ..kinds import ProgramKind
from ..program import NodeKind, Program, ProgramNode
from .axes import axis_names
from .bipartite import bipartite_scene
from .budget import DEFAULT_BUDGET, budget_grouping
from .collapse import group_nodes, max_scope_depth
from .dag import dag_scene
from .drill import (Page, Site, add_parent_link, link_groups, mark_boundary, page_file, part_program,
                    scope_addresses, scope_names, scope_program, write_index)
from .emit import emit
from .layout import SMALL_GRAPH, add_references
from .html_view import HtmlView, build_html
from .output import DEFAULT_TIMEOUT, RenderedGraph, check_path, make_folder, save
from .overlay import as_overlay, paint, resolve as resolve_overlay
from .scene import CIRCUIT_KINDS, Labeller

VIEWS = ("dag", "bipartite")
DEFAULT_MAX_NODES = DEFAULT_BUDGET


def as_program(obj, *, parameters_as_inputs: bool = False) -> Program:
    """The :class:`Program` to draw for ``obj``: a Program, an output Tensor, a tuple of them, a
    hand-built :class:`Graph`, an arithmetic circuit, or an ``ad.jit`` function that has traced
    one program (called on one input signature).

    For Tensors the recorded graph is walked back to its leaves: leaves that
    require a gradient become *parameters*, constants lifted from Python
    numbers or arrays in an operation (``x * 2.0``) become *constants*, and
    every other leaf (a Tensor the user created) becomes an *input*, in the
    order first met from the outputs. With ``parameters_as_inputs`` the
    parameters become inputs too, after the others (as ``--grad`` of the
    command line needs, to differentiate with respect to them).

    Example:
        >>> import autograd_dag as ad
        >>> x = ad.Tensor([1.0, 2.0], name="x")
        >>> w = ad.Tensor([3.0, 4.0], requires_grad=True, name="w")
        >>> prog = as_program((x * w).sum() * 2.0)
        >>> [str(n.op) for n in prog.nodes]
        ['input', 'parameter', 'multiply', 'sum', 'constant', 'multiply']
    """
    if isinstance(obj, Program):
        return obj
    if isinstance(obj, Graph):
        return graph_program(obj)
    if callable(getattr(obj, "drawing_program", None)):
        return obj.drawing_program()  # an arithmetic circuit, each gate with its fan-in (render imports no circuits)
    if callable(getattr(obj, "to_program", None)):
        return obj.to_program()
    if callable(obj) and isinstance(getattr(obj, "programs", None), dict):
        return _jit_program(obj)
    if isinstance(obj, Tensor):
        outputs = (obj,)
    elif isinstance(obj, (tuple, list)) and obj and all(isinstance(t, Tensor) for t in obj):
        outputs = tuple(obj)
    else:
        raise RenderError(f"render: expected a Program, a Tensor, a tuple of Tensors, a Graph or a jit function; "
                          f"got {type(obj).__name__}")
    inputs: list[Tensor] = []
    parameters: list[Tensor] = []
    for t in topological_sort(outputs, lambda t: t.parents or (), check=False):
        if t.prim is None or not t.parents:
            # A user-made Tensor has a source line; a lifted constant has none.
            if t.prim is None and not t.requires_grad and t.source is not None:
                inputs.append(t)
            elif parameters_as_inputs and t.requires_grad:
                parameters.append(t)
    program = Program.from_outputs(tuple(inputs + parameters), outputs if len(outputs) > 1 else outputs[0],
                                   name=(outputs[0].name or "f") if len(outputs) == 1 else "f")
    for i, t in enumerate(parameters):
        if t.name is None:  # "x3" would read as an input
            program.nodes[len(inputs) + i].name = f"param{i}"
    return program


def _jit_program(fn) -> Program:
    # An ad.jit function keeps one traced program per input signature in ``.programs``
    # ({signature: (program, output structure)}): draw it when there is exactly one.
    name = getattr(fn, "__name__", "jit function")
    entries = list(fn.programs.values())
    if not entries:
        raise RenderError(f"render: {name} has traced no program yet: call it once on example "
                          f"arguments, then render it")
    if len(entries) > 1:
        signatures = "; ".join(", ".join(f"{np.dtype(d)}[{','.join(map(str, s))}]" for s, d in key[1])
                               for key in fn.programs)
        raise RenderError(f"render: {name} holds {len(entries)} programs, one per input signature "
                          f"({signatures}): pick one from its .programs ({{signature: (program, "
                          f"output structure)}}) and render that")
    return entries[0][0]


def graph_program(graph: Graph, name: str = "graph") -> Program:
    """A hand-built :class:`Graph` as a program to draw: one node per vertex, in topological order.

    Roots become inputs; every other vertex is a function of its parents (in
    the order its edges were added), labelled with the vertex. A vertex that
    names a primitive (``"exp"``, or a tuple starting with one, ``("multiply", 2)``)
    is drawn as that primitive. The program only describes structure: it has
    no shapes, is drawn without types and cannot be executed (for a runnable
    program give the vertices primitives with :meth:`Program.from_graph`).

    Example:
        >>> import autograd_dag as ad
        >>> g = ad.Graph.from_edges([("x", "exp"), ("exp", ("multiply", 1)), ("x", ("multiply", 1))])
        >>> [(str(n.op), n.name, n.parents) for n in graph_program(g).nodes]
        [('input', 'x', ()), ('exp', 'exp', (0,)), ('multiply', 'multiply 1', (1, 0))]
    """
    order = graph.topological_order()
    index = {v: k for k, v in enumerate(order)}
    nodes = []
    for k, v in enumerate(order):
        label = " ".join(str(part) for part in v) if isinstance(v, tuple) else str(v)
        parents = tuple(index[p] for p in graph.parents(v))
        head = v[0] if isinstance(v, tuple) and v else v
        op = NodeKind.INPUT if not parents else (head if isinstance(head, str) and head in PRIMITIVES
                                                  else NodeKind.VERTEX)
        nodes.append(ProgramNode(k, op, None, parents, None, (), "float64", name=label))
    leaves = [index[v] for v in graph.leaves()]
    return Program(nodes, [k for k, n in enumerate(nodes) if not n.parents], leaves, name=name, kind=ProgramKind.GRAPH)


def _resolve(program: Program, spec, what: str) -> list[int]:
    if isinstance(spec, (bool, np.bool_)):
        raise RenderError(f"render: {what} must name nodes by index or name, got {spec!r}")
    if isinstance(spec, np.integer):  # an index from numpy (np.argmax, an index array) is an index
        spec = int(spec)
    if isinstance(spec, int):
        if not 0 <= spec < len(program.nodes):
            raise RenderError(f"render: {what} node %{spec} does not exist; the program has "
                              f"{len(program.nodes)} nodes (%0..%{len(program.nodes) - 1})")
        return [spec]
    if isinstance(spec, str):
        found = [n.index for n in program.nodes if n.name == spec]
        if not found:
            names = sorted({n.name for n in program.nodes if n.name})[:10]
            raise RenderError(f"render: {what}: no node is named {spec!r}; named nodes: {names}")
        return found
    raise RenderError(f"render: {what} must be node indices or names, got {type(spec).__name__}")


def _highlight_set(program: Program, highlight) -> set[int] | None:
    if highlight is None:
        return None
    if isinstance(highlight, np.ndarray):
        items = list(np.ravel(highlight))
    elif isinstance(highlight, (str, Mapping)) or not hasattr(highlight, "__iter__"):
        items = [highlight]  # one node (a float is refused by _resolve, naming it; list(1.5) was a TypeError)
    else:
        items = list(highlight)
    chosen: set[int] = set()
    for item in items:
        chosen.update(_resolve(program, item, "highlight"))
    return chosen


def highlight_path(obj, src, dst) -> list[int]:
    """The nodes on every path from ``src`` to ``dst``: pass them as ``render(..., highlight=)``.

    Takes a Program (or output Tensor) and two nodes, each a node index or a
    node name (a name borne by several nodes stands for all of them); returns
    the ascending node indices lying on some path from ``src`` to ``dst``
    (both included). Raises :class:`RenderError` when there
    is no such path.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x, y: ad.exp(x) * y, 1.0, 2.0)
        >>> highlight_path(prog, "x", 3)
        [0, 2, 3]
    """
    program = as_program(obj)
    # A name may be shared (a loop naming its state "h" each step): every node bearing it is a
    # source or destination, as ``highlight`` marks them all; keeping only the first hid paths.
    sources = _resolve(program, src, "highlight_path source")
    targets = set(_resolve(program, dst, "highlight_path destination"))
    forward = set(sources)
    for node in program.nodes[min(sources) + 1:]:
        if any(p in forward for p in node.parents):
            forward.add(node.index)
    backward = set(targets)
    for node in reversed(program.nodes):
        if node.index in backward:
            backward.update(node.parents)
    path = sorted(forward & backward)
    if not path:
        where = ", ".join(f"%{k}" for k in sources)
        raise RenderError(f"highlight_path: no path from {src!r} ({where}) to {dst!r} in program "
                          f"'{program.name}'")
    return path


def render(obj, view: str = "dag", *, depth: int | None = None, highlight=None, rankdir: str = "TB",
           show_shapes: bool = True, show_dtypes: bool = True, edge_labels: str | None = None,
           color_by: str = "role", legend: bool = True, max_nodes: int | None = DEFAULT_MAX_NODES,
           fold: bool = True, inline_constants: bool = True, long_edges: str = "auto",
           timeout: float | None = DEFAULT_TIMEOUT, title: str | None = None,
           axes: dict | None = None, overlay=None, scope: str | None = None) -> RenderedGraph:
    """Draw a program as a Graphviz digraph: ``view="dag"`` or ``"bipartite"``.

    Takes a :class:`Program` (a gradient program too), an output Tensor, a
    tuple of output Tensors, a hand-built :class:`Graph`, an arithmetic circuit
    or an ``ad.jit`` function that has traced one program (see :func:`as_program`). Returns a
    :class:`RenderedGraph`, a ``graphviz.Digraph``: ``.source`` is the DOT
    text (no Graphviz needed), ``.render("out.svg")`` writes a file in the
    format of its suffix, ``.pipe("png")`` gives bytes, Jupyter shows it inline.

    Options:
      * ``depth``: collapse name scopes nested deeper than ``depth`` into one
        node showing their input and output shapes; identical sibling scopes
        fold into ``name × N`` (``fold=False`` keeps them apart).
      * ``max_nodes``: the node budget of the picture (default 200). Above it,
        scopes are collapsed automatically (with a warning), the depth chosen
        per branch of the scope tree so the budget holds; a program without
        scopes is cut into chunks of its topological order (see
        :mod:`autograd_dag.render.budget`). ``None`` draws every node.
      * ``inline_constants``: scalar constants go into their consumers' labels.
      * ``highlight``: node indices or names drawn bold, the rest dimmed (see
        :func:`highlight_path`).
      * ``rankdir`` ("TB" or "LR"), ``show_shapes``, ``show_dtypes``,
        ``edge_labels="shape"``, ``color_by="role"`` or ``"op"``, ``legend``.
      * ``long_edges="auto"`` draws the longest edges of large graphs as
        reference stubs so layout stays fast; ``"keep"`` never does.
      * ``timeout``: seconds Graphviz may take when the picture is produced.
      * ``axes``: ``{node index: axis names}``, drawn as ``seq:5 × layer:8``
        instead of ``[5,8]``; by default the names a named-tensor program
        carries (see :mod:`autograd_dag.named` and :mod:`.axes`).
      * ``overlay``: a number per node (an :class:`~autograd_dag.render.overlay.Overlay`
        or a mapping ``{node index, name or ProgramNode: number}``) drawn as
        each node's fill on a sequential colour scale, with a colour bar in the
        legend; nodes without a number are drawn neutral, a collapsed box by
        an aggregate of its members. :mod:`autograd_dag.overlays` computes
        them by running the program: ``gradient_norms``, ``value_stats``,
        ``nonfinite``, ``saved_bytes`` and ``ad.profile``.
      * ``scope``: draw one scope's inside (``"block.3.attention"``: the name
        scopes joined by ``.``; a gradient program's backward pass is the scope
        ``"backward pass"``, so ``"backward pass.block.3"``), the budget applying
        inside it; values entering it and leaving it are drawn as boundary inputs
        and outputs; ``highlight`` and ``overlay`` name the whole program's nodes.
        A layer's dotted path as torch's ``named_modules`` writes it finds its scope
        too: ``"seq.0"`` is the cluster ``seq/Linear0``, ``"layers.1"`` the second
        item of a list of layers. A name scope may itself hold dots: an address two
        scopes spell (``name_scope("layer.1")`` and ``name_scope("layer")`` then
        ``"1"``) is refused listing both; a tuple of names, ``scope=("layer", "1")``,
        picks one exactly. An unknown scope raises :class:`RenderError` naming the
        scopes ending in it and the nearest ones. :func:`render_site` writes a linked
        picture of every scope.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x1, x2: x2 * ad.exp(x1), 1.0, 2.0)
        >>> g = ad.render(prog, view="bipartite")
        >>> "f2 -> v2" in g.source
        True
    """
    graph = _draw(obj, view, depth=depth, highlight=highlight, rankdir=rankdir, show_shapes=show_shapes,
                  show_dtypes=show_dtypes, edge_labels=edge_labels, color_by=color_by, legend=legend,
                  max_nodes=max_nodes, fold=fold, inline_constants=inline_constants, long_edges=long_edges,
                  timeout=timeout, title=title, axes=axes, overlay=overlay, scope=scope)
    # .save("x.html") draws the interactive view of the whole program (render_html), with this budget.
    graph.html_view = lambda: render_html(obj, max_nodes=max_nodes or DEFAULT_MAX_NODES, timeout=timeout,
                                          rankdir=rankdir, show_shapes=show_shapes, show_dtypes=show_dtypes,
                                          color_by=color_by, legend=legend, fold=fold,
                                          inline_constants=inline_constants)
    return graph


def _draw(obj, view, *, depth, highlight, rankdir, show_shapes, show_dtypes, edge_labels, color_by, legend,
          max_nodes, fold, inline_constants, long_edges, timeout, title, axes, overlay, scope,
          decorate=None, names=None, prepared=None) -> RenderedGraph:
    # render's body; ``decorate(scene, sub)`` changes the scene before it becomes DOT (render_site's links;
    # ``sub`` is the ScopeProgram drawn, or None), ``names``: scope_names(program), computed once per site;
    # ``prepared``: the ScopeProgram to draw (a site's page of a part that is no scope).
    if view not in VIEWS:
        raise RenderError(f"render: view must be one of {VIEWS}, got {view!r}")
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise RenderError(f"render: rankdir must be 'TB', 'LR', 'BT' or 'RL', got {rankdir!r}")
    if edge_labels not in (None, "shape"):
        raise RenderError(f"render: edge_labels must be None or 'shape', got {edge_labels!r}")
    if color_by not in ("role", "op"):
        raise RenderError(f"render: color_by must be 'role' or 'op', got {color_by!r}")
    if long_edges not in ("auto", "keep"):
        raise RenderError(f"render: long_edges must be 'auto' or 'keep', got {long_edges!r}")
    _check_budget_timeout_axes("render", max_nodes, timeout, axes)
    for flag, value in (("show_shapes", show_shapes), ("show_dtypes", show_dtypes), ("legend", legend),
                        ("fold", fold), ("inline_constants", inline_constants)):
        if not isinstance(value, (bool, np.bool_)):  # show_shapes="no" is truthy: it drew the shapes
            raise RenderError(f"render: {flag} must be True or False, got {type(value).__name__} {value!r:.60}")
    if depth is not None:
        if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)) or depth < 0:
            raise RenderError(f"render: depth must be a whole number >= 0 or None (how many levels of name "
                              f"scopes to show), got {depth!r}")
        depth = int(depth)
    program = as_program(obj)
    sub = numbers = scoped_overlay = None
    if scope is not None or prepared is not None:
        # Highlight and overlay name nodes of the whole program: resolved there, then carried to the
        # scope's program (a boundary input stands for the outside value, so it takes its number).
        chosen_whole = _highlight_set(program, highlight)
        if overlay is not None:
            overlay = as_overlay(overlay)
            scoped_overlay = resolve_overlay(program, overlay, _resolve)
        sub = prepared if prepared is not None else scope_program(program, scope, names)
        program, numbers = sub.program, sub.numbers
        where = {k: i for i, k in enumerate(numbers)}
        if chosen_whole is not None:
            highlight = sorted(where[k] for k in chosen_whole if k in where)
        if scoped_overlay is not None:
            values, outlined = scoped_overlay
            scoped_overlay = ({where[k]: x for k, x in values.items() if k in where},
                              {where[k] for k in outlined if k in where})
    if program.kind is ProgramKind.GRAPH:
        show_shapes = show_dtypes = False
    if program.kind in CIRCUIT_KINDS:
        # Circuits are over scalars: types say nothing, gates are told apart by
        # colour, and constants are roots of the DAG (seed 001 §4.1.4).
        show_shapes = show_dtypes = inline_constants = False
        color_by = "op"
    chosen = _highlight_set(program, highlight)
    if overlay is not None:
        overlay = as_overlay(overlay)
        if color_by == "op" and program.kind not in CIRCUIT_KINDS:
            raise RenderError("render: color_by='op' and overlay both colour the nodes' fill: pass one of them")
        overlay_values, outlined = (resolve_overlay(program, overlay, _resolve) if scoped_overlay is None
                                    else scoped_overlay)
        color_by = "role"
    grouping = group_nodes(program, depth, fold=fold, inline_constants=inline_constants)
    note = None
    if depth is None and max_nodes is not None:
        count = grouping.count_nodes(view)
        if count > max_nodes:
            grouping, note = _auto_collapse(program, view, count, max_nodes, fold, inline_constants)
    if numbers is not None:
        for group in grouping.groups:   # chunks are titled by their first and last node: the program's numbers
            if group.chunk:
                group.title = f"ops %{numbers[group.members[0]]}\u2013%{numbers[group.members[-1]]}"
    labeller = Labeller(program, grouping, show_shapes, show_dtypes,
                        axis_names(program) if axes is None else axes, numbers)
    make = dag_scene if view == "dag" else bipartite_scene
    scene = make(grouping, labeller, edge_labels=edge_labels, color_by=color_by)
    if sub is not None:
        mark_boundary(scene, sub)
    if decorate is not None:
        decorate(scene, sub)
    if long_edges == "auto" and len(scene.nodes) > SMALL_GRAPH:
        # A picture within the budget lays out in a second with every edge (render_scale.py):
        # stubs would only add boxes to it.
        add_references(scene)
    rows = paint(scene, overlay, overlay_values, outlined) if overlay is not None else ()
    return emit(scene, rankdir=rankdir, highlight=chosen, legend=legend, color_by=color_by, title=title,
                timeout=timeout, note=note, legend_rows=rows)


def _whole(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_budget_timeout_axes(caller: str, max_nodes, timeout, axes) -> None:
    """Refuse what the options cannot mean, at the user's line: a budget of no boxes (0, -1, 1.5 and True
    were drawn as some budget; "10" raised numpy's TypeError), a timeout that is no positive number
    ("5" raised a TypeError, -1 "did not finish within -1 s"), axes that are no mapping."""
    if max_nodes is not None and not (_whole(max_nodes) and max_nodes >= 1):
        raise RenderError(f"{caller}: max_nodes must be a whole number >= 1 (the most boxes a picture draws), or "
                          f"None to draw every node; got {max_nodes!r}{located(user_source())}")
    if timeout is not None and (isinstance(timeout, (bool, np.bool_)) or not isinstance(
            timeout, (int, float, np.integer, np.floating)) or not timeout > 0):
        raise RenderError(f"{caller}: timeout must be a number of seconds > 0, or None for no limit; got "
                          f"{timeout!r}{located(user_source())}")
    if axes is not None and not isinstance(axes, Mapping):
        raise RenderError(f"{caller}: axes must be a mapping {{node index: axis names}}, got "
                          f"{type(axes).__name__} {axes!r:.60}{located(user_source())}")


def _auto_collapse(program, view, count, max_nodes, fold, inline_constants):
    grouping = budget_grouping(program, view, max_nodes, fold=fold, inline_constants=inline_constants)
    n = grouping.count_nodes(view)
    how = ("uses no name_scope: its nodes were grouped into chunks of its topological order"
           if max_scope_depth(program) == 0 else
           "name scopes were collapsed, the depth chosen per branch")
    warnings.warn(f"render: program '{program.name}' draws {count} nodes in the {view} view, more than "
                  f"max_nodes={max_nodes}; it {how} ({n} nodes). Pass depth= to choose, a larger max_nodes=, "
                  f"or max_nodes=None to draw every node.", stacklevel=4)
    return grouping, (f"collapsed automatically: {count} nodes are more than max_nodes={max_nodes} "
                      f"({n} drawn; each box says how many it holds)")


def render_to(obj, path, *, format: str | None = None, **options) -> str:
    """Render ``obj`` (see :func:`render`, same ``options``) straight to a file; returns the path.

    The format comes from the suffix (``.svg``, ``.png``, ``.pdf``; ``.dot``
    writes the DOT source and needs no Graphviz).

    Example:
        >>> import numpy as np, autograd_dag as ad, tempfile, os
        >>> out = os.path.join(tempfile.mkdtemp(), "exp.dot")
        >>> ad.render_to(ad.trace(ad.exp, np.ones(2)), out) == out
        True
    """
    if (format or os.path.splitext(check_path(path, "render_to"))[1].lstrip(".")).lower() == "html":
        return render_html(obj, **options).save(path)
    graph = render(obj, **options)
    return save(graph, path, format=format)


_PAGE_OPTIONS = {"rankdir", "show_shapes", "show_dtypes", "edge_labels", "color_by", "legend",
                 "fold", "inline_constants", "long_edges"}


def _check_pages_options(caller: str, max_nodes, options: dict, timeout=None) -> None:
    """Refuse a page budget below 1 and options a page of render_site / render_html cannot take."""
    if not (_whole(max_nodes) and max_nodes >= 1):
        raise RenderError(f"{caller}: max_nodes must be a whole number >= 1 (the budget of each page), "
                          f"got {max_nodes!r}{located(user_source())}")
    _check_budget_timeout_axes(caller, None, timeout, None)
    unknown = set(options) - _PAGE_OPTIONS
    if unknown:
        raise RenderError(f"{caller}: unknown options {sorted(unknown)}")


def render_site(obj, directory, *, view: str = "both", max_nodes: int = DEFAULT_MAX_NODES,
                timeout: float | None = DEFAULT_TIMEOUT, **options) -> Site:
    """Write a drill-down site of ``obj``: one SVG per scope, collapsed boxes linking to their scope's page.

    Takes what :func:`render` takes, a directory (created if missing) and
    ``view`` ("dag", "bipartite" or "both"). The first page draws the whole
    program within ``max_nodes`` boxes (each page below it adds one, the link
    back up); every box standing for a collapsed scope
    (on it or on any page found from it) gets a page of its own drawing that
    scope's inside (``render(obj, scope=...)``, the budget applying inside it),
    and links to it (a folded ``block × 40`` to its first block's page). Each
    page has a box linking back to the page of the scope around it, and
    ``index.html`` lists the pages as a tree. File names are
    :func:`~autograd_dag.render.drill.page_file` of the scope address (only
    letters, digits and ``_.-``; a short hash keeps names that needed
    replacements apart). Other ``options`` go to :func:`render`. Returns a
    :class:`~autograd_dag.render.drill.Site`.

    Example:
        >>> import numpy as np, autograd_dag as ad, tempfile
        >>> def f(x):
        ...     for i in range(3):
        ...         with ad.name_scope(f"layer{i}"):
        ...             x = ad.tanh(x * 2.0) + x
        ...     return ad.sum(x)
        >>> site = ad.render_site(ad.trace(f, np.ones(2)), tempfile.mkdtemp(), max_nodes=4,
        ...                       view="dag")  # doctest: +SKIP
        >>> [p.scope for p in site.pages]  # doctest: +SKIP
        ['', 'layer0']
    """
    if view not in VIEWS + ("both",):
        raise RenderError(f"render_site: view must be 'dag', 'bipartite' or 'both', got {view!r}")
    _check_pages_options("render_site", max_nodes, options, timeout)
    views = VIEWS if view == "both" else (view,)
    program = as_program(obj)
    directory = make_folder(check_path(directory, "render_site"), "render_site")

    def write(page, v, graph, boxes):
        save(graph, os.path.join(directory, page.files[v]), format="svg")

    ordered = site_pages(program, views, max_nodes, timeout, options, write)
    index = write_index(directory, program.name, ordered, views)
    return Site(directory, index, ordered)


def site_pages(program, views, max_nodes, timeout, options, keep) -> list:
    """Walk a drill-down site of ``program`` (see :func:`render_site`) without writing anything:
    ``keep(page, view, graph, boxes)`` receives each page's :class:`RenderedGraph` (``page.files[view]``
    is its file name, the links' target) and ``boxes``, ``{DOT node name: whole-program node numbers}``
    of its boxes; returns the :class:`~autograd_dag.render.drill.Page` list, top first."""
    names = scope_names(program)
    addresses = scope_addresses(names)
    pages = {"": Page("", None)}
    queue = [""]
    head = 0
    while head < len(queue):
        address = queue[head]
        head += 1
        page = pages[address]
        prepared = _page_program(program, page, names, addresses)
        for v in views:
            found: list[str] = []
            boxes: dict = {}

            def decorate(scene, sub, address=address, v=v, found=found, page=page, boxes=boxes):
                page_names = names if sub is None else [n.scope for n in sub.program.nodes]
                found.extend(link_groups(scene, page.scope_address, page_names, v, addresses,
                                         None if sub is None else sub.numbers))
                for node in scene.nodes:
                    boxes[node.id] = [m if sub is None else sub.numbers[m] for m in node.members]
                if page.parent is not None:
                    add_parent_link(scene, page.parent, v)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # each page says on itself that it was collapsed
                graph = _draw(program, v, depth=None, highlight=None, rankdir=options.get("rankdir", "TB"),
                              show_shapes=options.get("show_shapes", True),
                              show_dtypes=options.get("show_dtypes", True), edge_labels=options.get("edge_labels"),
                              color_by=options.get("color_by", "role"), legend=options.get("legend", True),
                              max_nodes=max_nodes, fold=options.get("fold", True),
                              inline_constants=options.get("inline_constants", True),
                              long_edges=options.get("long_edges", "auto"), timeout=timeout,
                              title=None, axes=None, overlay=None, scope=None,
                              decorate=decorate, names=names, prepared=prepared)
            page.files[v] = page_file(address, v)
            page.boxes[v] = _count_boxes(graph.source)
            keep(page, v, graph, boxes)
            for child, members in found:
                if child not in pages:
                    # A part lies in the scope of the page showing it; a scope's page is its own.
                    pages[child] = Page(child, address, members, page.scope_address if members else None)
                    page.children.append(child)
                    queue.append(child)
    return [pages[a] for a in queue]


def render_html(obj, *, max_nodes: int = DEFAULT_MAX_NODES, timeout: float | None = DEFAULT_TIMEOUT,
                **options):
    """An interactive drill-down view of ``obj`` in one self-contained HTML page; returns an
    :class:`~autograd_dag.render.html_view.HtmlView` (``.save("model.html")``; Jupyter shows it inline).

    The pages are :func:`render_site`'s (dag view, ``max_nodes`` boxes per page, each
    laid out by ``dot`` here and embedded as SVG; nothing is fetched: no network, no CDN).
    In the page: click a collapsed box to show its inside, the ``\u2191`` box to go back; type a
    node's or parameter's name (or ``%k``) in the search box to show the page drawing it with its
    box outlined; click any box to list its nodes' primitive, shape, dtype, scope and source line.
    Other ``options`` as for :func:`render_site`. ``render_to(obj, "model.html")`` writes it too.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> def f(x):
        ...     with ad.name_scope("layer"):
        ...         return ad.sum(ad.exp(x))
        >>> view = ad.render_html(ad.trace(f, np.ones(2)))  # doctest: +SKIP
        >>> view.save("model.html")  # doctest: +SKIP
        'model.html'
    """
    _check_pages_options("render_html", max_nodes, options, timeout)
    program = as_program(obj)
    svgs: dict = {}
    boxes: dict = {}

    def keep(page, v, graph, page_boxes):
        svgs[page.files[v]] = graph.pipe("svg", encoding="utf-8")
        boxes[page.files[v]] = page_boxes

    pages = site_pages(program, ("dag",), max_nodes, timeout, options, keep)
    return HtmlView(build_html(program, pages, svgs, boxes, "dag"), pages, program.name)


def _page_program(program, page, names, addresses):
    """The ScopeProgram a site page draws: None for the whole program, the scope's, or a part's (a box
    standing for no scope: its nodes, their scope names relative to the scope the part lies in)."""
    if page.members is None:
        # An address two scopes spell (("layer.1",), ("layer", "1")) is one page: it draws both.
        return None if not page.scope else scope_program(program, page.scope, names, union=True)
    tuples = addresses.get(page.scope_address, set())
    cut = {k: max([len(t) for t in tuples if names[k][:len(t)] == t], default=0) for k in page.members}
    return part_program(program, page.members, names, cut, page.scope)


def _count_boxes(source: str) -> int:
    """Graphviz nodes in DOT ``source`` other than the legend: lines opening a node statement."""
    return sum(1 for line in source.splitlines()
               if re.match(r"\s*[A-Za-z_][A-Za-z0-9_]* \[", line) and not re.match(r"\s*(legend|graph|node|edge) \[", line))


__all__ = ["render", "render_to", "render_site", "render_html", "highlight_path", "as_program", "RenderedGraph", "save"]
