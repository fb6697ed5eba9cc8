"""splits.py: splits of sizes the data decide as slices (a host op cannot hold a list)."""

from __future__ import annotations

import warnings

import torch
from torch import nn

import pygraph
from pygraph.frontend.splits import splits_as_slices

aten = torch.ops.aten


class SplitByCounts(nn.Module):
    """Rows split into groups whose sizes the data give (the image features of each image)."""

    def forward(self, x: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pieces = x.split(counts.tolist())
        return torch.stack([p.sum(0) for p in pieces]), pieces[1] * 2


def test_a_split_of_sizes_from_the_data_is_slices() -> None:
    example = (torch.randn(9, 4), torch.tensor([2, 3, 4]))
    program = torch.export.draft_export(SplitByCounts(), example)
    splits_as_slices(program)
    targets = [node.target for node in program.graph.nodes]
    assert aten.split_with_sizes.default not in targets and targets.count(aten.slice.Tensor) == 3
    for got, want in zip(program.module()(*example), SplitByCounts()(*example), strict=True):
        assert torch.equal(got, want)


def test_a_split_of_sizes_from_the_data_compiles_and_follows_each_call() -> None:
    """It was refused (`split_with_sizes returns a list, which a host op cannot hold`, hf/idefics3)."""
    model = SplitByCounts()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (sizes read from the data: compiling says so)
        compiled = pygraph.export_and_compile(model, (torch.randn(9, 4), torch.tensor([2, 3, 4])))
        for counts in ([2, 3, 4], [1, 1, 7], [4, 3, 2]):
            x = torch.randn(9, 4)
            for got, want in zip(
                compiled(x, torch.tensor(counts)), model(x, torch.tensor(counts)), strict=True
            ):
                torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_a_split_of_static_sizes_stays() -> None:
    class Halves(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b = x.split([3, 6])
            return a.sum(0) + b.sum(0)

    program = torch.export.export(Halves(), (torch.randn(9, 4),))
    splits_as_slices(program)
    assert aten.split_with_sizes.default in [node.target for node in program.graph.nodes]


class GatedHalvesOfPickedRows(nn.Module):
    """Rows the data pick, split into halves along a static dim (JetMoE's experts: `chunk(2, dim=-1)`)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        a, b = x[mask].chunk(2, dim=-1)
        return (torch.relu(a) * b).sum(0)


def test_a_chunk_of_rows_the_data_pick_is_slices_and_follows_each_call() -> None:
    """It was refused (`aten.split.Tensor returns a list, which a host op cannot hold`, hf/jetmoe)."""
    torch.manual_seed(0)
    model = GatedHalvesOfPickedRows()
    example = (torch.randn(6, 8), torch.tensor([True, False, True, True, False, True]))
    program = torch.export.export(model, example)
    splits_as_slices(program)
    assert aten.chunk.default not in [node.target for node in program.graph.nodes]
    compiled = pygraph.export_and_compile(model, example)
    for picked in ([0, 1, 5], [], [0, 1, 2, 3, 4, 5]):
        x, mask = torch.randn(6, 8), torch.zeros(6, dtype=torch.bool)
        mask[picked] = True
        torch.testing.assert_close(compiled(x, mask), model(x, mask), rtol=1e-6, atol=1e-6)
