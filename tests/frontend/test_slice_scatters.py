"""Writes into slices of tensors the program computes become concatenations (frontend/slice_scatters.py);
writes into state stay for write-in-place. Against eager on the emulator."""

import torch
from gpu_marks import needs_gpu
from torch import nn

import pygraph
from pygraph.frontend import export_program
from pygraph.metrics import relative_error

aten = torch.ops.aten


class Writes(nn.Module):
    def __init__(self, forward) -> None:
        super().__init__()
        self.body = forward
        self.register_buffer("cache", torch.zeros(2, 8, 16, 9))

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return self.body(self, x, w)


def modes(m, x, w):
    """A Fourier layer's kept modes, a row set to a number, the last columns written from the input."""
    out = torch.zeros_like(x)
    out[:, :, :5, :5] = x[:, :, :5, :5] * w[:, :5]
    out[:, 3] = -1.0
    out[..., -2:] = x[..., :2].exp()
    return out + 1


def strided_result(m, x, w):
    """The written tensor returned as it is: its layout is eager's."""
    out = torch.zeros(2, 8, 16, 9).transpose(1, 2)
    out[:, 1:4] = x.transpose(1, 2)[:, :3] * 2
    return out


def cache_writes(m, x, w):
    m.cache[:, :, :5, :5] = x[:, :, :5, :5] * w[:, :5]
    m.cache[:, :, 7] = x[:, :, 0]
    return m.cache + 1


def ops(program: torch.export.ExportedProgram) -> list:
    return [n.target for n in program.graph.nodes if n.op == "call_function"]


def inputs(device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(2, 8, 16, 9, device=device), torch.randn(5, 9, device=device)


def check(model: nn.Module, device: str = "cpu") -> pygraph.CompiledModel:
    target = "emulator" if device == "cpu" else "cuda"
    compiled = pygraph.export_and_compile(model.to(device), inputs(device), target=target)
    for _ in range(2):
        x, w = inputs(device)
        got, want = compiled(x, w), model(x, w)
        assert got.stride() == want.stride()
        assert relative_error(got, want) < 1e-6
    return compiled


def test_writes_into_computed_tensors_are_concatenations_in_kernels():
    torch.manual_seed(0)
    model = Writes(modes)
    program = export_program(model, inputs())
    assert not {aten.slice_scatter.default, aten.select_scatter.default} & set(ops(program))
    assert check(model).stats()["nodes"]["library"] == 0


@needs_gpu
def test_writes_into_computed_tensors_are_concatenations_in_kernels_on_the_gpu():
    torch.manual_seed(0)
    assert check(Writes(modes), "cuda").stats()["nodes"]["library"] == 0


def test_a_write_whose_result_keeps_a_layout_of_its_own_stays():
    """Returned as it is, its strides are eager's (a concatenation's would be contiguous)."""
    torch.manual_seed(0)
    model = Writes(strided_result)
    assert aten.slice_scatter.default in ops(export_program(model, inputs()))
    check(model)


def test_writes_into_state_stay_writes_in_place():
    torch.manual_seed(0)
    model, twin = Writes(cache_writes), Writes(cache_writes)
    program = export_program(model, inputs())
    assert aten.cat.default not in ops(program)
    compiled = pygraph.export_and_compile(model, inputs(), target="emulator")
    for _ in range(2):
        x, w = inputs()
        assert relative_error(compiled(x, w), twin(x, w)) < 1e-6
        assert torch.equal(model.cache, twin.cache)
