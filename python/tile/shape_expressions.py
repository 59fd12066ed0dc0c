"""The launch rules' shapes as the library writes them (Tile.h's
tile_function_shape: FunctionInfo.argument_shapes and result_shapes),
evaluated here with a call's sizes — ints, or torch SymInts while
torch.compile traces, so that a result's rows stay the symbol the input's
rows are and a new sequence length reuses the graph.

An expression is over `rows` (a [rows, width] buffer's leading dimensions,
flattened), `w<i>` (argument i's width) and `arg<i>` (integer argument i):
integers, + - * / % (C's: division truncates toward zero, as the launcher
computes it, also where an integer argument is negative), parentheses, min,
max and ceildiv. A symbol is bound by the first argument dimension, in
argument order, whose whole expression it is (as the launcher binds it)."""

import ast
import functools
import operator

import torch

ROWS = "rows"


class ShapeExpressionError(ValueError):
    """An expression outside the language, or a symbol no argument binds."""


def _divisor(b):
    if isinstance(b, int) and b == 0:
        raise ShapeExpressionError("division by zero in a shape expression")
    return b


def _truncating(a, b):
    """C's a / b: toward zero. A SymInt operand is a size (the rows), never
    negative, where floor division is the same and stays symbolic."""
    b = _divisor(b)
    if isinstance(a, int) and isinstance(b, int):
        quotient = abs(a) // abs(b)
        return quotient if (a < 0) == (b < 0) else -quotient
    return a // b


def _remainder(a, b):
    """C's a % b: the sign of a."""
    return a - _truncating(a, b) * b


def _ceildiv(a, b):
    if isinstance(b, int) and b <= 0:
        raise ShapeExpressionError(f"ceildiv by {b} in a shape expression")
    return -(-a // b)


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub,
           ast.Mult: operator.mul, ast.Div: _truncating,
           ast.Mod: _remainder}
_CALLS = {"min": torch.sym_min, "max": torch.sym_max, "ceildiv": _ceildiv}


@functools.lru_cache(maxsize=None)
def _parsed(text):
    """The checked syntax tree of `text` (each text parsed once)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        # (Python's parser takes at most 200 nested parentheses.)
        raise ShapeExpressionError(f"not a shape expression: {text!r}") \
            from None
    for node in ast.walk(tree):
        allowed = isinstance(node, (ast.BinOp, ast.Name, ast.Load)) or \
            type(node) in _BINARY or \
            (isinstance(node, ast.Constant) and type(node.value) is int) or \
            (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id in _CALLS and len(node.args) == 2
             and not node.keywords)
        if not allowed:
            raise ShapeExpressionError(
                f"not a shape expression: {text!r} (at "
                f"{type(node).__name__})")
    return tree


def evaluate(text, symbols):
    """The value of `text` with `symbols` bound (ints or SymInts)."""
    def value(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in symbols:
                raise ShapeExpressionError(
                    f"unbound symbol {node.id!r} in {text!r}")
            return symbols[node.id]
        if isinstance(node, ast.Call):
            return _CALLS[node.func.id](*(value(a) for a in node.args))
        return _BINARY[type(node.op)](value(node.left), value(node.right))
    return value(_parsed(text))


def bind(argument_shapes, flats, integers, keep_symbolic=(ROWS,)):
    """The symbols a call binds: for each argument in order, each dimension
    of a tensor's flattened shape whose expression is one symbol not yet
    bound, and `arg<i>` for each index i in `integers` (the arguments the
    call passes as integers). A SymInt size stays one for the symbols in
    `keep_symbolic` and is read as an int (so guarded) for every other: the
    kernels are specialized for widths."""
    symbols = {}
    for index, (shape, flat) in enumerate(zip(argument_shapes, flats)):
        if isinstance(flat, torch.Tensor):
            for text, size in zip(shape, flat.shape):
                name = symbol(text)
                if name is None:
                    continue
                if name in symbols:
                    # Two tensors' rows must agree: traced, torch is told so
                    # (a runtime check), as the launcher checks it eagerly.
                    if isinstance(size, torch.SymInt):
                        torch._check(size == symbols[name])
                    continue
                symbols[name] = size if name in keep_symbolic or \
                    not isinstance(size, torch.SymInt) else int(size)
        elif index in integers:
            symbols[f"arg{index}"] = int(flat)
    return symbols


def symbol(text):
    """The symbol's name where the whole expression is one symbol, perhaps
    in parentheses (a shape that binds it, as the launcher's
    Expression::symbol), else None. String operations only, which
    torch.compile traces (results are shaped inside a traced forward)."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        # A wrong cut ("(a) + (b)" -> "a) + (b") is no identifier.
        text = text[1:-1].strip()
    return text if text.isidentifier() and text not in _CALLS else None


def shape(texts, symbols):
    """A buffer's flattened shape: each dimension's expression evaluated."""
    return tuple(evaluate(text, symbols) for text in texts)


def is_per_row(texts):
    """Whether a buffer's flattened shape leads with the rows (a [rows] or
    [rows, width] buffer), which the caller sees in its leading shape."""
    return bool(texts) and symbol(texts[0]) == ROWS
