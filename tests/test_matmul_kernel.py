"""The generated matmul with its epilogue (passes/matmul_kernel.py): products (linear, mm, addmm, matmul) and
their pointwise consumers computed by the emulator under Triton's interpreter against eager, on odd sizes
(a tail in every block), strided rows, transposed weights, reshapes between product and epilogue (GPT-2's
`view(addmm(...))`), broadcast epilogue inputs and two outputs; what it should not take stays a vendor call;
the routing follows PYGRAPH_MATMUL and torch's TF32 setting. The same models run compiled for CUDA on the
GPU machine, in both precisions."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import pytest
import torch
import torch.utils._pytree as pytree
from gpu_marks import needs_gpu
from test_attention_kernel import ops
from test_codegen_triton import compile_for_h100
from torch import nn

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error
from pygraph.passes.matmul_kernel import matmul_blocks

pytestmark = pytest.mark.usefixtures("kernel_cache")

_PRODUCTS = ("aten.addmm.out", "aten.mm.out", "aten.linear.default", "aten.matmul.default")


@contextlib.contextmanager
def tf32(allowed: bool) -> Iterator[None]:
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


class Block(nn.Module):
    """A transformer MLP on [2, 19, 40]: linear and GELU, linear and the residual add (38 rows, K of 40
    and 50: tails along every dim)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.proj = nn.Linear(40, 50), nn.Linear(50, 40)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.proj(nn.functional.gelu(self.fc(x)))


class Conv1D(nn.Module):
    """GPT-2's linear layer: addmm of the flattened rows by a [K, N] weight, viewed back."""

    def __init__(self, k: int, n: int) -> None:
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.randn(k, n) / k**0.5), nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return y.view(*x.shape[:-1], self.weight.shape[1])


class Gpt2Mlp(nn.Module):
    """GPT-2's MLP on [1, 7, 48]: Conv1D, tanh GELU, Conv1D, residual."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.proj = Conv1D(48, 192), Conv1D(192, 48)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.proj(nn.functional.gelu(self.fc(x), approximate="tanh"))


class Strided(nn.Module):
    """Rows read through a transpose ([40, 3, 24] -> [3, 40, 24]: leading dims that do not merge), an
    epilogue reading a per-column scale and a per-row shift (broadcast), and two results of it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.scale = nn.Linear(24, 30), nn.Parameter(torch.randn(30))

    def forward(self, x: torch.Tensor, shift: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.lin(x.transpose(0, 1)) * self.scale + shift
        return torch.relu(h), torch.sigmoid(h)


class Products(nn.Module):
    """matmul of [2, 5, 33] rows by a [33, 70] weight, then mm by a transposed [N, K] weight (strides
    (1, K)) with a K of 200 (a tail in the last step), each with an epilogue."""

    def __init__(self) -> None:
        super().__init__()
        self.w1, self.w2 = nn.Parameter(torch.randn(33, 200) / 6), nn.Parameter(torch.randn(20, 200) / 14)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(torch.matmul(x, self.w1))
        return torch.tanh(h.view(10, 200) @ self.w2.t())


MODELS = {  # model, input shapes, generated products
    "block": (Block, [(2, 19, 40)], 2),
    "gpt2 mlp": (Gpt2Mlp, [(1, 7, 48)], 2),
    "strided": (Strided, [(40, 3, 24), (3, 40, 1)], 1),
    "products": (Products, [(2, 5, 33)], 2),
}


def compile_model(model: nn.Module, *inputs: torch.Tensor, target: str = "emulator") -> pygraph.CompiledModel:
    with torch.no_grad():
        return pygraph.export_and_compile(model, inputs, target=target)


def generated_products(compiled: pygraph.CompiledModel) -> int:
    return sum("tl.dot(" in kernel.source for kernel in compiled.plan.kernels.values())


@pytest.mark.parametrize("name", MODELS)
def test_products_with_epilogues_match_eager(name: str) -> None:
    torch.manual_seed(0)
    make, shapes, products = MODELS[name]
    model = make().eval()
    with knobs.scope(matmul="all"):
        compiled = compile_model(model, *(torch.randn(*s) for s in shapes))
    assert generated_products(compiled) == products
    assert not [op for op in ops(compiled) if op in _PRODUCTS], ops(compiled)
    with torch.no_grad():
        for _ in range(2):
            inputs = [torch.randn(*s) for s in shapes]
            assert relative_error(compiled(*inputs), model(*inputs)) <= 1e-5


class Unfused(nn.Module):
    """Products the kernel should leave to the vendor: one before layer norm (a reduction: its kernel would
    remain), one whose result is returned as well as used, one in float64 (no template)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = nn.functional.layer_norm(self.a(x), (16,))
        y = self.b(h)
        return y, torch.relu(y), x.double() @ x.double().t()


def test_products_without_a_pointwise_consumer_stay_vendor_calls() -> None:
    torch.manual_seed(0)
    model, x = Unfused().eval(), torch.randn(6, 16)
    with knobs.scope(matmul="all"):
        compiled = compile_model(model, x)
    assert generated_products(compiled) == 0
    assert [op for op in ops(compiled) if op in _PRODUCTS] == ["aten.addmm.out"] * 2 + ["aten.mm.out"]
    with torch.no_grad():
        assert relative_error(compiled(x), model(x)) <= 1e-5


class Heads(nn.Module):
    """Products no pointwise op reads, returned as they are: a linear layer with 1001 outputs (4004-byte
    rows, which cuBLAS writes slowly) and one with 1000, on few rows; the same head on many rows."""

    def __init__(self) -> None:
        super().__init__()
        self.odd, self.even = nn.Linear(24, 1001), nn.Linear(24, 1000)

    def forward(self, x: torch.Tensor, many: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.odd(x), self.even(x), self.odd(many)


def test_few_rows_of_unaligned_width_are_a_product_kernel_of_their_own() -> None:
    """Only the odd head on few rows (computes_alone): no epilogue, the rows in one block per column block."""
    torch.manual_seed(0)
    model, shapes = Heads().eval(), [(1, 7, 24), (40, 24)]
    with knobs.scope(matmul="all"):
        compiled = compile_model(model, *(torch.randn(*s) for s in shapes))
    kernels = [k.source for k in compiled.plan.kernels.values() if "tl.dot(" in k.source]
    assert len(kernels) == 1 and "[7, 24] x [24, 1001] plus a bias, no epilogue" in kernels[0], kernels
    assert [op for op in ops(compiled) if op in _PRODUCTS] == [*_PRODUCTS[:1] * 2]
    with torch.no_grad():
        for _ in range(2):
            inputs = [torch.randn(*s) for s in shapes]
            assert relative_error(compiled(*inputs), model(*inputs)) <= 1e-5
    with tf32(True):  # routed by default too (few rows, K <= MAX_K)
        assert generated_products(compile_model(model, *(torch.randn(*s) for s in shapes))) == 1


def test_blocks_cover_few_rows_of_a_wide_product_once() -> None:
    """GPT-2's logits ([32, 768] by 50257 columns): one block of 32 rows per 64 columns, so every program
    reads its slice of the weight once; narrower products keep blocks of 16 rows (more programs)."""
    assert matmul_blocks(32, 50257, 768) == (32, 64, 32)
    assert matmul_blocks(32, 3072, 768) == (16, 64, 64)
    assert matmul_blocks(197, 3072, 192) == (128, 64, 32)


def test_routing_follows_tf32_and_the_knob() -> None:
    """auto: generated only where TF32 dots are allowed at compile time; all: in IEEE float32 too; off:
    never; anything else is refused by name."""
    torch.manual_seed(0)
    model, x = Block().eval(), torch.randn(2, 19, 40)
    with tf32(False):
        assert generated_products(compile_model(model, x)) == 0
        with knobs.scope(matmul="all"):
            assert 'matmul_kernel = "ieee"' in compile_model(model, x).ir("pygraph")
    with tf32(True):
        compiled = compile_model(model, x)
        assert generated_products(compiled) == 2
        assert 'matmul_kernel = "tf32"' in compiled.ir("pygraph")
        with knobs.scope(matmul="off"):
            assert generated_products(compile_model(model, x)) == 0
    with knobs.scope(matmul="sometimes"), pytest.raises(ValueError, match="PYGRAPH_MATMUL"):
        compile_model(model, x)


def test_matmul_kernels_compile_for_sm90() -> None:
    torch.manual_seed(0)
    with tf32(True):
        compiled = compile_model(Products().eval(), torch.randn(2, 5, 33))
    kernels = [k for k in compiled.plan.kernels.values() if "tl.dot(" in k.source]
    assert len(kernels) == 2
    for kernel in kernels:
        compile_for_h100(kernel)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", MODELS)
def test_gpu_products_with_epilogues_match_eager(name: str) -> None:
    """IEEE dots (TF32 off, every product generated) against eager; TF32 dots (as routed) against float64."""
    torch.manual_seed(0)
    make, shapes, products = MODELS[name]
    model = make().cuda().eval()
    examples = [torch.randn(*s, device="cuda") for s in shapes]
    with tf32(False), knobs.scope(matmul="all"):
        compiled = compile_model(model, *examples, target="cuda")
    assert generated_products(compiled) == products
    with torch.no_grad(), tf32(False):
        calls = [[torch.randn(*s, device="cuda") for s in shapes] for _ in range(4)]
        results = [compiled(*inputs) for inputs in calls]  # queued back to back
        torch.cuda.synchronize()
        for inputs, y in zip(calls, results, strict=True):
            assert relative_error(y, model(*inputs)) <= 1e-5
    with tf32(True), knobs.scope(matmul="all"):
        compiled = compile_model(model, *examples, target="cuda")
    assert 'matmul_kernel = "tf32"' in compiled.ir("pygraph")
    with torch.no_grad():
        reference = copy.deepcopy(model).double()(*(x.double() for x in examples))
        reference = pytree.tree_map(lambda t: t.float(), reference)  # (rounded: the metric compares dtypes)
        assert relative_error(compiled(*examples), reference) <= 5e-3


@pytest.mark.gpu
@needs_gpu
def test_gpu_wide_product_of_few_rows_matches_float64() -> None:
    """GPT-2's logits as routed by default with TF32 (32 rows by 50257 columns, one kernel writing the
    unaligned rows), calls queued back to back, against float64."""
    torch.manual_seed(0)
    model = nn.Linear(768, 50257, bias=False).cuda().eval()
    calls = [torch.randn(1, 32, 768, device="cuda") for _ in range(3)]
    with tf32(True):
        compiled = compile_model(model, calls[0], target="cuda")
        assert generated_products(compiled) == 1 and "aten.cat" not in compiled.ir("torch")
        with torch.no_grad():
            results = [compiled(x) for x in calls]
            torch.cuda.synchronize()
            reference = copy.deepcopy(model).double()
            for x, y in zip(calls, results, strict=True):
                assert y.stride() == (32 * 50257, 50257, 1)
                assert relative_error(y, reference(x.double()).float()) <= 5e-3
