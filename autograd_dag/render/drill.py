"""Drill-down pictures: one scope's inside (``render(p, scope=...)``) and a linked site of every scope.

A scope is addressed by its name scopes joined with ``.``: ``"block.3.attention"``
is every node recorded under ``name_scope("block.3")`` then
``name_scope("attention")`` (a name may itself hold dots: the address is matched
against the joined names, never split). A gradient program's backward pass is
a scope of its own, named ``"backward pass"`` as its box is titled (see
:func:`~autograd_dag.render.budget.backward_pass`): the derivative of block 3's
attention is ``"backward pass.block.3.attention"``.

A scope's picture is the program restricted to the nodes under that prefix,
with the node budget applying inside it. Values entering from outside are
drawn as *boundary inputs* (one per outside value, each edge into the scope
kept), values used outside (or returned by the program) as *boundary outputs*;
labels keep the program's node numbers ``%k``.
"""

from __future__ import annotations

import difflib
import hashlib
import html as _html
import os
import re

from ..errors import RenderError
from ..kinds import ProgramKind
from ..program import NodeKind, Program, ProgramNode
from .budget import backward_pass
from .labels import html, plain
from .output import write_file
from .scene import Scene, VNode

BACKWARD_SCOPE = "backward pass"


def scope_names(program: Program) -> list[tuple]:
    """Each node's name-scope tuple, a gradient program's backward pass under ``"backward pass"``.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> def f(x):
        ...     with ad.name_scope("layer"):
        ...         return ad.sum(ad.exp(x))
        >>> g = ad.grad_program(ad.trace(f, np.ones(2)))
        >>> sorted({".".join(s) for s in scope_names(g)})
        ['', 'backward pass', 'backward pass.layer', 'layer']
    """
    backward = backward_pass(program)
    return [(BACKWARD_SCOPE,) + n.scope if n.index in backward else tuple(n.scope) for n in program.nodes]


def scope_addresses(names: list[tuple]) -> dict[str, set]:
    """``{address: name tuples}`` for every scope (every prefix of every node's names)."""
    found: dict[str, set] = {}
    for scope in set(names):
        for i in range(1, len(scope) + 1):
            found.setdefault(".".join(scope[:i]), set()).add(scope[:i])
    return found


def scope_members(names: list[tuple], tuples: set) -> list[int]:
    """The nodes whose names start with one of ``tuples``, ascending."""
    lengths = {len(t) for t in tuples}
    return [k for k, s in enumerate(names) if any(s[:n] in tuples for n in lengths)]


def resolve_scope(program: Program, scope, names: list[tuple] | None = None, *,
                  union: bool = False) -> tuple[set, list[tuple]]:
    """The name tuples ``scope`` stands for; raises :class:`RenderError` naming the candidates.

    ``scope`` is a dotted address (``"block.3.attention"``), matched against each scope's names
    joined by ``.``; failing that, as a module path (``"seq.0"``, as torch's ``named_modules``)
    whose numbers stand for the layer library's list items (titled ``Linear0``). An address that
    two scopes spell (``("layer.1",)`` and ``("layer", "1")``: a name may hold dots) is refused
    listing both, unless ``union`` (a site's page of that address draws both); a tuple of names
    (``("layer", "1")``) is one scope exactly.
    """
    names = scope_names(program) if names is None else names
    if isinstance(scope, (tuple, list)) and scope and all(isinstance(part, str) for part in scope):
        wanted = tuple(scope)
        if any(n[:len(wanted)] == wanted for n in names):
            return {wanted}, names
        scope = ".".join(wanted)
    elif not isinstance(scope, str) or not scope:
        raise RenderError(f"render: scope must be a scope name such as 'block.3.attention' (name scopes "
                          f"joined by '.'), or a tuple of names such as ('block.3', 'attention'); got {scope!r}")
    addresses = scope_addresses(names)
    found = addresses.get(scope) or _module_path(scope, addresses) or _parameter_path(program, names, scope)
    if not found:
        raise RenderError(f"render: program '{program.name}' has no scope {scope!r}; {_candidates(scope, addresses)}")
    if len(found) > 1 and not union:
        counts = {t: sum(1 for n in names if n[:len(t)] == t) for t in found}
        listed = " and ".join(f"{t!r} ({counts[t]} nodes)" for t in sorted(found))
        raise RenderError(f"render: scope {scope!r} is ambiguous in program '{program.name}': it spells "
                          f"{len(found)} scopes, {listed} (a name scope may hold dots); pass the names as a "
                          f"tuple to pick one, e.g. scope={sorted(found)[0]!r}")
    return found, names


def _module_names() -> frozenset:
    """Class names of the layer library's modules (none when it is not imported: no such labels)."""
    import sys
    module = sys.modules.get("autograd_dag.nn.module")
    if module is None:
        return frozenset()
    seen, stack = set(), [module.Module]
    while stack:
        cls = stack.pop()
        if cls.__name__ not in seen:
            seen.add(cls.__name__)
            stack.extend(cls.__subclasses__())
    return frozenset(seen)


def _module_path(scope: str, addresses: dict[str, set]) -> set:
    """The scopes whose names spell ``scope`` once each list item's label (``Linear1``, a module class
    and its index) is read as its index (``1``), as torch's dotted module paths write it."""
    classes = _module_names()
    if not classes or not any(part.isdigit() for part in scope.split(".")):
        return set()

    def index_of(name: str) -> str:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        return m.group(2) if m and m.group(1) in classes else name

    return {t for tuples in addresses.values() for t in tuples if ".".join(map(index_of, t)) == scope}


def _parameter_path(program: Program, names: list[tuple], scope: str) -> set:
    """The scope of the module at path ``scope`` read from its parameters' names (``layer.1.weight``), for a
    module whose path the scopes do not spell (an item of a list that is only iterated: ``Linear1``).

    Each parameter ``scope + "." + rest`` used at scope ``s`` puts the module at ``s`` less one name per
    module in ``rest``; all of them must agree on one scope, else (a list itself) nothing is found.
    """
    found = set()
    for node in program.nodes:
        if node.parents or not node.name or not node.name.startswith(scope + "."):
            continue
        below = node.name.count(".") - scope.count(".") - 1
        for child in program.children(node.index):
            where = names[child]
            if where[:1] != (BACKWARD_SCOPE,):
                found.add(where[:len(where) - below] if len(where) > below else ())
    return found if len(found) == 1 and () not in found else set()


def _candidates(scope: str, addresses: dict[str, set]) -> str:
    """What a user may have meant by an unknown ``scope``: scopes ending in it, then the nearest spellings."""
    if not addresses:
        return "the program uses no name_scope"
    ending = sorted(a for a in addresses if a.endswith("." + scope))[:6]
    near = [a for a in difflib.get_close_matches(scope, list(addresses), n=6, cutoff=0.0) if a not in ending]
    parts = ([f"scopes ending in it: {', '.join(map(repr, ending))}"] if ending else []) + \
        ([f"nearest scopes: {', '.join(map(repr, near))}"] if near else [])
    hint = (" (a module in a list or Sequential is scoped by its class and index, 'Linear1', as its cluster is "
            "titled; a list that is only iterated opens no scope of its own)"
            if any(part.isdigit() for part in scope.split(".")) else "")
    return "; ".join(parts) + hint


class ScopeProgram:
    """A scope's inside as a program of its own.

    ``program``: boundary inputs (input nodes, one per outside value used) then the
    scope's nodes, in the original order, scopes made relative to the scope;
    ``numbers[i]``: original index of node i; ``boundary_inputs`` and
    ``boundary_outputs``: indices (in ``program``) of values entering and leaving.
    """

    __slots__ = ("program", "numbers", "boundary_inputs", "boundary_outputs", "address")

    def __init__(self, program, numbers, boundary_inputs, boundary_outputs, address):
        self.program = program
        self.numbers = numbers
        self.boundary_inputs = boundary_inputs
        self.boundary_outputs = boundary_outputs
        self.address = address


def scope_program(program: Program, scope, names: list[tuple] | None = None, *, union: bool = False) -> ScopeProgram:
    """The program restricted to scope ``scope`` (see the module docstring), with its boundary.

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> def f(x):
        ...     with ad.name_scope("layer"):
        ...         y = ad.exp(x)
        ...     return ad.sum(y)
        >>> sp = scope_program(ad.trace(f, np.ones(2)), "layer")
        >>> sp.numbers, sorted(sp.boundary_inputs), sorted(sp.boundary_outputs)
        ([0, 1], [0], [1])
    """
    tuples, names = resolve_scope(program, scope, names, union=union)
    members = scope_members(names, tuples)
    depth = {k: max(len(t) for t in tuples if names[k][:len(t)] == t) for k in members}
    label = scope if isinstance(scope, str) else ".".join(scope)
    return part_program(program, members, names, depth, label)


def part_program(program: Program, members: list[int], names: list[tuple], cut: dict, label: str) -> ScopeProgram:
    """Nodes ``members`` of ``program`` as a program of their own (see :func:`scope_program`):
    node k's scope names lose their first ``cut[k]``; ``label`` names the part."""
    inside = set(members)
    outputs = set(program.outputs)
    entering = sorted({p for k in members for p in program.nodes[k].parents if p not in inside})
    numbers = sorted(inside.union(entering))
    new_index = {k: i for i, k in enumerate(numbers)}
    nodes = []
    leaving = []
    for i, k in enumerate(numbers):
        old = program.nodes[k]
        if k not in inside:
            where = ".".join(names[k])
            what = old.name or (str(old.op) if old.parents else old.op.value)
            nodes.append(ProgramNode(i, NodeKind.INPUT, None, (), None, old.shape, old.dtype,
                                     name=f"{what} (from {where or 'outside'})", source=old.source))
            continue
        nodes.append(ProgramNode(i, old.op, old.prim, tuple(new_index[p] for p in old.parents), old.params,
                                 old.shape, old.dtype, name=old.name, source=old.source,
                                 scope=names[k][cut[k]:], value=old.value))
        if k in outputs or any(c not in inside for c in program.children(k)):
            leaving.append(i)
    inputs = [new_index[k] for k in entering]
    # A gradient program's part is drawn (and titled) as a plain program: its nodes are already split
    # from the backward pass by their scope names, and the values leaving it are boundary outputs.
    # Other kinds (a hand-built graph, a circuit) keep theirs: they decide the labels.
    kind = ProgramKind.PROGRAM if program.kind is ProgramKind.GRADIENT else program.kind
    sub = Program(nodes, inputs, leaving, name=f"{program.name}: {label}", kind=kind)
    return ScopeProgram(sub, numbers, frozenset(inputs), frozenset(leaving), label)


def mark_boundary(scene: Scene, sp: ScopeProgram) -> None:
    """Draw a scope picture's boundary inputs and outputs in their own style (and legend rows)."""
    for node in scene.nodes:
        # A box of values entering (the budget pools roots fed to the same boxes: "4 inputs").
        if node.role == "group" and set(node.members) <= sp.boundary_inputs:
            node.role = "boundary input"
        elif node.role == "input" and set(node.members) <= sp.boundary_inputs:
            node.role = "boundary input"
        elif node.role in ("output", "gradient", "input", "parameter", "constant") \
                and sp.boundary_outputs.intersection(node.members):  # a weight used outside too
            node.role = "boundary output"


# ---------------------------------------------------------------- the site

def page_file(address: str, view: str) -> str:
    """A safe file name for ``address``'s page in ``view``: letters, digits, ``_.-`` only, unique per address.

    Example:
        >>> page_file("block.3.attention", "dag"), page_file("", "bipartite")
        ('scope-block.3.attention.dag.svg', 'program.bipartite.svg')
    """
    if not address:
        return f"program.{view}.svg"
    safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", address)
    if safe != address:  # two addresses differing only in the replaced characters stay apart
        safe += "-" + hashlib.blake2b(address.encode("utf-8"), digest_size=4).hexdigest()
    return f"scope-{safe}.{view}.svg"


class Page:
    """One page of a site: ``scope`` (``""`` for the whole program), ``parent`` (``None`` at the top),
    ``files`` and ``boxes`` (Graphviz nodes drawn, not counting the legend) per view."""

    __slots__ = ("scope", "parent", "files", "boxes", "children", "members", "scope_address")

    def __init__(self, scope: str, parent: str | None, members: list[int] | None = None,
                 scope_address: str | None = None):
        self.scope = scope
        self.parent = parent
        # A page of a box standing for no scope (``block.0/ops %6–%8``): its nodes' numbers, and the
        # scope it lies in (``block.0``), which the addresses of the scope boxes drawn on it extend.
        self.members = members
        self.scope_address = scope if scope_address is None else scope_address
        self.files: dict[str, str] = {}
        self.boxes: dict[str, int] = {}
        self.children: list[str] = []

    def __repr__(self) -> str:
        return f"<Page {self.scope or '(program)'}: {self.boxes}>"


class Site:
    """What :func:`~autograd_dag.render.api.render_site` wrote: ``directory``, ``index`` (the path of
    ``index.html``) and ``pages`` (:class:`Page`, top first, in the order they were found)."""

    def __init__(self, directory: str, index: str, pages: list[Page]):
        self.directory = directory
        self.index = index
        self.pages = pages

    def __repr__(self) -> str:
        return f"<Site {self.index}: {len(self.pages)} pages>"


def link_groups(scene: Scene, address: str, page_names: list[tuple], view: str, all_addresses,
                numbers: list[int] | None = None) -> list[tuple]:
    """Give every box of ``scene`` holding operations a link to its own page; returns ``(address, members)``
    of the pages linked (``members``: original node numbers of a part, None for a scope).

    ``page_names[k]``: node k's scope names relative to the page (the page's program's indices);
    ``numbers[k]``: node k's number in the whole program. A folded box (``block × 40``) links to
    its first block's page. A box standing for no scope (a chunk of a topological order, pooled
    parallel boxes) links to a page of its own nodes, ``<scope it lies in>/<box title>``; boxes of roots
    only (``320 inputs``) have no inside to draw and get no link.
    """
    grouping = scene.grouping
    program = grouping.program
    found = []
    for node in scene.nodes:
        if node.role != "group" or not node.id.startswith("g"):
            continue
        group = grouping.groups[int(node.id[1:])]
        rel = tuple(name for name, _ in group.path)
        full = ".".join(((address,) if address else ()) + rel)
        members = None
        if not any(page_names[m][:len(rel)] == rel for m in group.members) or full not in all_addresses:
            if not any(program.nodes[m].parents for m in group.members):
                continue
            cluster = tuple(name for name, _ in group.parent_scope)
            full = ".".join(((address,) if address else ()) + cluster) + "/" + group.title
            members = [m if numbers is None else numbers[m] for m in group.members]
        node.attrs["URL"] = page_file(full, view)
        more = f" (the first of {group.count} folded)" if group.count > 1 else ""
        # Tooltips are DOT strings: the scope names in them escaped as the node's own (a name ending in
        # "\\" ended the quoted string).
        node.tooltip = plain(f"open {full}{more}: ", 0) + node.tooltip
        found.append((full, members))
    return found


def add_parent_link(scene: Scene, parent: str, view: str) -> None:
    """A box at the top of the picture linking back to the page of the scope around it."""
    label = "<<B>\u2191 " + html(parent or "the whole program", 0) + "</B>>"
    scene.add_node(VNode("parent_link", "parent link", label, (), (), "parent",
                         plain(f"back to {parent or 'the whole program'}"), {"URL": page_file(parent, view)}))


def write_index(directory: str, program_name: str, pages: list[Page], views) -> str:
    """``index.html``: the pages as a tree (nested lists), each with a link per view and its box count."""
    by_scope = {p.scope: p for p in pages}
    lines = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
             f"<title>{_html.escape(program_name)}: drill-down</title></head><body>",
             f"<h1>{_html.escape(program_name)}</h1>",
             "<p>One picture per scope; click a collapsed box to open it, the \u2191 box to go back.</p>"]
    # Depth-first with an explicit stack (no recursion in graph code); a child list opens inside its
    # parent's <li>.
    stack = [(by_scope[""], 0)]
    entries = []
    while stack:
        page, level = stack.pop()
        entries.append((page, level))
        for child in reversed(page.children):
            stack.append((by_scope[child], level + 1))
    lines.append("<ul>")
    current = 0
    for i, (page, level) in enumerate(entries):
        if level > current:
            lines.append("<ul>")
        elif i:
            lines.append("</li>")
        while current > level:
            lines.append("</ul></li>")
            current -= 1
        current = level
        links = " ".join(f'<a href="{_html.escape(page.files[v])}">{v}</a> ({page.boxes[v]} boxes)'
                         for v in views)
        lines.append(f"<li>{_html.escape(page.scope or '(whole program)')}: {links}")
    lines.append("</li>")
    lines += ["</ul></li>"] * current
    lines.append("</ul>")
    lines.append("</body></html>")
    return write_file(os.path.join(directory, "index.html"), "\n".join(lines) + "\n", "render_site")
