"""Common subexpressions (frontend/common_subexpressions.py): an op repeated on the same operands is
computed once; what would change a result (types of numbers, signs of zero, randomness, aliasing of
returned tensors) is not merged."""

import torch
from torch import nn

import pygraph
from pygraph.frontend import export_program
from pygraph.metrics import relative_error

aten = torch.ops.aten


def targets(program: torch.export.ExportedProgram) -> list:
    return [n.target for n in program.graph.nodes if n.op == "call_function"]


class Repeats(nn.Module):
    """The same rotary-style tables computed in two "layers", and numbers that only look alike."""

    def forward(self, x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
        first = x * torch.cos(angles) + x.flip(-1) * torch.sin(angles)
        second = first * torch.cos(angles) + first.flip(-1) * torch.sin(angles)
        return second + (x * 0.0) * (x * -0.0) + (x > 1) + (x > 1.0)


@torch.no_grad()
def test_repeated_ops_are_computed_once_and_the_rest_kept() -> None:
    x, angles = torch.randn(4, 8), torch.randn(4, 8)
    program = export_program(Repeats(), (x, angles))
    found = targets(program)
    assert found.count(aten.cos.default) == 1 and found.count(aten.sin.default) == 1
    assert found.count(aten.mul.Tensor) == 7  # x * 0.0 and x * -0.0 stay two: their zeros differ in sign
    assert found.count(aten.gt.Scalar) == 2  # x > 1 and x > 1.0: an int and a float argument
    compiled = pygraph.export_and_compile(Repeats(), (x, angles))
    for _ in range(2):
        x, angles = torch.randn(4, 8), torch.randn(4, 8)
        assert relative_error(compiled(x, angles), Repeats()(x, angles)) < 1e-6


class TwoResults(nn.Module):
    """Two equal results returned: eager returns two tensors, so must the compiled model."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (x + 1).view(-1), (x + 1).view(-1), torch.rand_like(x), torch.rand_like(x)


@torch.no_grad()
def test_returned_results_and_random_draws_stay_apart() -> None:
    x = torch.randn(3, 5)
    program = export_program(TwoResults(), (x,))
    assert targets(program).count(aten.add.Tensor) == 2
    compiled = pygraph.export_and_compile(TwoResults(), (x,))
    first, second, noise, other = compiled(x)
    assert torch.equal(first, x.view(-1) + 1) and torch.equal(second, first)
    assert first.data_ptr() != second.data_ptr()
    second.zero_()
    assert torch.equal(first, x.view(-1) + 1)
    assert not torch.equal(noise, other)


class CausalLayers(nn.Module):
    """Three causal attentions of one size, decomposed (as without TF32 from 64K scores on the GPU): each
    masks its scores with the same lower triangle, held once."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.ModuleList(nn.Linear(32, 96) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for proj in self.proj:
            q, k, v = proj(x).view(2, 16, 6, 16).transpose(1, 2).chunk(3, dim=1)
            x = x + nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(
                1, 2
            ).reshape(2, 16, 32)
        return x


@torch.no_grad()
def test_causal_attentions_share_one_mask(monkeypatch) -> None:
    monkeypatch.setenv("PYGRAPH_GPU_LAYOUTS", "on")
    monkeypatch.setenv("PYGRAPH_ATTENTION", "decompose")
    torch.manual_seed(0)
    model, x = CausalLayers(), torch.randn(2, 16, 32)
    program = export_program(model, (x,))
    assert list(program.constants) == ["causal_mask_16x16_cpu"]
    assert targets(program).count(aten.logical_not.default) == 1
    assert targets(program).count(aten.masked_fill.Scalar) == 6  # per layer: the scores, hidden rows
    compiled = pygraph.export_and_compile(model, (x,))
    for _ in range(2):
        x = torch.randn(2, 16, 32)
        assert relative_error(compiled(x), model(x)) < 1e-5
