"""Pooling as views and pointwise ops (frontend/pooling.py)."""

import pytest
import torch
from torch import nn

import pygraph
from pygraph.frontend import export_program
from pygraph.metrics import relative_error

F = nn.functional
POOLS = (
    torch.ops.aten.max_pool2d.default,
    torch.ops.aten.avg_pool2d.default,
    torch.ops.aten.adaptive_avg_pool2d.default,
)


class Pools(nn.Module):
    """Each pooling the rewrite takes: max with and without padding, average, global average."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.max_pool2d(torch.relu(x), 3, 2, 1).sum((2, 3))
        b = F.max_pool2d(x, 3, 2).mean((2, 3))
        c = F.avg_pool2d(x, 2).sum((2, 3))
        return a + b + c + F.adaptive_avg_pool2d(x, 1).flatten(1)


class Unchanged(nn.Module):
    """Poolings left to ATen: ceil_mode, dilation, padded averages, adaptive pooling to more than 1x1."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.max_pool2d(x, 3, 2, ceil_mode=True).sum((2, 3))
        b = F.max_pool2d(x, 2, 1, dilation=2).sum((2, 3))
        c = F.avg_pool2d(x, 3, 2, 1).sum((2, 3))
        return a + b + c + F.adaptive_avg_pool2d(x, 2).sum((2, 3))


def pools(program: torch.export.ExportedProgram) -> list:
    return [n.target for n in program.graph.nodes if n.target in POOLS]


def test_poolings_become_views_and_pointwise_ops_and_match_eager():
    x = torch.randn(2, 4, 9, 9)
    assert pools(export_program(Pools(), (x,))) == []
    compiled = pygraph.export_and_compile(Pools(), (x,))
    for _ in range(2):
        x = torch.randn(2, 4, 9, 9)
        assert relative_error(compiled(x), Pools()(x)) <= 1e-4


def test_max_pooling_keeps_eager_bits_nan_included():
    x = torch.randn(1, 3, 8, 8)
    x[0, 1, 2, 3] = float("nan")
    model = nn.MaxPool2d(3, 2, 1)
    got = pygraph.export_and_compile(model, (x,))(x)
    assert torch.equal(got.isnan(), model(x).isnan())
    assert torch.equal(got.nan_to_num(), model(x).nan_to_num())


@pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")
def test_other_poolings_are_left_to_aten():
    x = torch.randn(2, 4, 9, 9)
    assert len(pools(export_program(Unchanged(), (x,)))) == 4
    assert relative_error(pygraph.export_and_compile(Unchanged(), (x,))(x), Unchanged()(x)) <= 1e-4


class FlattensPools(nn.Module):
    """Poolings of a transposed input whose results a reshape views as ATen lays them out (contiguous):
    the rewrite's maxima and sums follow the input's layout, so they are copied into that one."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = x.transpose(0, 2)
        return F.max_pool2d(x, 2).flatten(), F.avg_pool2d(x, 2).view(-1), F.adaptive_avg_pool2d(x, 1).view(-1)


def test_poolings_of_transposed_inputs_are_laid_out_as_atens():
    x = torch.randn(7, 7, 12)
    assert pools(export_program(FlattensPools(), (x,))) == []
    compiled = pygraph.export_and_compile(FlattensPools(), (x,))
    x = torch.randn(7, 7, 12)
    assert relative_error(compiled(x), FlattensPools()(x)) <= 1e-6
