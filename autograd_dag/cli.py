"""The ``autograd-dag`` command: render programs, analyse circuits, regenerate the gallery.

    autograd-dag render MODULE:FUNCTION [--view dag|bipartite] [--grad] [--depth K] [-o out.svg]
    autograd-dag render path/to/file.py:FUNCTION ...
    autograd-dag render model.onnx [-o model.svg]      (an ONNX model, imported as a program)
    autograd-dag render ... --scope block.3.attention  (one scope's inside)
    autograd-dag render ... --site out/model/          (a linked SVG per scope and an index.html)
    autograd-dag export MODULE:FUNCTION [--grad] [-o model.onnx] [--opset N]
    autograd-dag circuit "(x + y) * (x + y) + 3*x" [-o circuit.svg] [--view dag|bipartite]
    autograd-dag circuit --families
    autograd-dag gallery [--out viz] [--only NAME ...]

``FUNCTION`` is called without arguments and returns a Program, an output
Tensor or a tuple of output Tensors (a module-level Program or Tensor is
accepted as is). ``--grad`` draws its gradient program instead: with respect
to the parameters (``Tensor(..., requires_grad=True)``) when there are any.

Every failure prints one line, ``autograd-dag: error: ...`` (with the user's
``file.py:line`` when their own code raised), and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import math
import os
import sys
import traceback

from . import __version__
from . import circuits
from . import onnx as onnx_io
from .autodiff import grad_program
from .core import Tensor
from .errors import AutogradDagError, RenderError, located, user_source
from .program import Program
from .render import as_program, render, render_site, save
from .render.output import format_from_path
from .gallery import GALLERY, build_gallery


def load_target(target: str, command: str = "render"):
    """The object named by ``MODULE:NAME`` or ``path/to/file.py:NAME``, called if it is a function.

    Returns what the function returns (or the object itself if it is a
    Program or Tensor). Raises :class:`AutogradDagError` with a readable
    message, led by the subcommand's name ``command``, when the module, the
    name or the call fails.
    """
    if ":" not in target:
        raise AutogradDagError(f"{command}: expected MODULE:FUNCTION or path/to/file.py:FUNCTION, got {target!r}")
    module_part, name = target.rsplit(":", 1)
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        path = os.path.abspath(module_part)
        if not os.path.exists(path):
            raise AutogradDagError(f"{command}: no such file {module_part!r}")
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
        if spec is None or spec.loader is None:
            raise AutogradDagError(f"{command}: cannot load {module_part!r} as a Python module")
        module = importlib.util.module_from_spec(spec)
        # The file's own folder is importable from it, as when run as a script.
        sys.path.insert(0, os.path.dirname(path))
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise user_code_error(f"{command}: running {module_part} raised", exc) from None
        finally:
            sys.path.remove(os.path.dirname(path))
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_part.startswith(exc.name):
                raise AutogradDagError(f"{command}: cannot import module {module_part!r}: {exc}") from None
            raise user_code_error(f"{command}: importing {module_part} raised", exc) from None
        except Exception as exc:
            raise user_code_error(f"{command}: importing {module_part} raised", exc) from None
    try:
        obj = getattr(module, name)
    except AttributeError:
        raise AutogradDagError(f"{command}: module {module_part!r} has no attribute {name!r}") from None
    if isinstance(obj, (Program, Tensor)) or not callable(obj):
        return obj
    try:
        inspect.signature(obj).bind()
    except TypeError as exc:
        raise AutogradDagError(f"{command}: {target} must be callable without arguments and build a program "
                               f"(or return a Tensor): {exc}") from None
    except ValueError:  # no signature to inspect (a builtin): just call it
        pass
    try:
        return obj()
    except Exception as exc:
        raise user_code_error(f"{command}: {target} raised", exc) from None


def user_code_error(what: str, exc: BaseException) -> AutogradDagError:
    """A one-line error for an exception raised by the user's code, naming their ``file:line``.

    The line is the innermost frame of the traceback outside this package
    (a library error whose message names a line already is kept as it is; one
    that names none gets the user's line too).

    Example:
        >>> try:
        ...     1 / 0
        ... except ZeroDivisionError as exc:
        ...     print(user_code_error("f raised", exc))  # doctest: +ELLIPSIS
        f raised ZeroDivisionError: division by zero (at ...:2)
    """
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(package) and not f.filename.startswith("<frozen")]
    at = f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    if isinstance(exc, AutogradDagError):
        # Not every library error names the user's line (Program.from_graph's do not): add it then.
        return AutogradDagError(f"{what} {type(exc).__name__}: {exc}{'' if ' (at ' in str(exc) else at}")
    message = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, SyntaxError) and exc.filename:
        at = f" (at {os.path.basename(exc.filename)}:{exc.lineno})"
        message = exc.msg
    return AutogradDagError(f"{what} {type(exc).__name__}{': ' + message if message else ''}{at}")


def _gradient_of(obj, target: str, command: str = "render") -> Program:
    """The gradient program of what ``target`` built: with respect to its parameters if it has any.

    A Tensor whose leaves include parameters (``Tensor(..., requires_grad=True)``)
    is differentiated with respect to those parameters, as training would;
    otherwise with respect to every input.
    """
    if isinstance(obj, Program):
        program, wrt = obj, None
    else:
        plain = len(as_program(obj).inputs)
        program = as_program(obj, parameters_as_inputs=True)
        wrt = tuple(range(plain, len(program.inputs))) or None
    if not program.inputs:
        raise AutogradDagError(f"{command} --grad: {target} has no inputs and no parameters "
                               f"(Tensor(..., requires_grad=True)) to differentiate with respect to")
    return grad_program(program, wrt)


def _output_path(args, default_stem: str | None) -> str | None:
    """The file to write (checked before any work): ``-o``, or ``default_stem`` + the format."""
    fmt = args.format
    if args.output is None:
        return None if default_stem is None else f"{default_stem}.{fmt or 'svg'}"
    try:
        format_from_path(args.output, fmt)
    except AutogradDagError as exc:
        if os.path.splitext(args.output)[1]:  # a suffix, just not one Graphviz writes: say which
            raise AutogradDagError(f"{exc}; or pass --format svg (or png, pdf, dot)") from None
        raise AutogradDagError(f"cannot tell the format of {args.output!r}: give it a suffix (.svg, .png, "
                               f".pdf, .dot) or pass --format svg (or png, pdf, dot)") from None
    return args.output


def _is_onnx_file(target: str) -> bool:
    return target.lower().endswith(".onnx")


def _render_command(args) -> int:
    if args.site is not None and (args.output is not None or args.format is not None or args.depth is not None
                                  or args.scope is not None):
        raise AutogradDagError("render: --site writes one picture per scope: it takes no -o, --format, "
                               "--depth or --scope")
    view = args.view or "dag"
    if _is_onnx_file(args.target):
        name = os.path.splitext(os.path.basename(args.target))[0]
    else:
        name = args.target.rsplit(':', 1)[-1]
    stem = f"{name}{'_grad' if args.grad else ''}_{view}"
    out = _output_path(args, None if args.site is not None else stem)
    if _is_onnx_file(args.target):
        if not os.path.exists(args.target):
            raise AutogradDagError(f"render: no such file {args.target!r}")
        obj = onnx_io.load(args.target)
    else:
        obj = load_target(args.target)
    if args.grad:
        program = _gradient_of(obj, args.target)
    else:
        program = as_program(obj)
    budget = {} if args.max_nodes is None else {"max_nodes": args.max_nodes or None}
    if args.site is not None:
        if args.max_nodes == 0:
            raise AutogradDagError("render: --site needs a budget per page: --max-nodes 0 draws every node")
        site = render_site(program, args.site, view=args.view or "both", rankdir=args.rankdir,
                           legend=not args.no_legend, color_by=args.color_by, **budget)
        print(site.index)
        return 0
    graph = render(program, view, scope=args.scope, depth=args.depth, rankdir=args.rankdir, legend=not args.no_legend,
                   color_by=args.color_by, **budget)
    save(graph, out, format=args.format)
    print(out)
    return 0


def _export_command(args) -> int:
    name = args.target.rsplit(":", 1)[-1]
    out = args.output or f"{name}{'_grad' if args.grad else ''}.onnx"
    if not out.lower().endswith(".onnx"):
        raise AutogradDagError(f"export: the output file should end in .onnx, got {out!r}")
    obj = load_target(args.target, "export")
    try:
        program = _gradient_of(obj, args.target, "export") if args.grad else as_program(obj)
    except RenderError as exc:  # as_program is the renderer's: its messages start "render: "
        raise AutogradDagError(f"export: {str(exc).removeprefix('render: ')}") from None
    model = onnx_io.export(program, path=out, opset=args.opset)
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"{out}: {len(program.inputs)} input(s), {len(program.outputs)} output(s), {len(program.nodes)} "
          f"program nodes -> {len(model.graph.node)} ONNX nodes (opset {args.opset}; {', '.join(ops)})")
    return 0


def circuit_report(expression: str) -> tuple[str, "circuits.Circuit", "circuits.GradientCircuit"]:
    """The text ``autograd-dag circuit`` prints for ``expression``, with the circuit and its gradient.

    Example:
        >>> text, c, g = circuit_report("x*y + x")
        >>> print(text.splitlines()[1])
        size 4 (edges), 2 gates (1 +, 1 ×), depth 2
    """
    c = circuits.parse(expression, name="f")
    summary = c.summary()
    polynomial = c.to_polynomial()
    # Literals beyond float64 are refused by the parser; a product of large ones
    # (1e200*1e200) only overflows here, and would print as "inf*x".
    overflowed = [coef for coef in polynomial.terms.values() if not math.isfinite(float(coef))]
    if overflowed:
        raise AutogradDagError(f"circuit: {expression!r} has a coefficient that is not a finite float64 number ({overflowed[0]}): "
                               f"its constants multiply past 1.8e308")
    gradient = circuits.gradient_circuit(c)
    lines = [
        f"circuit: {expression}",
        f"size {summary['size']} (edges), {summary['gates']} gates ({summary['add_gates']} +, "
        f"{summary['mul_gates']} \u00d7), depth {summary['depth']}",
        f"polynomial: {polynomial}  (degree {polynomial.degree})",
        f"gradient circuit (f and every df/dx_i): size {gradient.size}, ratio S(f, grad f) / S(f) = "
        f"{'n/a' if gradient.ratio is None else f'{gradient.ratio:.2f}'} (Baur-Strassen bound: {gradient.bound:.3g})",
    ]
    for var in sorted(c.variables):
        lines.append(f"  df/d{var} = {polynomial.derivative(var)}")
    return "\n".join(lines), c, gradient


def _circuit_command(args) -> int:
    if args.families:
        print(circuits.format_family_table())
        return 0
    if not args.expression:
        raise AutogradDagError("circuit: give an expression, e.g. autograd-dag circuit \"(x + y)*(x + y)\", "
                               "or --families")
    out = _output_path(args, None)
    text, c, gradient = circuit_report(args.expression)
    print(text)
    if out:
        target = gradient if args.grad else c
        print(save(render(target, args.view), out, format=args.format))
    return 0


def _gallery_command(args) -> int:
    build_gallery(args.out, args.only, verbose=True)
    return 0


FORMATS = ("svg", "png", "pdf", "dot")


def _box_count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 (most boxes in the picture; 0 draws "
                                         f"every node), got {text!r}")
    return int(text)


def _depth(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 (how many levels of name scopes to "
                                         f"show), got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``autograd-dag`` (subcommands ``render``, ``export``, ``circuit`` and ``gallery``)."""
    parser = argparse.ArgumentParser(prog="autograd-dag", description="Draw programs as computation graphs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("render", help="draw the program built by MODULE:FUNCTION (or an ONNX model)")
    r.add_argument("target", help="MODULE:FUNCTION, path/to/file.py:FUNCTION or model.onnx")
    r.add_argument("--view", choices=("dag", "bipartite"), default=None,
                   help="default: dag (with --site: both)")
    r.add_argument("--grad", action="store_true", help="draw the gradient program instead")
    r.add_argument("--depth", type=_depth, default=None,
                   help="collapse name scopes nested deeper than this (0 collapses every scope)")
    r.add_argument("--max-nodes", type=_box_count, default=None,
                   help="most boxes in the picture (default 200: larger programs collapse per branch); "
                        "0 draws every node")
    r.add_argument("--scope", default=None,
                   help="draw one scope's inside, e.g. block.3.attention (a gradient program's backward "
                        "pass: 'backward pass.block.3')")
    r.add_argument("--site", metavar="DIR", default=None,
                   help="write a drill-down site: one SVG per collapsed scope, linked, and DIR/index.html")
    r.add_argument("--rankdir", choices=("TB", "LR"), default="TB")
    r.add_argument("--color-by", choices=("role", "op"), default="role")
    r.add_argument("--no-legend", action="store_true")
    r.add_argument("-o", "--output", help="output file; the suffix picks the format (svg, png, pdf, dot)")
    r.add_argument("--format", choices=FORMATS, help="output format when -o has no suffix (default: svg)")
    r.set_defaults(run=_render_command)
    e = sub.add_parser("export", help="write the program built by MODULE:FUNCTION as an ONNX model")
    e.add_argument("target", help="MODULE:FUNCTION or path/to/file.py:FUNCTION")
    e.add_argument("--grad", action="store_true", help="export the gradient program instead")
    e.add_argument("-o", "--output", help="the .onnx file to write (default: FUNCTION.onnx)")
    e.add_argument("--opset", type=int, default=onnx_io.DEFAULT_OPSET,
                   help=f"ONNX opset to write (default {onnx_io.DEFAULT_OPSET})")
    e.set_defaults(run=_export_command)
    c = sub.add_parser("circuit", help="size, depth, polynomial and gradient size of an arithmetic circuit")
    c.add_argument("expression", nargs="?", help='a polynomial expression, e.g. "(x + y) * (x + y) + 3*x"')
    c.add_argument("--families", action="store_true",
                   help="print circuits of the same polynomials in different sizes")
    c.add_argument("--grad", action="store_true", help="with -o: draw the gradient circuit")
    c.add_argument("--view", choices=("dag", "bipartite"), default="dag")
    c.add_argument("-o", "--output", help="draw the circuit to this file (svg, png, pdf, dot)")
    c.add_argument("--format", choices=FORMATS, help="output format when -o has no suffix")
    c.set_defaults(run=_circuit_command)
    g = sub.add_parser("gallery", help="regenerate the gallery of pictures")
    g.add_argument("--out", default="viz", help="output folder (default: viz)")
    g.add_argument("--only", nargs="+", metavar="NAME", choices=[e.name for e in GALLERY],
                   help="only these entries")
    g.set_defaults(run=_gallery_command)
    return parser


def main(argv=None) -> int:
    """Run ``autograd-dag`` with ``argv`` (default: the command line); returns the exit status.

    Example:
        >>> main(["gallery", "--out", "/tmp/viz", "--only", "book"])  # doctest: +SKIP
        0
    """
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except AutogradDagError as exc:
        # An error about the command's options names the line that called main (the launcher): not the
        # user's. An error in the user's function keeps its line (model.py:12).
        message = str(exc).removesuffix(located(user_source()))
    except BrokenPipeError:  # the reader (head, less) went away: nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # an output path that cannot be written
        path = getattr(args, "output", None) or exc.filename
        message = f"cannot write {path!r}: {exc.strerror or exc}" if path else str(exc)
    print(f"autograd-dag: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
