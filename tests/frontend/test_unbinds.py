"""unbinds.py: unbinds as selects, and the check of a count the data decide."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pygraph.frontend.unbinds import unbinds_as_selects

aten = torch.ops.aten


class ValueCounts(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        levels = x.round().clamp(-2, 2)
        return sum((levels == u).to(x.dtype) * u for u in levels.unique())


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
