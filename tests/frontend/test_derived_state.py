"""Derived state (frontend/derived_state.py), padded matmul outputs (frontend/pad_matmuls.py) and the
layouts of results after rewrites; GPU layouts forced on the CPU with PYGRAPH_GPU_LAYOUTS=on."""

import pytest
import torch
from torch import nn

import pygraph
from pygraph.frontend import export_program, hoist_derived_state
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

aten = torch.ops.aten


def targets(program: torch.export.ExportedProgram) -> list[object]:
    return [n.target for n in program.graph.nodes if n.op == "call_function"]


class Mixed(nn.Module):
    """One computation on weights alone worth keeping (`w.t().contiguous()`), and ones that must stay
    per call: random numbers, a buffer the model writes, a result larger than its weight, an output."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 6))
        self.scale = nn.Parameter(torch.randn(6))
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        self.calls.add_(1)
        y = x @ self.w.t().contiguous()  # derived: a copy of w, transposed
        noise = torch.rand(6) * self.scale  # random: per call
        counted = self.calls * self.scale  # reads a written buffer: per call
        spread = self.scale.expand(4, 6) + 1  # 24 elements from 6: per call
        return y, noise, counted, spread, self.scale * 2  # the last is an output: per call


def test_only_computations_on_unwritten_state_are_hoisted():
    program = export_program(Mixed(), (torch.randn(3, 6),))
    derived = hoist_derived_state(program)
    assert derived is not None and len(derived.names) == 1
    assert [role for role, _ in derived.sources] == ["parameter"]
    assert aten.clone.default not in targets(program)
    assert {aten.rand.default, aten.add.Tensor} <= set(targets(program))
    assert targets(program).count(aten.mul.Tensor) == 3


def test_a_program_on_inputs_alone_has_no_derived_state():
    class Plain(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.exp() + 1

    assert hoist_derived_state(export_program(Plain(), (torch.randn(3),))) is None


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c2(torch.relu(self.c1(x)))  # NCHW for the caller, as eager gives it


def check(compiled: pygraph.CompiledModel, model: nn.Module, shape: tuple[int, ...]) -> None:
    x = torch.randn(*shape)
    got, want = compiled(x), model(x)
    assert got.stride() == want.stride()
    assert relative_error(got, want) <= 1e-4


def test_converted_weights_are_derived_once_and_follow_the_model():
    torch.manual_seed(0)
    model = ConvNet().eval()
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(2, 3, 8, 8),))
        derived = [a for a in compiled.plan.arguments if a.role == "derived"]
        assert len(derived) == 2  # both weights, in NHWC
        check(compiled, model, (2, 3, 8, 8))
        model.c1.weight.mul_(-2)  # in place
        check(compiled, model, (2, 3, 8, 8))
        model.load_state_dict({k: torch.randn_like(v) for k, v in model.state_dict().items()})
        check(compiled, model, (2, 3, 8, 8))
        model.c2.weight = nn.Parameter(torch.randn(4, 8, 3, 3))  # replaced
        check(compiled, model, (2, 3, 8, 8))


class Head(nn.Module):
    """A linear layer and a matmul with 1001 output columns (4004 bytes a row: unaligned), one result
    returned as it is and one read by a generated kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(32, 1001)
        self.w = nn.Parameter(torch.randn(32, 1001) / 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.linear(x), torch.softmax(x @ self.w, dim=-1)


def test_unaligned_matmul_outputs_are_padded_and_results_keep_eager_layouts():
    torch.manual_seed(0)
    model = Head()
    x = torch.randn(1100, 32)  # outputs of 1.1M elements: large enough to pad
    with knobs.scope(gpu_layouts="on"):
        program = export_program(model, (x,))
    assert targets(program).count(aten.constant_pad_nd.default) == 3  # the weight, its bias and w
    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,))
        shapes = sorted(
            tuple(compiled.plan.buffers[a.buffer].layout.shape)
            for a in compiled.plan.arguments
            if a.role == "derived"
        )
        assert shapes == [(32, 1004), (1004,), (1004, 32)]
        for _ in range(2):
            x = torch.randn(1100, 32)
            for got, want in zip(compiled(x), model(x), strict=True):
                assert got.stride() == want.stride() == (1001, 1)
                assert relative_error(got, want) <= 1e-4


def test_small_or_aligned_matmuls_are_left_alone():
    class Small(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.odd, self.even = nn.Linear(32, 1001), nn.Linear(32, 1000)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.odd(x[:8]), self.even(x)

    with knobs.scope(gpu_layouts="on"):
        program = export_program(Small(), (torch.randn(1100, 32),))
    assert aten.constant_pad_nd.default not in targets(program)


@pytest.mark.parametrize("setting", ["auto", "off"])
def test_cpu_programs_keep_their_layouts_unless_forced(setting):
    with knobs.scope(gpu_layouts=setting):
        program = export_program(Head(), (torch.randn(1100, 32),))
    assert aten.constant_pad_nd.default not in targets(program)
