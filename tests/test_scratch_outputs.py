"""Outputs as scratch (plan-memory's `outputs` option): buffers that die before an output is written live in
its bytes, as views of it that move with each call's fresh output."""

import pytest
import torch
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.metrics import relative_error

ROWS, WIDTH = 256, 4096  # products long enough on the GPU that patching their nodes costs next to no time


class Chain(nn.Module):
    """Four products `x = tanh(x @ w)`: each product's result dies before the output is written."""

    def __init__(self) -> None:
        super().__init__()
        self.weights = nn.ParameterList(
            nn.Parameter(torch.randn(WIDTH, WIDTH) / WIDTH**0.5) for _ in range(4)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for w in self.weights:
            x = torch.tanh(x @ w)
        return x


def scratch_views(compiled: pygraph.CompiledModel) -> list[int]:
    """Buffers of the plan that are views of an output and touched before the output is first written."""
    plan = compiled.plan
    first: dict[int, int] = {}
    for position, node in enumerate(n for step in plan.steps for n in step.nodes):
        for b in (*node.args, *node.reads, *node.writes):
            first.setdefault(b, position)
    outputs = {plan.buffers[o.buffer].root for o in plan.outputs}
    written = min(first.get(b.id, 1 << 30) for b in plan.buffers if b.id in outputs)
    return [
        b.id
        for b in plan.buffers
        if b.kind == "view" and b.root in outputs and first.get(b.id, 1 << 30) < written
    ]


def check_calls(compiled: pygraph.CompiledModel, model: nn.Module, device: str) -> None:
    """Several calls, each result held while the next runs (so the outputs' addresses differ), each
    against eager."""
    held = []
    for seed in range(4):
        torch.manual_seed(seed)
        x = torch.randn(ROWS, WIDTH, device=device)
        held.append((compiled(x), model(x)))
    for got, want in held:
        assert relative_error(got, want) <= 1e-4


@torch.no_grad()
def test_intermediates_live_in_the_output_on_the_emulator() -> None:
    torch.manual_seed(0)
    model = Chain().eval()
    x = torch.randn(ROWS, WIDTH)
    compiled = pygraph.export_and_compile(model, (x,), target="emulator")
    assert scratch_views(compiled), compiled.ir("plan")
    assert compiled.plan.arena_bytes <= ROWS * WIDTH * 4  # one product beside the output, not two
    check_calls(compiled, model, "cpu")


@pytest.mark.gpu
@needs_gpu
@torch.no_grad()
def test_intermediates_live_in_each_calls_fresh_output_on_the_gpu() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = Chain().cuda().eval()
    x = torch.randn(ROWS, WIDTH, device="cuda")
    compiled = pygraph.export_and_compile(model, (x,))
    assert scratch_views(compiled), compiled.ir("plan")
    assert compiled.plan.arena_bytes <= ROWS * WIDTH * 4
    check_calls(compiled, model, "cuda")
