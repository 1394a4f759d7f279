"""Parse ``"(x + y) * (x + y) + 3*x"`` into a circuit.

The expression is read with Python's own parser (``ast``) and accepted only if it
uses names, int / float literals, ``+``, ``-``, ``*``, unary ``-`` / ``+`` and
non-negative integer powers written ``**`` or ``^`` (``^`` is rewritten to ``**``
before parsing, so it has the power's precedence, not Python's xor's). Anything
else raises :class:`CircuitError` with the expression and a caret under the
offending column.

Each operator becomes one gate (``x - y`` is ``x + (-1)·y``, ``x^n`` is
square-and-multiply), except that a subexpression written again is the same
gate: ``(x + y) * (x + y)`` computes ``x + y`` once, as a circuit drawn by hand
would (``y + x`` counts as the same sum, operands of + and × being unordered).
To measure an expression as written, build it with :func:`variables` and
Python operators, which add one gate per operator; :func:`simplify` also folds
constants.
"""

from __future__ import annotations

import ast
import math

from autograd_dag.errors import CircuitError
from autograd_dag.circuits.circuit import Circuit, Wire

_OPERATOR_TEXT = {
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
}

_DESCRIPTIONS = {
    ast.Call: "function call",
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Compare: "comparison",
    ast.BoolOp: "boolean operator",
    ast.IfExp: "conditional expression",
    ast.Lambda: "lambda",
    ast.Tuple: "tuple",
    ast.List: "list",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.JoinedStr: "f-string",
    ast.NamedExpr: "assignment expression",
    ast.Starred: "starred expression",
}


class _Source:
    """The user's text, the text given to ``ast`` (``^`` → ``**``), and the column map between them."""

    def __init__(self, text: str):
        self.text = text
        chars, origin = [], []
        for col, ch in enumerate(text):
            if ch == "^":
                chars.append("**")
                origin += [col, col]
            else:
                # newlines would make ast report other lines: one logical line is enough here
                chars.append(" " if ch in "\r\n\t" else ch)
                origin.append(col)
        self.parsed = "".join(chars)
        self.origin = origin + [len(text)]
        self._encoded = self.parsed.encode("utf-8")

    def column_of_byte(self, byte_offset: int) -> int:
        """Column in the user's text of a UTF-8 byte offset into the parsed text (ast's unit)."""
        chars = len(self._encoded[:byte_offset].decode("utf-8", errors="ignore"))
        return self.origin[min(chars, len(self.origin) - 1)]

    def column_of_char(self, char_offset: int) -> int:
        """Column in the user's text of a character offset into the parsed text."""
        return self.origin[max(0, min(char_offset, len(self.origin) - 1))]

    def error(self, message: str, column: int) -> CircuitError:
        line = self.text.replace("\n", " ").replace("\r", " ").replace("\t", " ")
        err = CircuitError(f"cannot parse circuit expression: {message} (column {column + 1})\n  {line}\n  {' ' * column}^")
        err.column = column
        return err


def _operator_column(src: _Source, node: ast.BinOp, symbol: str) -> int:
    """Column of a binary operator's symbol: the first occurrence between its operands."""
    start = len(src._encoded[: node.left.end_col_offset].decode("utf-8", errors="ignore"))
    stop = len(src._encoded[: node.right.col_offset].decode("utf-8", errors="ignore"))
    # ')' and spaces can sit between the operands; skip to the symbol itself.
    pos = src.parsed.find(symbol, start, max(stop, start + 1))
    return src.column_of_char(pos if pos >= 0 else start)


def parse(expression: str, name: str = "out0") -> Circuit:
    """A circuit computing the polynomial written in ``expression``.

    Accepts names, int / float literals, ``+ - *``, unary minus, and integer powers
    ``x**3`` / ``x^3``. Returns a one-output :class:`Circuit` (only the nodes the
    output needs). Raises :class:`CircuitError` showing the expression with a caret
    ``^`` under the offending column; the error's ``column`` attribute is 0-based.

    >>> c = parse("(x + y) * (x + y) + 3*x")  # x + y is computed once
    >>> c.size, str(c.to_polynomial())
    (8, 'x^2 + 2*x*y + y^2 + 3*x')
    >>> parse("x^3 - 2*y").to_polynomial() == parse("x**3 + (-2)*y").to_polynomial()
    True
    """
    if not isinstance(expression, str):
        raise CircuitError(f"parse: expected a string expression, got {type(expression).__name__}")
    src = _Source(expression)
    if not expression.strip():
        raise src.error("the expression is empty", 0)
    try:
        tree = ast.parse(src.parsed, mode="eval")
    except SyntaxError as exc:
        col = src.column_of_char((exc.offset or 1) - 1)
        raise src.error(f"syntax error: {exc.msg}", min(col, len(expression))) from None
    except (RecursionError, MemoryError):
        raise src.error("the expression is nested too deeply for Python's parser", 0) from None

    c = Circuit()
    results: dict = {}
    shared: dict = {}  # structural key of a subexpression -> its result
    # Iterative post-order walk: no recursion, whatever the nesting depth.
    stack = [(tree.body, False)]
    while stack:
        node, ready = stack.pop()
        if not ready:
            stack.append((node, True))
            if isinstance(node, ast.BinOp):
                stack.append((node.right, False))
                stack.append((node.left, False))
            elif isinstance(node, ast.UnaryOp):
                stack.append((node.operand, False))
            continue
        key = _key(node, results)
        if key is not None and key in shared:
            results[id(node)] = shared[key]
            continue
        results[id(node)] = _build(c, src, node, results)
        if key is not None:
            shared[key] = results[id(node)]
    result = results[id(tree.body)]
    return Circuit.from_outputs(result if isinstance(result, Wire) else c.constant(result), names=[name])


def _operand_key(value) -> tuple:
    return ("wire", value.index) if isinstance(value, Wire) else ("number", repr(value))


def _key(node: ast.AST, results: dict) -> tuple | None:
    """What makes two AST nodes the same subexpression: operator and operands (unordered for + and ×)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Sub, ast.Pow)):
        left = _operand_key(results[id(node.left)])
        right = _operand_key(results[id(node.right)])
        if isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = sorted((left, right))
        return (type(node.op).__name__, left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return ("USub", _operand_key(results[id(node.operand)]))
    return None


def _finite(src: _Source, value, col: int):
    """``value`` unchanged, unless it is a number beyond float64 (1e400, 10**400, 1e200*1e200).

    Such a constant became inf with numpy's warning only, and the polynomial
    and every derivative read ``inf``.
    """
    if isinstance(value, Wire):
        return value
    try:
        finite = math.isfinite(float(value))
    except OverflowError:
        finite = False
    if not finite:
        shown = repr(value) if len(repr(value)) <= 20 else f"{repr(value)[:17]}..."
        raise src.error(f"the constant {shown} is not a finite float64 number", col)
    return value


def _build(c: Circuit, src: _Source, node: ast.AST, results: dict):
    """The wire (or plain number, for literals) of one AST node whose children are built."""
    col = src.column_of_byte(getattr(node, "col_offset", 0))
    if isinstance(node, ast.Name):
        return c.variable(node.id)
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise src.error(f"unsupported constant {value!r} (only int and float literals)", col)
        return _finite(src, value, col)
    if isinstance(node, ast.UnaryOp):
        operand = results[id(node.operand)]
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            return -operand if not isinstance(operand, Wire) else c.neg(operand)
        raise src.error(f"unsupported unary operator {'not' if isinstance(node.op, ast.Not) else '~'}", col)
    if isinstance(node, ast.BinOp):
        left, right = results[id(node.left)], results[id(node.right)]
        op = type(node.op)
        if op is ast.Pow:
            exp_col = src.column_of_byte(node.right.col_offset)
            if isinstance(right, Wire):
                raise src.error("the exponent of a power must be an integer literal, not an expression in variables", exp_col)
            if isinstance(right, bool) or not isinstance(right, int) and not (isinstance(right, float) and right.is_integer()):
                raise src.error(f"the exponent {right!r} is not an integer", exp_col)
            if right < 0:
                raise src.error(f"the exponent {right!r} is negative: circuits have no division", exp_col)
            if not isinstance(left, Wire):
                # A number's power is built as gates: their value must stay a float64 number too.
                try:
                    math.pow(float(left), int(right))
                except OverflowError:
                    raise src.error(f"the constant {left!r}**{int(right)} is not a finite float64 number",
                                    col) from None
            return c.pow(left, int(right))
        if op is ast.Add:
            return _finite(src, c._binary("add", left, right), col)
        if op is ast.Mult:
            return _finite(src, c._binary("mul", left, right), col)
        if op is ast.Sub:
            return _finite(src, c.sub(left, right), col)
        symbol = _OPERATOR_TEXT.get(op, op.__name__)
        raise src.error(
            f"unsupported operator '{symbol}' (circuits have only + - * and integer powers)",
            _operator_column(src, node, symbol),
        )
    what = _DESCRIPTIONS.get(type(node), type(node).__name__)
    raise src.error(f"unsupported syntax: {what} (circuits have only + - * and integer powers)", col)
