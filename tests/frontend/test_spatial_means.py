"""Means over the pixels of channels-last tensors summed in two steps (frontend/spatial_means.py), forced on
the CPU with PYGRAPH_GPU_LAYOUTS=on."""

import pytest
import torch
from torch import nn

import pygraph
from pygraph.frontend import export_program
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

aten = torch.ops.aten


class Excite(nn.Module):
    """A depthwise convolution, batch norm and hardswish, then squeeze-excitation: the mean over the pixels
    (kept as [N, C, 1, 1] or dropped to [N, C]) scales the channels."""

    def __init__(self, channels: int, keepdim: bool = True) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.bn = nn.BatchNorm2d(channels)
        self.fc = nn.Linear(channels, channels)
        self.keepdim = keepdim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.hardswish(self.bn(self.conv(x)))
        m = y.mean((2, 3), keepdim=self.keepdim)
        scale = torch.sigmoid(self.fc(m.flatten(1)))
        return y * scale[:, :, None, None]


def model(channels: int, keepdim: bool = True) -> Excite:
    torch.manual_seed(0)
    net = Excite(channels, keepdim).eval()
    net.bn.running_mean.uniform_(-1, 1)
    net.bn.running_var.uniform_(0.5, 2)
    return net


def targets(program: torch.export.ExportedProgram) -> list[object]:
    return [n.target for n in program.graph.nodes if n.target in (aten.mean.dim, aten.sum.dim_IntList)]


@pytest.mark.parametrize("keepdim", [True, False])
def test_a_mean_over_few_channels_pixels_is_two_sums_and_matches_eager(keepdim):
    net, x = model(16, keepdim), torch.randn(2, 16, 40, 36)
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        program = export_program(net, (x,))
        assert targets(program) == [aten.sum.dim_IntList, aten.sum.dim_IntList]
        compiled = pygraph.export_and_compile(net, (x,))
        for _ in range(2):
            x = torch.randn(2, 16, 40, 36)
            assert relative_error(compiled(x), net(x)) <= 1e-5


def test_many_channels_few_pixels_and_nchw_tensors_keep_one_mean():
    with knobs.scope(gpu_layouts="on"):
        assert targets(export_program(model(1024), (torch.randn(2, 1024, 16, 16),))) == [aten.mean.dim]
        assert targets(export_program(model(16), (torch.randn(2, 16, 7, 7),))) == [aten.mean.dim]
    assert targets(export_program(model(16), (torch.randn(2, 16, 40, 36),))) == [aten.mean.dim]  # CPU: NCHW
