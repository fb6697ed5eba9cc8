"""Vendor matrix products in out form (out-form): they write arena buffers or the call's outputs, and
match eager on the emulator; calls that cannot keep their results."""

from __future__ import annotations

import pytest
import torch
from gpu_marks import needs_gpu
from test_fusion_models import assert_matches, kernels, library_ops, nodes
from torch import nn

import pygraph
from pygraph.backend.aten_call import AtenCall, resolve
from pygraph.ir.plan import Operand
from pygraph.passes.out_form import OUT_FORMS


@pytest.mark.parametrize("functional", sorted(OUT_FORMS))
def test_an_out_form_is_the_functional_schema_and_out(functional: str) -> None:
    """The pass appends the written buffer to the functional call's arguments: ATen's schemas agree."""
    plain, out = (resolve(name)._schema.arguments for name in (functional, OUT_FORMS[functional]))
    assert [a.name for a in out] == [a.name for a in plain] + ["out"]
    assert out[-1].kwarg_only and out[-1].alias_info.is_write


class Linears(nn.Module):
    """Linear layers on inputs of 2, 3 and 4 dims, with and without a bias, and a batched product with
    a bias (baddbmm)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(24, 40), nn.Linear(40, 24, bias=False)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = torch.relu(self.a(x))  # [2, 5, 3, 40]: rows merge into a [30, 40] matrix
        y = self.b(h[0])  # [5, 3, 24], no bias
        scores = torch.baddbmm(c, y, y.transpose(1, 2))
        return y[:, 0] + 1, scores.softmax(-1), self.a(x[0, 0])  # the last: a [3, 24] input


def test_products_write_planned_buffers_and_match_eager() -> None:
    torch.manual_seed(0)
    model, x, c = Linears().eval(), torch.randn(2, 5, 3, 24), torch.randn(5, 3, 3)
    compiled = pygraph.export_and_compile(model, (x, c))
    products = [n for n in nodes(compiled) if n.kind == "library"]
    assert [n.op for n in products] == ["aten.addmm.out", "aten.mm.out", "aten.baddbmm.out", "aten.addmm.out"]
    assert all(not n.results and len(n.writes) == 1 for n in products)
    written = {compiled.plan.buffers[compiled.plan.root(n.writes[0]).id].kind for n in products}
    assert written == {"alloc"}  # arena buffers: plan-memory shares their bytes with the kernels'
    for _ in range(2):
        x, c = torch.randn(2, 5, 3, 24), torch.randn(5, 3, 3)
        for got, ref in zip(compiled(x, c), model(x, c), strict=True):
            assert_matches(got, ref)


class Logits(nn.Module):
    """A large product the call returns as it is: parameter-indirection has the call write the output
    ("patch", cheaper than copying 4 MB), so out-form makes the product write the fresh tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(32, 2048)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(x))


def test_a_returned_product_writes_the_fresh_output() -> None:
    torch.manual_seed(0)
    model = Logits().eval()
    compiled = pygraph.export_and_compile(model, (torch.randn(512, 32),))
    (product,) = [n for n in nodes(compiled) if n.kind == "library"]
    assert product.op == "aten.addmm.out" and compiled.plan.outputs[0].io == "patch"
    assert compiled.plan.buffers[compiled.plan.root(product.writes[0]).id].kind == "output"
    first_x = torch.randn(512, 32)
    first = compiled(first_x)
    second = compiled(torch.randn(512, 32))
    assert first.data_ptr() != second.data_ptr()
    assert_matches(first, model(first_x))  # a later call left the earlier result alone


class Strided(nn.Module):
    """A linear of a transposed input: its rows merge into no matrix, so the call keeps its result."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x.transpose(0, 1)) * 2


def test_a_linear_whose_rows_merge_into_no_matrix_keeps_its_result() -> None:
    torch.manual_seed(0)
    model, x = Strided().eval(), torch.randn(3, 5, 4)
    compiled = pygraph.export_and_compile(model, (x,))
    assert library_ops(compiled) == ["aten.linear.default"]
    assert_matches(compiled(x), model(x))


class WeightVectors(nn.Module):
    """`linear` with a weight vector [K]: a matrix-vector product that drops the last dim, as D-FINE's
    distribution integral does; no matrix product writes its result as a matrix."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(9))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.nn.functional.linear(x, self.w) * 2, torch.nn.functional.linear(x[0], self.w)


def test_a_linear_of_a_weight_vector_keeps_its_result_and_matches_eager() -> None:
    torch.manual_seed(0)
    model = WeightVectors().eval()
    compiled = pygraph.export_and_compile(model, (torch.randn(4, 20, 9),))
    assert "aten.linear.default" in library_ops(compiled)
    for _ in range(2):
        x = torch.randn(4, 20, 9)
        for got, ref in zip(compiled(x), model(x), strict=True):
            assert_matches(got, ref)


class Heads(nn.Module):
    """Attention with a relative bias (no attention kernel: two bmm and a softmax kernel), whose context
    returns to [B, S, H * D] through `permute(0, 2, 1, 3).contiguous()`, as DeBERTa's and XLNet's do."""

    def __init__(self, heads: int = 4, dim: int = 8) -> None:
        super().__init__()
        self.heads, self.dim = heads, dim
        self.qkv, self.out = nn.Linear(heads * dim, 3 * heads * dim), nn.Linear(heads * dim, heads * dim)

    def forward(self, x: torch.Tensor, rel: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        qkv = self.qkv(x).view(b, s, 3, self.heads, self.dim).permute(2, 0, 3, 1, 4)
        q, k, v = (t.reshape(b * self.heads, s, self.dim) for t in qkv)
        p = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / 3.0 + rel, -1)
        context = torch.bmm(p, v).view(b, self.heads, s, self.dim).permute(0, 2, 1, 3).contiguous()
        return self.out(context.view(b, s, self.heads * self.dim))


@pytest.mark.parametrize("batch", [1, 2])
def test_the_context_product_writes_its_copy_of_the_heads(batch: int) -> None:
    """One sequence: the second bmm writes the [B, S, H, D] buffer through strides (D, H * D, 1) and the
    copy kernel goes; two: heads of different sequences share no batch stride, the copy stays."""
    torch.manual_seed(0)
    model = Heads().eval()
    shapes = [(batch, 16, 32), (batch * 4, 16, 16)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, tuple(torch.randn(*s) for s in shapes))
    assert bool([k for k in kernels(compiled) if "clone" in k]) == (batch == 2)
    context = [n for n in nodes(compiled) if n.op == "aten.bmm.out"][1]
    written = compiled.plan.buffers[context.writes[0]].layout
    assert written.strides == ((8, 32, 1) if batch == 1 else (128, 8, 1))
    with torch.no_grad():
        for _ in range(2):
            inputs = [torch.randn(*s) for s in shapes]
            assert_matches(compiled(*inputs), model(*inputs))


def test_an_out_form_that_would_resize_its_buffer_is_an_error() -> None:
    """A plan whose buffer has the wrong shape: ATen would move it to storage of its own; refused."""
    call = AtenCall("aten.mm.out", [Operand(0), Operand(1), Operand(2)], torch.device("cpu"))
    a, out = torch.randn(4, 4), torch.empty(3, 4)
    with pytest.raises(RuntimeError, match="resized the buffer it was to write"):
        call([a, a, out])
    out = torch.empty(4, 4)
    assert call([a, a, out])[0] is out
    torch.testing.assert_close(out, a @ a)


@pytest.mark.gpu
@needs_gpu
def test_gpu_products_write_planned_buffers(no_tf32) -> None:
    """Recorded into graphs: the products write the arena and the patched output; 8 calls queued without
    synchronising each keep their result."""
    torch.manual_seed(0)
    model, logits = Linears().eval().cuda(), Logits().eval().cuda()
    x, c = torch.randn(2, 5, 3, 24, device="cuda"), torch.randn(5, 3, 3, device="cuda")
    compiled = pygraph.export_and_compile(model, (x, c))
    head = pygraph.export_and_compile(logits, (torch.randn(512, 32, device="cuda"),))
    assert head.plan.outputs[0].io == "patch"
    inputs = [torch.randn(512, 32, device="cuda") for _ in range(8)]
    results = [head(h) for h in inputs]
    for h, got in zip(inputs, results, strict=True):
        assert_matches(got, logits(h))
    for _ in range(3):
        x, c = torch.randn(2, 5, 3, 24, device="cuda"), torch.randn(5, 3, 3, device="cuda")
        for got, ref in zip(compiled(x, c), model(x, c), strict=True):
            assert_matches(got, ref)


@pytest.mark.gpu
@needs_gpu
def test_gpu_context_product_writes_its_copy_of_the_heads(no_tf32) -> None:
    """cuBLAS writes the heads at strides (D, H * D, 1) directly; calls queued back to back match eager."""
    torch.manual_seed(0)
    model = Heads().eval().cuda()
    calls = [(torch.randn(1, 16, 32, device="cuda"), torch.randn(4, 16, 16, device="cuda")) for _ in range(4)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, calls[0])
        assert not [k for k in kernels(compiled) if "clone" in k]
        results = [compiled(*c) for c in calls]
        for c, got in zip(calls, results, strict=True):
            assert_matches(got, model(*c))


class HandAttention(nn.Module):
    """Attention written out with `@` on [B, H, L, E] heads, as many models do without
    `scaled_dot_product_attention`: both products are `bmm` in out form on the heads as one batch."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(32, 96), nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, 4, 8).permute(2, 0, 3, 1, 4).contiguous().unbind(0)
        scores = (q @ k.transpose(-1, -2)) * 8**-0.5
        context = scores.softmax(-1) @ v
        return self.out(context.transpose(1, 2).reshape(b, n, 32))


def hand_attention_inputs(device: str = "cpu") -> tuple[torch.Tensor]:
    return (torch.randn(3, 10, 32, device=device),)


def test_hand_written_attention_products_are_batched_out_forms() -> None:
    torch.manual_seed(0)
    model = HandAttention().eval()
    compiled = pygraph.export_and_compile(model, hand_attention_inputs())
    assert library_ops(compiled).count("aten.bmm.out") == 2
    assert "aten.matmul.default" not in library_ops(compiled)
    for _ in range(2):
        x = hand_attention_inputs()
        assert_matches(compiled(*x), model(*x))


@pytest.mark.gpu
@needs_gpu
def test_gpu_hand_written_attention_matches_eager(no_tf32) -> None:
    torch.manual_seed(0)
    model = HandAttention().eval().cuda()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, hand_attention_inputs("cuda"))
        assert library_ops(compiled).count("aten.bmm.out") == 2
        calls = [hand_attention_inputs("cuda") for _ in range(4)]
        results = [compiled(*x) for x in calls]
        for x, got in zip(calls, results, strict=True):
            assert_matches(got, model(*x))
