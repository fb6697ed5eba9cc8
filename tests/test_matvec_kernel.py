"""The generated matrix-vector kernel (passes/matvec_kernel.py): products of one row (linear, mm, addmm, matmul)
computed by the emulator under Triton's interpreter against eager, on odd sizes, transposed and strided
weights, with and without a bias; what it does not take stays a vendor call; PYGRAPH_MATVEC=vendor
turns it off. The same models run compiled for CUDA on the GPU machine."""

from __future__ import annotations

import copy
import re

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
from pygraph.passes.matmul_kernel import few_row_blocks
from pygraph.passes.matvec_kernel import FEW_HALF_ROWS, MAX_HALF_N, MAX_ROW_BYTES

pytestmark = pytest.mark.usefixtures("kernel_cache")


class Products(nn.Module):
    """A linear with a bias, ReLU, a linear without one, then addmm and mm with a [K, N] weight (read
    transposed) and a row of 3 values (a tail in every block)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(37, 50), nn.Linear(50, 3, bias=False)
        self.w, self.bias = nn.Parameter(torch.randn(3, 9)), nn.Parameter(torch.randn(9))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.b(torch.relu(self.a(x)))
        return torch.addmm(self.bias, z, self.w), torch.mm(z, self.w)


class Row(nn.Module):
    """A linear layer of a 1-D row (its result 1-D too) read from a strided weight, and matmuls of the row
    (1-D, and viewed [1, 1, K]) by the transposed weight."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 24))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        w = self.w[::2, ::2]
        return nn.functional.linear(x, w), x @ w.t(), torch.matmul(x.view(1, 1, -1), w.t())


class Mlp(nn.Module):
    """The benchmark's MLP at an odd width: (linear, GELU, layer norm) three times; each later linear computes
    the GELU and layer norm before it as its prologue. Also returns a layer norm's result that a linear
    reads, which its kernel's first program stores."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            *[m for _ in range(3) for m in (nn.Linear(37, 37), nn.GELU(), nn.LayerNorm(37))]
        )
        self.head = nn.Linear(37, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.layers(x)
        return self.head(y), y


class Projections(nn.Module):
    """An RMS norm read by three products of different widths (q with a bias, k, v: a decoding step's
    attention inputs), which share one kernel computing the norm in its prologue."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.rand(37) + 0.5)
        self.q, self.k, self.v = nn.Linear(37, 40), nn.Linear(37, 9, bias=False), nn.Linear(37, 9, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.scale
        return self.q(h), self.k(h), self.v(h)


class Gated(nn.Module):
    """A gated MLP (Llama's): the gate (with a bias) and up (a [K, N] weight, read transposed) products share
    a kernel whose epilogue is `silu(g) * u` (45 outputs: a tail in the last block); the down projection's
    epilogue adds the residual."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.down = nn.Linear(37, 45), nn.Linear(45, 37, bias=False)
        self.up = nn.Parameter(torch.randn(37, 45) / 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.silu(self.gate(x)) * (x @ self.up))


class GatedLayer(Gated):
    """A residual add and RMS norm before the gated MLP (a decoder layer's second half): the gate and up
    kernel computes them in its prologue, its first program storing the sum, which the down projection's
    epilogue adds."""

    def __init__(self) -> None:
        super().__init__()
        self.residual, self.scale = nn.Parameter(torch.randn(37)), nn.Parameter(torch.rand(37) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.residual
        n = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.scale
        return h + self.down(nn.functional.silu(self.gate(n)) * (n @ self.up))


class EmbeddedProjections(Projections):
    """Projections of a token's embedding, which a residual add after them reads again (a decoder's first
    layer): the q, k and v kernel gathers the row and norms it in its prologue (every program, in three
    branches) and its first program stores the embedding, which the output projection's epilogue adds."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.o = nn.Embedding(11, 37), nn.Linear(40, 37)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = self.embed(ids)
        q, k, v = super().forward(x)
        return x + self.o(q), k, v


class ViewedRows(nn.Module):
    """Products of rows read through views: a permuted [B, S, K] -> [S, B, K] (two products of it, one
    launch) and every other row (a [K, N] weight, ReLU and an add as the epilogue)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(40, 24), nn.Linear(40, 9, bias=False)
        self.w = nn.Parameter(torch.randn(40, 24) / 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = x.transpose(0, 1)
        return self.a(y), self.b(y), torch.relu(x[:, ::2] @ self.w) + 1


class SideValues(nn.Module):
    """A row computed beside another value of its width that no product reads (returned): the product's
    kernel computes both in its prologue, its first program storing the other."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(37, 9)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = x / (x.abs() + 0.5)
        side = torch.exp(-h.abs())
        return self.a(h), side


class MaskedEpilogue(nn.Module):
    """An epilogue with an operand no product computes (a mask from the row's input, over the outputs),
    after a prologue: one kernel, the mask computed in the epilogue."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(37, 9)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(torch.tanh(x))
        return torch.where(x[..., :9] > 0, y, -y)


class BroadcastRow(nn.Module):
    """Rows whose every element is one input element: broadcast to 8 values, and a row of one value."""

    def __init__(self) -> None:
        super().__init__()
        self.w, self.one = nn.Parameter(torch.randn(8, 3)), nn.Linear(1, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.tanh(x.expand(1, 1, 8) + 1) @ self.w, self.one(torch.tanh(x))


class StoredRowOfOne(nn.Module):
    """A layer norm over one element (zeros), read by a product and returned: the first program stores a
    value of one element, its address made a block."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(1, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = nn.functional.layer_norm(x * 2, [1]) + x
        return self.a(h), h


class StoredRowStatistic(nn.Module):
    """A row's mean, read by the prologue and returned: the first program stores one value for the row."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(37, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mean = x.mean(-1, keepdim=True)
        return self.a(x - mean), mean


class RowTimesItself(nn.Module):
    """A computed row multiplied by itself (`F.linear(h, h)`): its weight is no input of the product's kernel, so
    the row is computed by a kernel of its own, not the product's prologue."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(x)
        return nn.functional.linear(h, h)


class RowToAPower(nn.Module):
    """A row raised to a 0-d parameter's power: the prologue reads one value for the whole row, which pow's
    formula combines with per-element conditions (`(s == 0) | (x == 1)`: Triton's interpreter could not
    combine a scalar with a block, fuzz seed 48534)."""

    def __init__(self) -> None:
        super().__init__()
        self.s, self.a = nn.Parameter(torch.tensor(1.7)), nn.Linear(5, 17)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(torch.pow(x.abs() + 0.5, self.s))


def wide_row() -> nn.Module:
    """A layer norm and a linear of a row longer than a warp's loads (a decoding step's width)."""
    return nn.Sequential(nn.LayerNorm(3000), nn.Linear(3000, 24))


MODELS = {
    "products": (Products, (1, 37)),
    "1-d row": (Row, (12,)),
    "mlp": (Mlp, (1, 37)),
    "wide row": (wide_row, (1, 3000)),
    "projections": (Projections, (1, 37)),
    "gated": (Gated, (1, 37)),
    "gated layer": (GatedLayer, (1, 37)),
    "viewed rows": (ViewedRows, (1, 1, 40)),
    "side values": (SideValues, (1, 37)),
    "masked epilogue": (MaskedEpilogue, (1, 37)),
    "broadcast row": (BroadcastRow, (1, 1, 1)),
    "stored row of one": (StoredRowOfOne, (1,)),
    "stored row statistic": (StoredRowStatistic, (1, 37)),
    "row times itself": (RowTimesItself, (1, 37)),
    "row to a 0-d power": (RowToAPower, (1, 5)),
}


def compile_model(model: nn.Module, *inputs: torch.Tensor, target: str = "emulator") -> pygraph.CompiledModel:
    with torch.no_grad():
        return pygraph.export_and_compile(model, inputs, target=target)


@pytest.mark.parametrize("name", MODELS)
def test_products_of_one_row_match_eager(name: str) -> None:
    torch.manual_seed(0)
    make, shape = MODELS[name]
    model = make().eval()
    compiled = compile_model(model, torch.randn(*shape))
    assert not [op for op in ops(compiled) if op.startswith("aten.")], ops(compiled)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(*shape)
            assert relative_error(compiled(x), model(x)) <= 1e-5


def _check_half(name: str, dtype: torch.dtype, device: str, shape: tuple[int, ...] | None = None) -> None:
    """The model in `dtype` (fed `shape`, else its own) is all generated kernels, and each result is within
    twice eager's own error in that dtype of the model in float32 (eager rounds each op; the kernel sums in
    float32 in its order)."""
    torch.manual_seed(0)
    make, own = MODELS[name]
    shape = shape or own
    model = make().eval().to(device)
    half = copy.deepcopy(model).to(dtype)
    target = "cuda" if device == "cuda" else "emulator"
    compiled = compile_model(half, torch.randn(*shape, device=device, dtype=dtype), target=target)
    assert not [op for op in ops(compiled) if op.startswith("aten.")], ops(compiled)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(*shape, device=device)
            exact = pytree.tree_leaves(model(x))
            eager, got = (pytree.tree_leaves(f(x.to(dtype))) for f in (half, compiled))
            for r, e, g in zip(exact, eager, got, strict=True):
                assert g.dtype == e.dtype == dtype
                bound = max(2 * relative_error(e.float(), r), torch.finfo(dtype).eps)
                assert relative_error(g.float(), r) <= bound


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", MODELS)
def test_half_precision_products_of_one_row_are_kernels_as_accurate_as_eager(
    name: str, dtype: torch.dtype
) -> None:
    _check_half(name, dtype, "cpu")


# Models fed a few rows: a decoding step of several sequences ([B, 1, K] too), up to FEW_HALF_ROWS (64):
# blocks of 16, 32 (mlp) and 64 rows (products), and two blocks of 32 for gate and up products whose
# weights differ in layout (gated: Triton's sm_90 miscompile, matmul_kernel.py).
FEW_ROWS = {
    "products": (40, 37),
    "mlp": (24, 37),
    "wide row": (2, 3000),
    "projections": (4, 1, 37),
    "gated": (64, 37),
    "gated layer": (2, 1, 37),
    "viewed rows": (3, 5, 40),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", FEW_ROWS)
def test_half_precision_products_of_few_rows_are_kernels_as_accurate_as_eager(
    name: str, dtype: torch.dtype
) -> None:
    _check_half(name, dtype, "cpu", FEW_ROWS[name])


def _compile_few_rows(name: str) -> pygraph.CompiledModel:
    """`name` in bfloat16, compiled for the rows FEW_ROWS gives it."""
    torch.manual_seed(0)
    make, _ = MODELS[name]
    shape = FEW_ROWS[name]
    return compile_model(make().eval().to(torch.bfloat16), torch.randn(*shape, dtype=torch.bfloat16))


def test_products_of_few_rows_share_a_kernel_with_their_epilogue() -> None:
    """Four rows of q, k and v are one kernel of three outputs after the norm's own (their dots loop over K:
    no prologue); a gated MLP's gate and up products compute `silu(g) * u` in theirs, and the down
    projection adds the residual."""
    projections = _compile_few_rows("projections")
    assert [re.sub(r"^k\d+_", "", op) for op in ops(projections)] == ["pow_mean_add_rsqrt_mul", "linear"]
    (kernel,) = [k for k in projections.plan.kernels.values() if "linear" in k.name]
    assert "out2" in kernel.source and "tl.dot(a, b, acc0)" in kernel.source
    assert [re.sub(r"^k\d+_", "", op) for op in ops(_compile_few_rows("gated"))] == [
        "linear_silu_matmul_mul",
        "linear_add",
    ]


def test_gate_and_up_weights_of_different_layouts_take_blocks_of_32_rows() -> None:
    """The gated MLP's gate is a linear ([N, K] weight) and its up projection `x @ up` ([K, N]): their kernel
    computes its 64 rows in two blocks of 32; the down projection alone takes one block of 64."""
    gate_up, down = [k.source for k in _compile_few_rows("gated").plan.kernels.values() if "dots" in k.source]
    assert "6 programs of 32 x 16" in gate_up and "rm = (pid // 3) * 32" in gate_up
    assert "3 programs of 64 x 16" in down
    assert few_row_blocks(64, 37, 45, 2, one_layout=False)[0] == 32
    assert few_row_blocks(20, 37, 45, 2, one_layout=False)[0] == 32
    assert few_row_blocks(33, 37, 45, 2)[0] == 64


def test_few_row_kernels_compile_for_sm90() -> None:
    compiled = [_compile_few_rows(name) for name in FEW_ROWS]
    kernels = [k for c in compiled for k in c.plan.kernels.values() if "dots" in k.source]
    # products 3 (its addmm and mm in one), mlp 4, wide row 1, projections 1, gated 2, gated layer 2,
    # viewed rows 2
    assert len(kernels) == 15
    for kernel in kernels:
        compile_for_h100(kernel)


def _kernels(model: nn.Module) -> list[str]:
    """The kernels of `model` compiled for a row of 37, less their variant (`k1_` where a buffer lives in
    the output's bytes, read through the table)."""
    torch.manual_seed(0)
    return [re.sub(r"^k\d+_", "", op) for op in ops(compile_model(model.eval(), torch.randn(1, 37)))]


def test_the_ops_computing_a_row_are_the_prologue_of_its_product() -> None:
    """The GELU and layer norm before each later linear run in its kernel, the last layer norm's result,
    returned too, stored by its first program."""
    assert _kernels(Mlp()) == ["matvec", *["gelu_layer_norm_matvec"] * 3]


def test_pointwise_ops_reading_products_are_their_epilogue() -> None:
    """ReLU after a linear runs in its kernel (not as the next one's prologue: no program recomputes it);
    the gate and up products of a gated MLP are one kernel storing `silu(g) * u` alone, and the down
    projection adds the residual."""
    assert _kernels(Products()) == ["matvec_relu", "matvec", "matvec"]
    assert _kernels(Gated()) == ["matvec_silu_mul", "matvec_add"]
    assert _kernels(GatedLayer()) == ["add_pow_mean_add_rsqrt_mul_mul_matvec_silu_mul", "matvec_add"]


@pytest.mark.parametrize(
    "model, x",
    [
        (nn.Linear(16, 8), torch.randn(2, 16)),  # two rows
        (
            nn.Linear(MAX_ROW_BYTES // 4 + 1, 8),
            torch.randn(1, MAX_ROW_BYTES // 4 + 1),
        ),  # longer than it loads
        (nn.Linear(16, 8).double(), torch.randn(1, 16, dtype=torch.float64)),
        (nn.Linear(16, MAX_HALF_N + 1).half(), torch.randn(1, 16, dtype=torch.float16)),
        (nn.Linear(16, 8).half(), torch.randn(FEW_HALF_ROWS + 1, 16, dtype=torch.float16)),
    ],
    ids=["two float32 rows", "long row", "float64", "many half outputs", "many half rows"],
)
def test_products_the_kernel_does_not_take_stay_vendor_calls(model: nn.Module, x: torch.Tensor) -> None:
    compiled = compile_model(model.eval(), x)
    assert not any(op.endswith("_matvec") for op in ops(compiled)), ops(compiled)
    with torch.no_grad():
        assert relative_error(compiled(x), model(x)) <= 1e-5


def test_addmm_scaled_stays_a_vendor_call() -> None:
    class Scaled(nn.Module):
        def forward(self, b: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return torch.addmm(b, x, w, beta=0.5)

    inputs = (torch.randn(8), torch.randn(1, 16), torch.randn(16, 8))
    compiled = compile_model(Scaled(), *inputs)
    assert ops(compiled) == ["aten.addmm.out"]
    assert relative_error(compiled(*inputs), Scaled()(*inputs)) <= 1e-5


def test_products_of_one_row_share_a_kernel() -> None:
    """The three projections of one normalized row are one kernel (norm in its prologue, 20 programs for q's
    40 outputs and 5 for k's and for v's 9), with three results."""
    torch.manual_seed(0)
    compiled = compile_model(Projections().eval(), torch.randn(1, 37))
    assert ops(compiled) == ["k0_pow_mean_add_rsqrt_mul_mul_matvec"], ops(compiled)
    (kernel,) = compiled.plan.kernels.values()
    assert "out2" in kernel.source and "30 programs" in kernel.source


def test_the_knob_leaves_products_to_the_vendor() -> None:
    model, x = nn.Linear(16, 8).eval(), torch.randn(1, 16)
    with knobs.scope(matvec="vendor"):
        assert ops(compile_model(model, x)) == ["aten.addmm.out"]
    with knobs.scope(matvec="sometimes"), pytest.raises(ValueError, match="PYGRAPH_MATVEC"):
        compile_model(model, x)


def test_a_gathered_row_is_a_prologue_whose_value_is_stored_too() -> None:
    model, ids = EmbeddedProjections().eval(), torch.tensor([[3]])
    compiled = compile_model(model, ids)
    assert [re.sub(r"^k\d+_", "", op) for op in ops(compiled)] == [
        "embedding_pow_mean_add_rsqrt_mul_mul_matvec",
        "matvec_add",
    ]
    with torch.no_grad():
        for token in (0, 7, 10):
            ids = torch.tensor([[token]])
            assert relative_error(compiled(ids), model(ids)) <= 1e-5
    for kernel in compiled.plan.kernels.values():
        compile_for_h100(kernel)


def test_matvec_kernels_compile_for_sm90() -> None:
    torch.manual_seed(0)
    models = [
        (Products(), (1, 37)),
        (wide_row(), (1, 3000)),
        (Gated(), (1, 37)),
        (GatedLayer(), (1, 37)),
        (RowToAPower(), (1, 5)),
    ]
    compiled = [compile_model(model.eval(), torch.randn(*shape)) for model, shape in models]
    kernels = [k for c in compiled for k in c.plan.kernels.values() if "matvec" in k.name]
    assert len(kernels) == 9  # (Products' addmm and mm of one row are one kernel; four with epilogues)
    for kernel in kernels:
        compile_for_h100(kernel)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", MODELS)
def test_gpu_products_of_one_row_match_eager(name: str) -> None:
    torch.manual_seed(0)
    make, shape = MODELS[name]
    model = make().cuda().eval()
    compiled = compile_model(model, torch.randn(*shape, device="cuda"), target="cuda")
    assert not [op for op in ops(compiled) if op.startswith("aten.")], ops(compiled)
    with torch.no_grad():
        inputs = [torch.randn(*shape, device="cuda") for _ in range(4)]
        results = [compiled(x) for x in inputs]  # queued back to back
        torch.cuda.synchronize()
        for x, y in zip(inputs, results, strict=True):
            assert relative_error(y, model(x)) <= 1e-5


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", MODELS)
def test_gpu_half_precision_products_of_one_row(name: str, dtype: torch.dtype) -> None:
    _check_half(name, dtype, "cuda")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("name", FEW_ROWS)
def test_gpu_half_precision_products_of_few_rows(name: str, dtype: torch.dtype) -> None:
    _check_half(name, dtype, "cuda", FEW_ROWS[name])
