"""Views of a program for Jupyter beyond its listing, added by the layers above that make them.

``Program._repr_mimebundle_`` (Jupyter's display) is :func:`mimebundle`: the
listing, then every view registered with :func:`register_display` —
:mod:`autograd_dag.render` registers the picture when imported. A hook below,
so that no layer above replaces a method of Program.
"""

from __future__ import annotations

from typing import Callable

_DISPLAYS: list[Callable] = []


def register_display(display: Callable) -> None:
    """Add a view to every Program's Jupyter display: ``display(program, wanted)`` returns ``{MIME type: data}``.

    ``wanted(mime)`` says whether the frontend asked for that type (skip the work
    otherwise); a display returns only what it can make (``{}``: nothing). The same
    display registered twice is called once. :mod:`autograd_dag.render` registers the
    SVG picture this way when imported.

    Example:
        >>> import autograd_dag as ad
        >>> def markdown(program, wanted):
        ...     return {"text/markdown": f"**{program.name}**"}
        >>> register_display(markdown)
        >>> ad.trace(lambda x: x * 2.0, 1.0, name="double")._repr_mimebundle_(include=["text/markdown"])
        {'text/markdown': '**double**'}
        >>> _DISPLAYS.remove(markdown)   # (this example's view only)
    """
    if display not in _DISPLAYS:
        _DISPLAYS.append(display)


def mimebundle(program, include=None, exclude=None) -> dict:
    """``program``'s Jupyter display (``Program._repr_mimebundle_``): its listing and each registered view,
    only those the MIME types ``include``/``exclude`` (as IPython passes them) let in.

    Example:
        >>> import autograd_dag as ad
        >>> program = ad.trace(lambda x: x * 2.0, 1.0)
        >>> mimebundle(program, include=["text/plain"]) == {"text/plain": str(program)}
        True
    """
    def wanted(mime: str) -> bool:
        return (include is None or mime in include) and not (exclude and mime in exclude)
    bundle = {"text/plain": str(program)} if wanted("text/plain") else {}
    for display in _DISPLAYS:
        bundle.update((mime, data) for mime, data in display(program, wanted).items() if wanted(mime))
    return bundle
