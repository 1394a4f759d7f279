"""Overlays: a number per node, drawn as the node's fill on a sequential colour scale.

An :class:`Overlay` is data the renderer reads (a mapping from node to number);
the passes that compute one by running the program (gradient norms, value
statistics, non-finite values, memory, time) live in
:mod:`autograd_dag.overlays`, above the renderer. Here the numbers are resolved
to node indices, checked, aggregated over collapsed scopes and turned into
fill colours and a colour bar for the legend.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from ..errors import RenderError
from ..program import Program, ProgramNode
from .labels import html, plain, small
from .scene import Scene
from .styles import NEUTRAL_FILL, OUTLINE_COLOR, colorbar_rows, is_dark, sequential_color

SCALES = ("auto", "log", "linear")
AGGREGATES = {"max": max, "min": min, "sum": math.fsum, "mean": lambda xs: math.fsum(xs) / len(xs)}
TARGETS = ("value", "function")
# A scale chosen automatically is logarithmic when the positive numbers span this ratio or more.
AUTO_LOG_RATIO = 100.0


class Overlay(Mapping):
    """A number per program node, for ``ad.render(p, overlay=...)``: a read-only mapping ``{node: number}``.

    ``values`` maps nodes to real numbers; a node is named by its index
    (``3``), its name (``"W1"``: every node bearing it) or the
    :class:`ProgramNode` itself. Nodes left out are drawn neutral.

    Options:
      * ``label``: what the numbers are, the colour bar's title.
      * ``scale``: ``"log"``, ``"linear"`` or ``"auto"`` (log when the numbers
        are positive and span two decades or more).
      * ``aggregate``: how a collapsed scope's box summarises its members:
        ``"max"``, ``"min"``, ``"mean"`` or ``"sum"``.
      * ``outline``: nodes drawn with a thick red border, ``outline_text``
        says why in the legend (the first non-finite node, say).
      * ``target``: in the bipartite view, whether the number belongs to a
        node's value (``"value"``, its ellipse) or to its function
        (``"function"``, its box: time spent computing it).
      * ``unit``: ``"B"`` (bytes) and ``"s"`` (seconds) print the colour
        bar's ticks in readable units; any other text is appended.
      * ``limits``: ``(low, high)``, the numbers at the two ends of the scale
        (default: the lowest and highest drawn). Give two pictures the same
        limits to compare them; numbers outside are drawn at the nearer end.
      * ``numbers``: also print each node's number in its label (default True).

    Example:
        >>> import numpy as np, autograd_dag as ad
        >>> prog = ad.trace(lambda x: ad.exp(x).sum(), np.ones(3))
        >>> o = ad.Overlay({0: 1.0, "x": 2.0, 2: 30.0}, label="my numbers")  # "x" names node 0 too
        >>> g = ad.render(prog, overlay=o)
        >>> "my numbers" in g.source and 'fillcolor="#fde725"' in g.source
        True
    """

    def __init__(self, values: Mapping, *, label: str = "overlay", scale: str = "auto",
                 aggregate: str = "max", outline=(), outline_text: str | None = None,
                 target: str = "value", unit: str = "", limits: tuple | None = None,
                 numbers: bool = True):
        if isinstance(values, Overlay):
            values = values._values
        if not isinstance(values, Mapping):
            raise RenderError(f"Overlay: values must be a mapping from node (index, name or ProgramNode) to "
                              f"number, got {type(values).__name__}")
        if scale not in SCALES:
            raise RenderError(f"Overlay: scale must be one of {SCALES}, got {scale!r}")
        if aggregate not in AGGREGATES:
            raise RenderError(f"Overlay: aggregate must be one of {tuple(AGGREGATES)}, got {aggregate!r}")
        if target not in TARGETS:
            raise RenderError(f"Overlay: target must be one of {TARGETS}, got {target!r}")
        if limits is not None:
            try:
                low, high = (float(x) for x in limits)
            except (TypeError, ValueError):
                raise RenderError(f"Overlay: limits must be two numbers (low, high), got {limits!r}") from None
            if not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise RenderError(f"Overlay: limits must be finite with low < high, got {limits!r}")
            if scale == "log" and low <= 0:
                raise RenderError(f"Overlay: a log scale needs positive limits, got {limits!r}")
            limits = (low, high)
        self.limits = limits
        self.numbers = bool(numbers)
        self._values = dict(values)
        self.label = str(label)
        self.scale = scale
        self.aggregate = aggregate
        self.outline = tuple(outline)
        self.outline_text = outline_text
        self.target = target
        self.unit = unit

    def with_options(self, **options) -> "Overlay":
        """The same numbers with some options changed (``limits=``, ``scale=``...).

        Example: ``ad.overlays.gradient_norms(p, x).with_options(limits=(1e-6, 1.0))``.
        """
        current = dict(label=self.label, scale=self.scale, aggregate=self.aggregate, outline=self.outline,
                       outline_text=self.outline_text, target=self.target, unit=self.unit, limits=self.limits,
                       numbers=self.numbers)
        current.update(options)
        return Overlay(self._values, **current)

    def __getitem__(self, key):
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<Overlay {self.label!r}: {len(self)} nodes, {self.scale} scale, collapsed: {self.aggregate}>"


def as_overlay(overlay) -> Overlay:
    """``overlay`` as an :class:`Overlay` (a plain mapping gets the default options)."""
    return overlay if isinstance(overlay, Overlay) else Overlay(overlay)


def resolve(program: Program, overlay: Overlay, resolve_key) -> tuple[dict[int, float], set[int]]:
    """``({node index: number}, outlined indices)``; ``resolve_key(program, key, what)`` resolves an index
    or a name to indices (the renderer's, shared with ``highlight``). Refuses keys naming no node of
    ``program``, numbers that are not real and finite, and an overlay that names no node."""
    def indices(key, what: str) -> list[int]:
        if isinstance(key, ProgramNode):
            if not (0 <= key.index < len(program.nodes) and program.nodes[key.index] is key):
                raise RenderError(f"render: {what}: the node {key!r} is not a node of program "
                                  f"'{program.name}' (pass its index or name instead)")
            return [key.index]
        return resolve_key(program, key, what)

    values: dict[int, float] = {}
    for key, number in overlay.items():
        ks = indices(key, "overlay")
        if isinstance(number, (bool, np.bool_)) or not isinstance(number, (int, float, np.integer, np.floating)) \
                and not (isinstance(number, np.ndarray) and number.ndim == 0 and number.dtype.kind in "iuf"):
            raise RenderError(f"render: overlay: the number of node {key!r} (%{ks[0]}) must be a real number, "
                              f"got {type(number).__name__} {number!r}")
        x = float(number)
        if not math.isfinite(x):
            raise RenderError(f"render: overlay '{overlay.label}': node {key!r} (%{ks[0]}) has the number {x}; "
                              f"a colour scale needs finite numbers. Leave the node out (it is drawn "
                              f"neutral) or outline it, as ad.overlays.nonfinite does")
        for k in ks:
            values[k] = x
    outlined: set[int] = set()
    for key in overlay.outline:
        outlined.update(indices(key, "overlay outline"))
    if not values and not outlined:
        raise RenderError(f"render: overlay '{overlay.label}' gives no node a number: nothing to colour")
    return values, outlined


def _number_text(x: float, unit: str) -> str:
    if unit == "B":
        for size, name in ((2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB")):
            if abs(x) >= size:
                return f"{x / size:.3g} {name}"
        return f"{x:.3g} B"
    if unit == "s":
        for size, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "\u00b5s")):
            if abs(x) >= size:
                return f"{x / size:.3g} {name}"
        return f"{x / 1e-9:.3g} ns"
    return f"{x:.3g}" + (f" {unit}" if unit else "")


_FONT_COLOR = re.compile(r'COLOR="#[0-9A-Fa-f]{6}"')


def paint(scene: Scene, overlay: Overlay, values: dict[int, float], outlined: set[int]) -> list[str]:
    """Fill every node of ``scene`` by its number (a collapsed box by the aggregate of its members'),
    outline the ``outlined`` nodes; returns the legend rows (title, colour bar, notes)."""
    bipartite = scene.view == "bipartite"
    combine = AGGREGATES[overlay.aggregate]
    drawn: list[tuple] = []
    groups = False
    for node in scene.nodes:
        if node.role == "reference":
            continue
        if node.role == "group":
            groups = True
            found = [values[k] for k in node.members if k in values]
            number = combine(found) if found else None
        elif bipartite and (node.role == "function") != (overlay.target == "function"):
            number = None  # the other half of the bipartite pair carries the number
        else:
            number = values.get(node.members[0])
        drawn.append((node, number))
    numbers = [x for _, x in drawn if x is not None]
    notes = []
    if not numbers:
        lo = hi = 0.0
        log = False
    else:
        positive = [x for x in numbers if x > 0]
        lo, hi = min(numbers), max(numbers)
        log = overlay.scale == "log" or (overlay.scale == "auto" and positive and lo >= 0
                                         and max(positive) / min(positive) >= AUTO_LOG_RATIO)
        if log:
            if not positive:
                raise RenderError(f"render: overlay '{overlay.label}': a log scale needs positive numbers; "
                                  f"every drawn number is <= 0 (lowest {lo:.3g}). Pass scale='linear'")
            if lo <= 0:
                notes.append(f"{sum(x <= 0 for x in numbers)} numbers <= 0 drawn at the low end")
            lo = min(positive)
    if overlay.limits is not None:
        low, high = overlay.limits
        if any(x < low or x > high for x in numbers):
            notes.append(f"numbers outside [{_number_text(low, overlay.unit)}, "
                         f"{_number_text(high, overlay.unit)}] drawn at the nearer end")
        lo, hi = low, high
        log = overlay.scale == "log" or (overlay.scale == "auto" and low > 0 and high / low >= AUTO_LOG_RATIO)
        numbers = numbers or [lo]

    def position(x: float) -> float:
        if hi == lo:
            return 0.5
        if log:
            return (math.log10(min(max(x, lo), hi)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
        return min(max((x - lo) / (hi - lo), 0.0), 1.0)

    for node, number in drawn:
        attrs = node.attrs
        if number is None:
            attrs["fillcolor"] = NEUTRAL_FILL
        else:
            fill = sequential_color(position(number))
            attrs["fillcolor"] = fill
            text = _number_text(number, overlay.unit)
            node.tooltip = (node.tooltip + "  " if node.tooltip else "") + plain(f"{overlay.label}: {text}")
            if overlay.numbers and node.label.startswith("<") and node.label.endswith(">"):
                prefix = f"{overlay.aggregate} " if node.role == "group" else ""
                node.label = node.label[:-1] + "<BR/>" + small(html(prefix + text), "#000000", 10) + ">"
            # The label's grey small text reads poorly on mid-scale colours: white on dark fills, near black else.
            if is_dark(fill):
                attrs["fontcolor"] = "#ffffff"
                node.label = _FONT_COLOR.sub('COLOR="#e4e4e4"', node.label)
            else:
                node.label = _FONT_COLOR.sub('COLOR="#1a1a1a"', node.label)
        if outlined.intersection(node.members) and not (
                bipartite and node.role == "function" and overlay.target == "value"):
            attrs.update(color=OUTLINE_COLOR, penwidth="4")
    if log:
        mid = 10 ** ((math.log10(lo) + math.log10(hi)) / 2)
    else:
        mid = (lo + hi) / 2
    ticks = [_number_text(x, overlay.unit) for x in (lo, mid, hi)] if numbers else ["no numbers drawn"]
    if groups:
        notes.append(f"collapsed boxes: {overlay.aggregate} of their members")
    if bipartite:
        notes.append("colours the functions (boxes)" if overlay.target == "function"
                     else "colours the variables (ellipses)")
    title = f"{overlay.label} ({'log' if log else 'linear'} scale)"
    outline = None
    if outlined:
        outline = overlay.outline_text or f"outlined: {len(outlined)} node{'s' * (len(outlined) != 1)}"
    return colorbar_rows(title, ticks, notes=notes, outline=outline)
