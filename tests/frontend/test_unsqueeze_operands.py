"""Unit dims added after pointwise ops move onto their operands (frontend/unsqueeze_operands.py): which move,
which stay, and the values against eager."""

import pytest
import torch
from gpu_marks import needs_gpu
from test_model_constructs import Fn

import pygraph
from pygraph.frontend import export_program
from pygraph.frontend.unsqueeze_operands import unsqueeze_operands
from pygraph.metrics import relative_error

CASES = {  # (function of x [4, 6] and y [4, 6], how many unsqueezes sit after a pointwise op in the end)
    "a chain to the inputs": (lambda x, y: ((x * y).tanh() + 1)[:, None] * x[:, None], 0),
    "a value read twice stays": (lambda x, y: (lambda z: z[:, None, :] + z.sum())(x * y), 1),
    "broadcast operands stay": (lambda x, y: (x * y[:1])[..., None] * 2, 1),
    "an arange's own shape stays": (lambda x, y: x[None] + (torch.arange(6) + 3)[None, None], 1),
    "a cast moves": (lambda x, y: (x > 0).float()[:, :, None] * y[:, :, None], 0),
}


def after_pointwise(program: torch.export.ExportedProgram) -> int:
    return sum(
        n.target is torch.ops.aten.unsqueeze.default
        and n.args[0].op == "call_function"
        and not n.args[0].target.is_view
        for n in program.graph.nodes
    )


@pytest.mark.parametrize("name", CASES)
def test_unit_dims_move_onto_operands_of_the_same_shape(name: str) -> None:
    fn, left = CASES[name]
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    program = export_program(Fn(fn), (x, y))
    assert after_pointwise(program) == left
    assert unsqueeze_operands(program) == 0  # (nothing left to move: the rewrite ran in export_program)
    compiled = pygraph.export_and_compile(Fn(fn), (x, y), target="emulator")
    for _ in range(2):
        x, y = torch.randn(4, 6), torch.randn(4, 6)
        assert relative_error(compiled(x, y), fn(x, y)) < 1e-6


def _host_number_operand(device: str) -> None:
    """A 0-d tensor compared with a Python number (a 0-d host tensor once lifted), then unsqueezed: the
    comparison stays where it is (GPU fuzz seed 68810: moved, the number was a host tensor of one row)."""
    fn = Fn(lambda t, y: torch.where(t > y, t, t * y).unsqueeze(-1))
    t = torch.randn((), device=device)
    compiled = pygraph.export_and_compile(fn, (t, 0.25), target="cuda" if device == "cuda" else "emulator")
    for y in (-0.5, 0.75):
        t = torch.randn((), device=device)
        assert torch.equal(compiled(t, y), fn(t, y))


def test_a_host_number_operand_keeps_its_place() -> None:
    _host_number_operand("cpu")


@pytest.mark.gpu
@needs_gpu
def test_gpu_a_host_number_operand_keeps_its_place(kernel_cache) -> None:
    _host_number_operand("cuda")
