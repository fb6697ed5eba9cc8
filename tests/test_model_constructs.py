"""Constructs met in models outside the benchmark (a sweep of small Hugging Face models), each in a
hand-written module compiled for the emulator and compared with eager."""

import torch
from torch import nn

import pygraph
from pygraph.metrics import relative_error


class MaskedRows(nn.Module):
    """Results whose size the data decides, one of them transposed."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[x > 0] * 2, x[x.sum(1) > 0].t()


def test_results_whose_size_the_data_decides():
    torch.manual_seed(0)
    model = MaskedRows()
    compiled = pygraph.export_and_compile(model, (torch.randn(6, 3),), target="emulator")
    for _ in range(3):
        x = torch.randn(6, 3)
        got, ref = compiled(x), model(x)
        assert [g.shape for g in got] == [r.shape for r in ref] and relative_error(got, ref) == 0
