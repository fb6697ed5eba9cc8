"""`or`, `and` and `not` of conditions on integers the data decide, as integer arithmetic.

torch's runtime checks on sizes the data decide can join comparisons (`Eq(u2, 1) | Eq(Min(u1, u2), u2)`,
a broadcast of a length the data decide, FastSpeech2-Conformer's length regulator), and torch-mlir's
importer imports no `or_`, `and_` or `not_`. Each condition becomes an integer `z` in {-1, 0, 1} that is 0
exactly where it holds, made of subtractions, products, `min` and `max` (each imported, with Python's
meaning): `a == b` is `clamp(a - b)`, `a >= b` is `max(min(a - b, 0), -1)`, `s or t` is `z(s) * z(t)`,
`s and t` is `min(z(s)^2 + z(t)^2, 1)`, `not s` is `1 - z(s)^2`; the joined condition is then `z == 0`.
Clamping keeps every product within {-1, 0, 1}, so no size overflows it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch

from .rewrite import UnsupportedError, describe_node

_CONNECTIVES = {operator.or_, operator.and_, operator.not_, torch.sym_not}
_COMPARISONS = {operator.eq, operator.ne, operator.ge, operator.gt, operator.le, operator.lt}

Number = int | torch.fx.Node


def connectives_as_arithmetic(graph: torch.fx.Graph) -> int:
    """Rewrites, in place, each outermost connective of conditions on integers; returns how many."""
    roots = [
        node
        for node in graph.nodes
        if node.op == "call_function"
        and node.target in _CONNECTIVES
        and isinstance(node.meta.get("val"), torch.SymBool)
        and any(user.target not in _CONNECTIVES for user in node.users)
    ]
    for root in roots:
        with graph.inserting_before(root):
            build = _Builder(graph, root)
            holds = build(operator.eq, build.zero_where(root), 0)
        assert isinstance(holds, torch.fx.Node)  # (a condition with a symbol reads a node)
        root.replace_all_uses_with(holds)
    for node in reversed(list(graph.nodes)):  # the connectives the rewritten ones read
        if node.target in _CONNECTIVES and not node.users:
            graph.erase_node(node)
    return len(roots)


class _Builder:
    """Makes the nodes of one condition's arithmetic before `root`, each with its value and root's line."""

    def __init__(self, graph: torch.fx.Graph, root: torch.fx.Node) -> None:
        self.graph, self.root = graph, root

    def __call__(self, op: Callable[..., Any], *args: Number) -> Number:
        values = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args]
        if not any(isinstance(a, torch.fx.Node) for a in args):
            return op(*values)
        node = self.graph.call_function(op, args)
        node.meta = {"val": op(*values), "stack_trace": self.root.meta.get("stack_trace")}
        return node

    def clamp(self, x: Number) -> Number:
        return self(torch.sym_max, self(torch.sym_min, x, 1), -1)

    def square(self, x: Number) -> Number:
        return self(operator.mul, x, x)

    def zero_where(self, condition: Any) -> Number:
        """An integer in {-1, 0, 1} that is 0 exactly where `condition` holds."""
        if isinstance(condition, bool):
            return 0 if condition else 1
        target = getattr(condition, "target", None)
        if target is operator.or_:
            return self(operator.mul, *map(self.zero_where, condition.args))
        if target is operator.and_:
            left, right = (self.square(self.zero_where(c)) for c in condition.args)
            return self(torch.sym_min, self(operator.add, left, right), 1)
        if target in (operator.not_, torch.sym_not):
            return self(operator.sub, 1, self.square(self.zero_where(condition.args[0])))
        if target in _COMPARISONS and all(map(_integer, condition.args)):
            a, b = condition.args
            if target in (operator.le, operator.lt):
                a, b = b, a
            if target is operator.eq:
                return self.clamp(self(operator.sub, a, b))
            if target is operator.ne:
                return self(operator.sub, 1, self.square(self.clamp(self(operator.sub, a, b))))
            margin = self(operator.sub, a, b) if target in (operator.ge, operator.le) else None
            if margin is None:  # a > b: a - b - 1 >= 0
                margin = self(operator.sub, self(operator.sub, a, b), 1)
            return self(torch.sym_max, self(torch.sym_min, margin, 0), -1)
        raise UnsupportedError(
            f"{describe_node(self.root)}: a condition joins {condition}, which is no comparison of integers; "
            "pygraph checks `or`, `and` and `not` of comparisons of sizes and integers only"
        )


def _integer(operand: Any) -> bool:
    value = operand.meta.get("val") if isinstance(operand, torch.fx.Node) else operand
    return isinstance(value, (int, torch.SymInt)) and not isinstance(value, bool)
