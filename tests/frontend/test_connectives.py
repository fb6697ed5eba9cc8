"""connectives.py: `or`, `and` and `not` of conditions on integers as arithmetic the importer imports."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable

import pytest
import torch
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from pygraph.frontend.connectives import connectives_as_arithmetic
from pygraph.frontend.rewrite import UnsupportedError

# each condition on (a, b, c) as the FX graph joins it, and as Python evaluates it
CONDITIONS: dict[str, tuple[Callable, Callable]] = {
    "a == 1 or min(b, a) == a": (
        lambda g, a, b, c: g(operator.or_, g(operator.eq, a, 1), g(operator.eq, g(torch.sym_min, b, a), a)),
        lambda a, b, c: a == 1 or min(b, a) == a,
    ),
    "a < b and not c != 0": (
        lambda g, a, b, c: g(operator.and_, g(operator.lt, a, b), g(torch.sym_not, g(operator.ne, c, 0))),
        lambda a, b, c: a < b and c == 0,
    ),
    "(a > b or b >= c) and a <= c": (
        lambda g, a, b, c: g(
            operator.and_, g(operator.or_, g(operator.gt, a, b), g(operator.ge, b, c)), g(operator.le, a, c)
        ),
        lambda a, b, c: (a > b or b >= c) and a <= c,
    ),
    "not (a == b or b == c or a == c)": (
        lambda g, a, b, c: g(
            torch.sym_not,
            g(
                operator.or_,
                g(operator.or_, g(operator.eq, a, b), g(operator.eq, b, c)),
                g(operator.eq, a, c),
            ),
        ),
        lambda a, b, c: len({a, b, c}) == 3,
    ),
}


def traced(join: Callable) -> torch.fx.GraphModule:
    """A graph of three integer inputs returning the joined condition, each node with its symbolic value."""
    graph, env = torch.fx.Graph(), ShapeEnv()

    def call(op: Callable, *args: object) -> torch.fx.Node:
        node = graph.call_function(op, args)
        node.meta["val"] = op(*(a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in args))
        return node

    inputs = []
    for name in "abc":
        inputs.append(graph.placeholder(name))
        inputs[-1].meta["val"] = env.create_unbacked_symint()
    graph.output((join(call, *inputs),))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


@pytest.mark.parametrize("name", CONDITIONS)
def test_joined_conditions_are_arithmetic_that_holds_where_they_hold(name: str) -> None:
    join, python = CONDITIONS[name]
    module = traced(join)
    assert connectives_as_arithmetic(module.graph) == 1
    module.recompile()
    targets = {node.target for node in module.graph.nodes}
    assert not targets & {operator.or_, operator.and_, torch.sym_not}
    for a, b, c in itertools.product(range(-3, 4), repeat=3):
        assert module(a, b, c)[0] == python(a, b, c), (a, b, c)


def test_a_joined_condition_on_something_else_is_refused() -> None:
    graph, env = torch.fx.Graph(), ShapeEnv()
    flag, number = graph.placeholder("flag"), graph.placeholder("n")
    flag.meta["val"], number.meta["val"] = env.create_unbacked_symbool(), env.create_unbacked_symint()
    test = graph.call_function(operator.eq, (number, 1))
    test.meta["val"] = number.meta["val"] == 1
    joined = graph.call_function(operator.or_, (flag, test))
    joined.meta["val"] = flag.meta["val"] | test.meta["val"]
    graph.output((joined,))
    with pytest.raises(UnsupportedError, match="no comparison of integers"):
        connectives_as_arithmetic(graph)
