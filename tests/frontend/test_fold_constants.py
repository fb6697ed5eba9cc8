"""Constant folding (frontend/fold_constants.py): numbers computed from compile-time constants alone are
literals in the kernels that read them, with eager's dtypes; what the model may change is not folded."""

import re

import pytest
import torch
from torch import nn

import pygraph
from pygraph.frontend import ExportError, export_program
from pygraph.frontend.fold_constants import LITERAL

aten = torch.ops.aten
HELD = torch.tensor([4.0])  # a global the model reads: the user may change it between calls


class Scaled(nn.Module):
    """DeBERTa's scale: the square root of a size, computed in `forward` from a tensor of it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt(torch.tensor(x.size(-1), dtype=torch.float) * 1)


def kernel_sources(compiled: pygraph.CompiledModel) -> str:
    return compiled.ir("plan").encode().decode("unicode_escape")


def test_a_scale_computed_from_a_size_is_a_literal_in_the_kernel() -> None:
    x = torch.randn(4, 64)
    program = export_program(Scaled(), (x,))
    targets = [n.target for n in program.graph.nodes if n.op == "call_function"]
    assert targets == [aten.div.Tensor]
    (literal,) = [n for n in program.graph.nodes if n.meta.get(LITERAL)]
    assert program.constants[literal.target].item() == 8.0

    compiled = pygraph.export_and_compile(Scaled(), (x,))
    assert "torch.prim.NumToTensor.Scalar %float8.000000e00 {" in compiled.ir("pygraph")
    assert not [a for a in compiled.plan.arguments if a.role in ("constant", "derived")]
    assert "(x0 * 0.125)" in kernel_sources(compiled)  # the division by 8, exact as a multiplication
    for _ in range(2):
        x = torch.randn(4, 64)
        assert torch.equal(compiled(x), Scaled()(x))


class Promotes(nn.Module):
    """Folded 0-d tensors of several dtypes promote as eager's 0-d tensors do, not as Python numbers."""

    def forward(self, i: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        six = torch.tensor(3.0, dtype=torch.float64) * 2  # float64: an int tensor divided is float64
        half = torch.tensor(2.5) + 0  # float32: an int tensor is compared in float32
        seven = torch.tensor(7) * 2  # int64
        return i / six, h * six, i < half, i + seven, torch.tensor(True) & (i > 0)


def test_folded_tensors_keep_eager_dtypes() -> None:
    model = Promotes()
    i, h = torch.randint(-1000, 1000, (16,)), torch.randn(16, dtype=torch.float16)
    compiled = pygraph.export_and_compile(model, (i, h))
    text = compiled.ir("torch")
    for dtype in ("f64", "f32", "si64", "i1"):
        assert re.search(rf"torch\.prim\.NumToTensor\.Scalar .* -> !torch\.vtensor<\[\],{dtype}>", text), (
            dtype
        )
    assert "derived" not in text
    for _ in range(2):
        i, h = torch.randint(-1000, 1000, (16,)), torch.randn(16, dtype=torch.float16)
        for got, ref in zip(compiled(i, h), model(i, h), strict=True):
            torch.testing.assert_close(got, ref, rtol=0, atol=0)


class Held(nn.Module):
    """Constants the model holds (an attribute, a global), a random number and a returned constant."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.tensor(16.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x / self.scale.sqrt(), x * HELD.sqrt(), x + torch.rand(()) * 0, torch.tensor(3.0) * 2


def test_what_the_model_may_change_is_not_folded() -> None:
    model, x = Held(), torch.randn(8)
    compiled = pygraph.export_and_compile(model, (x,))
    got = compiled(x)
    for a, b in zip(got, model(x), strict=True):
        torch.testing.assert_close(a, b)
    got[3].add_(1)  # a returned constant is a new tensor each call
    model.scale.fill_(4.0)
    HELD.fill_(9.0)
    try:
        for a, b in zip(compiled(x), model(x), strict=True):
            torch.testing.assert_close(a, b)
    finally:
        HELD.fill_(4.0)


class Fails(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tensor(1) // torch.tensor(0)


def test_a_constant_computation_that_fails_is_refused_as_eager_fails() -> None:
    """Export computes constants while it traces: the error is eager's, at compile time, not a value."""
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        Fails()(torch.ones(2, dtype=torch.int64))
    with pytest.raises(ExportError, match="ZeroDivisionError"):
        pygraph.export_and_compile(Fails(), (torch.ones(2, dtype=torch.int64),))
