"""Python arithmetic on numbers read from the data (`n % 7`, `max(n, 2)`, `abs(s) ** 0.5`) as scalar ops
that compute what Python computes.

A model that reads a number from a tensor (`.item()`) and computes with it in Python leaves calls of
Python builtins on symbolic numbers in the exported program. torch-mlir's importer maps some of them to
ATen ops by name, `%` among them to `aten.fmod`, which truncates where Python floors (`-1.0 % 0.7` is 0.4
in Python, -0.3 as fmod) and returns a float for two ints: a silently wrong answer. Others (`**`, `abs`,
`max`, `min`, `math.floor`, `math.ceil`, `math.trunc`, `round`, `float`) it does not import at all. Each is
rewritten here into the ATen or prim overload for its operands' types whose result is Python's, followed by
a conversion where that overload's result type is not Python's (`int ** int` is an int); a builtin on data
that has none is an error naming the line.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import torch

from .rewrite import UnsupportedError, describe_node

aten, prim = torch.ops.aten, torch.ops.prim

# builtin -> the overload packet computing it for two numbers (overloads `int`, `float`, `int_float`, ...)
_BINARY = {
    operator.mod: aten.remainder,  # (Python's floor remainder; `aten.fmod` truncates)
    operator.pow: aten.pow,
    builtins.pow: aten.pow,
    torch.sym_max: prim.max,
    torch.sym_min: prim.min,
}
# builtin -> (overload for an int, for a float); None: the operand itself
_UNARY = {
    operator.abs: (prim.abs.int, prim.abs.float),
    builtins.abs: (prim.abs.int, prim.abs.float),
    math.floor: (None, aten.floor.float),
    math.ceil: (None, aten.ceil.float),
    math.trunc: (None, aten.Int.float),
    builtins.round: (None, aten.round.float),  # (half to even, as Python's; then an int, below)
    torch.sym_float: (aten.Float.int, None),
    torch.sym_int: (None, aten.Int.float),
}


def python_arithmetic_as_ops(ep: torch.export.ExportedProgram) -> int:
    """Rewrites each call of a Python builtin on numbers of the program into scalar ops (module
    docstring); returns how many."""
    graph = ep.graph
    changed = 0
    for node in list(graph.nodes):
        # (other builtins, `+` to `>=` and `//`, torch-mlir's importer computes as Python does)
        rewritten = node.op == "call_function" and (node.target in _BINARY or node.target in _UNARY)
        if not rewritten or not any(isinstance(a, torch.fx.Node) for a in node.args):
            continue
        ops = _binary(node) if node.target in _BINARY else _unary(node)
        with graph.inserting_before(node):
            value: Any = node.args[0]
            for op, args in ops:
                value = graph.call_function(op, args if args is not None else (value,))
                value.meta = {"val": _value_of(op, node), "stack_trace": node.stack_trace}
        node.replace_all_uses_with(value)
        graph.erase_node(node)
        changed += 1
    if changed:
        graph.lint()
        ep.graph_module.recompile()
    return changed


def _kind(value: Any) -> str:
    value = value.meta.get("val") if isinstance(value, torch.fx.Node) else value
    if isinstance(value, (bool, int, torch.SymInt, torch.SymBool)):
        return "int"
    if isinstance(value, (float, torch.SymFloat)):
        return "float"
    raise UnsupportedError(f"a Python builtin's operand is {type(value).__name__}, not a number")


def _binary(node: torch.fx.Node) -> list[tuple[Any, Any]]:
    """The ops computing a two-operand builtin: `int ** int` as ATen's float power made an int again
    (exact below 2**53, as a float holds every such int)."""
    if len(node.args) != 2 or node.kwargs:
        raise UnsupportedError(
            f"{describe_node(node)}: Python's {node.target.__name__} with {len(node.args)} operands on a number "
            "read from the data has no scalar op in pygraph; compute it with tensor ops"
        )
    a, b = node.args
    kinds = (_kind(a), _kind(b))
    overload = kinds[0] if kinds[0] == kinds[1] else f"{kinds[0]}_{kinds[1]}"
    op = getattr(_BINARY[node.target], overload)
    if _BINARY[node.target] is aten.pow and _kind(node) == "int":
        return [(op, (a, b)), (aten.Int.float, None)]
    return [(op, (a, b))]


def _unary(node: torch.fx.Node) -> list[tuple[Any, Any]]:
    """The ops computing a one-operand builtin (none: the builtin of an int is the int); `round(x)` is an
    int, `round(x, n)` has no ATen op."""
    if len(node.args) != 1 and not (node.target is builtins.round and node.args[1:] == (None,)):
        raise UnsupportedError(
            f"{describe_node(node)}: Python's {node.target.__name__} with {len(node.args)} operands on a number "
            "read from the data has no scalar op in pygraph; compute it with tensor ops"
        )
    (x,) = node.args[:1]
    for_int, for_float = _UNARY[node.target]
    op = for_int if _kind(x) == "int" else for_float
    if op is None:
        return []  # (the int itself)
    if op is aten.round.float:
        return [(op, (x,)), (aten.Int.float, None)]
    return [(op, (x,))]


def _value_of(op: Any, node: torch.fx.Node) -> Any:
    """The symbolic value an op of the rewrite holds: the builtin's, or its float where the op is the
    float step before a conversion to int."""
    value = node.meta.get("val")
    if op in (aten.pow.int, aten.round.float) and isinstance(value, (int, torch.SymInt)):
        return torch.sym_float(value)
    return value
