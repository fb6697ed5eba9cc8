"""row-phases (passes/row_phases.py): which products are written in phases of rows, that the phases
cover every output element once, and (on the GPU) that they write eager's layout where the caller's
fresh output is, each call. Its FileCheck test is tests/filecheck/passes/row-phases.mlir; a model read
by kernels and vendor calls is in tests/frontend/test_derived_state.py."""

import copy

import pytest
import torch
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.metrics import relative_error
from pygraph.passes.row_phases import ALIGNMENT_BYTES, phase_count, phases_pay, runs


@pytest.mark.parametrize("itemsize", [4, 2])
@pytest.mark.parametrize("offset", [0, 1, 2, 3])
@pytest.mark.parametrize("width", [1, 2, 3, 5, 6, 7, 13, 1001, 1002])
def test_the_runs_cover_every_element_once_and_the_middles_are_aligned(width, offset, itemsize):
    rows, per_row = 11, ALIGNMENT_BYTES // itemsize
    p = phase_count(width, itemsize)
    assert (p * width * itemsize) % ALIGNMENT_BYTES == 0
    written = [[0] * width for _ in range(rows)]
    for j, a, b in runs(rows, width, offset, width, itemsize):
        for r in range(j, rows, p):
            for c in range(a, b):
                written[r][c] += 1
            if b - a >= per_row:  # a middle: starts aligned in every row of its phase, whole vectors
                assert (offset + r * width + a) % per_row == 0 and (b - a) % per_row == 0
    assert all(count == 1 for row in written for count in row)


def test_phases_pay_where_the_probe_measured_them_faster():
    """bench/results/probe-row-phases-h200.log (TF32, K = 768): faster than the prefix and its copy at
    [2048, 50257], [2048, 30522] and [512, 30522]; slower at [512, 50257] and [128, 30522]."""
    assert phases_pay(2048, 50257, 768, 4) and phases_pay(2048, 30522, 768, 4)
    assert phases_pay(512, 30522, 768, 4)
    assert not phases_pay(512, 50257, 768, 4) and not phases_pay(128, 30522, 768, 4)
    assert not phases_pay(4096, 50260, 768, 4)  # aligned rows: one phase
    assert not phases_pay(1024, 3, 768, 4)  # small: the unaligned kernel takes 7 us, the phases 35


class LanguageHead(nn.Module):
    def __init__(self, hidden: int, words: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, words, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(x))


@pytest.mark.gpu
@needs_gpu
def test_phases_write_each_calls_fresh_output_on_the_gpu(tf32):
    """2048 rows of 4001 words: ten cuBLAS products write views of the output, whose address (inside the
    fresh tensor, not its start) the runtime patches each call; calls queued back to back, against
    float64."""
    torch.manual_seed(0)
    model = LanguageHead(256, 4001).cuda().eval()
    calls = [torch.randn(4, 512, 256, device="cuda") for _ in range(3)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (calls[0],), target="cuda")
        assert [n.op for s in compiled.plan.steps for n in s.nodes].count("aten.mm.out") == 10
        results = [compiled(x) for x in calls]
        torch.cuda.synchronize()
        assert compiled.stats()["patches_staged"] == 0
        reference = copy.deepcopy(model).double()
        for x, got in zip(calls, results, strict=True):
            assert got.shape == (4, 512, 4001) and got.is_contiguous()
            assert relative_error(got, reference(x.double()).float()) <= 5e-3
