"""unbinds.py: unbinds as selects, the check of a count the data decide, and what torch 2.11 adds after it."""

from __future__ import annotations

import operator

import pytest
import torch
from test_model_constructs import ValueCounts
from torch import nn

from pygraph.frontend.branches import check_branches
from pygraph.frontend.unbinds import unbinds_as_selects

aten = torch.ops.aten


def test_a_count_the_data_decide_is_checked_without_the_traces_own_check() -> None:
    """torch 2.11's trace of a loop over `unique` values has no check of their count, so the selects of
    a call with fewer values read past them; the check unbinds_as_selects adds fails that call instead.
    (Here the trace's own checks are removed, as torch 2.11 leaves them out.)"""
    example = torch.linspace(-2, 2, 5)[None]
    program = torch.export.draft_export(ValueCounts(), (example,))
    graph = program.graph_module.graph
    for check in list(graph.find_nodes(op="call_function", target=aten._assert_scalar.default)):
        graph.erase_node(check)
    unbinds_as_selects(program)
    targets = [node.target for node in graph.nodes]
    assert aten.unbind.int not in targets and targets.count(aten.select.int) == 5
    module = program.module()
    assert torch.equal(module(example), ValueCounts()(example))
    with pytest.raises(RuntimeError, match="the trace met 5 pieces"):
        module(torch.tensor([[0.0, 1.0, 0.0, 1.0, 2.0]]))


def test_a_static_count_is_selects_and_no_check() -> None:
    class Rows(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b, c = x.unbind(1)
            return a * b - c

    x = torch.randn(4, 3)
    program = torch.export.export(Rows(), (x,))
    unbinds_as_selects(program)
    targets = [node.target for node in program.graph_module.graph.nodes]
    assert targets.count(aten.select.int) == 3 and aten._assert_scalar.default not in targets
    assert torch.equal(program.module()(x), Rows()(x))


def test_a_check_whose_condition_the_trace_knows_is_dropped() -> None:
    """torch 2.11's decomposing adds `u0 >= 5` after the count check fixed u0: a node whose value is the
    constant True, which the importer cannot import; check_branches drops it and its condition."""
    program = torch.export.draft_export(ValueCounts(), (torch.linspace(-2, 2, 5)[None],))
    unbinds_as_selects(program)
    graph = program.graph_module.graph
    size = next(iter(graph.find_nodes(op="call_function", target=aten.sym_size.int)))
    with graph.inserting_after(size):
        known = graph.call_function(operator.ge, (size, 5))
    with graph.inserting_after(known):
        graph.call_function(aten._assert_scalar.default, (known, "u0 >= 5"))
    known.meta["val"] = True
    check_branches(program)
    assert known not in graph.nodes
    assert all(
        check.args[1] != "u0 >= 5"
        for check in graph.find_nodes(op="call_function", target=aten._assert_scalar.default)
    )
