"""The generated attention kernel (passes/attention_kernel.py), routed by PYGRAPH_ATTENTION=kernel and forced
on the CPU with PYGRAPH_GPU_LAYOUTS=on: the emulator runs it under Triton's interpreter against eager, on
odd sizes, masks of every kind, causal attention, strided heads and a transformer block; the same cases
run compiled for CUDA on the GPU machine. Sizes are small: the interpreter is slow."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from gpu_marks import needs_gpu
from test_codegen_triton import compile_for_h100
from torch import nn
from torch.nn.functional import scaled_dot_product_attention as sdpa

import pygraph
from pygraph.frontend import export_program
from pygraph.frontend.attention import KERNEL_META
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

pytestmark = [
    pytest.mark.usefixtures("kernel_cache"),
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),  # masked-off lanes
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),
]


class Attention(nn.Module):
    """One attention call, with the mask as an input (or none) and the call's options fixed."""

    def __init__(self, **options: object) -> None:
        super().__init__()
        self.options = options

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *mask: torch.Tensor) -> torch.Tensor:
        return sdpa(q, k, v, *mask, **self.options)


def ops(compiled: pygraph.CompiledModel) -> list[str]:
    """Library calls and generated kernels in program order (less the emulator's copies of inputs)."""
    return [
        n.op if n.kind == "library" else n.kernel
        for step in compiled.plan.steps
        for n in step.nodes
        if n.kind == "library" or (n.kind == "kernel" and not n.kernel.endswith("_copy"))
    ]


def hidden_rows(mask: torch.Tensor) -> torch.Tensor:
    """`mask` (bool: keep where True) with the first query row of the first batch hiding every key."""
    mask = mask.clone()
    mask[(0,) * (mask.dim() - 2) + (min(3, mask.shape[-2] - 1),)] = False
    return mask


# name: (batch dims, queries, keys, head dim, value head dim, options, mask maker(scores shape) or None)
CASES: dict[str, tuple] = {
    "odd sizes": ((2, 3), 37, 53, 40, 40, {}, None),
    "more keys, several key blocks": ((1, 2), 20, 150, 16, 24, {}, None),
    "more queries, several query blocks": ((1, 2), 150, 20, 24, 16, {}, None),
    "3-D": ((3,), 37, 53, 40, 24, {}, None),
    "scale": ((2, 3), 37, 53, 40, 40, {"scale": 0.3}, None),
    "causal": ((1, 2), 100, 100, 16, 16, {"is_causal": True}, None),
    "causal, fewer queries": ((1, 2), 37, 100, 16, 16, {"is_causal": True}, None),
    "causal, more queries": ((1, 2), 100, 37, 16, 16, {"is_causal": True}, None),
    "bool mask [B, 1, 1, Lk]": (
        (2, 3),
        37,
        70,
        40,
        40,
        {},
        lambda b, q, k: torch.rand(b[0], 1, 1, k) > 0.3,
    ),
    "bool mask, a row hidden": (
        (2, 3),
        37,
        70,
        40,
        40,
        {},
        lambda b, q, k: hidden_rows(torch.rand(*b, q, k) > 0.3),
    ),
    "float mask [Lq, Lk], a row hidden": (
        (2, 3),
        37,
        70,
        40,
        40,
        {"scale": 0.2},
        lambda b, q, k: torch.randn(q, k).index_fill(0, torch.tensor([5]), -math.inf),
    ),
    "float mask [B, 1, 1, Lk], finfo.min padding": (
        (2, 3),
        37,
        70,
        40,
        40,
        {},
        lambda b, q, k: torch.zeros(b[0], 1, 1, k).index_fill(3, torch.arange(60, k), torch.finfo().min),
    ),
}


def case_inputs(name: str, device: str = "cpu") -> tuple[torch.Tensor, ...]:
    batch, queries, keys, dim, value_dim, _, make_mask = CASES[name]
    inputs = (
        torch.randn(*batch, queries, dim),
        torch.randn(*batch, keys, dim),
        torch.randn(*batch, keys, value_dim),
    )
    inputs += (make_mask(batch, queries, keys),) if make_mask else ()
    return tuple(x.to(device) for x in inputs)


def compile_kernel(
    model: nn.Module, inputs: tuple[torch.Tensor, ...], target: str = "emulator"
) -> pygraph.CompiledModel:
    layouts = "on" if target == "emulator" else "auto"
    with knobs.scope(gpu_layouts=layouts, attention="kernel", split_keys="off"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, inputs, target=target)
    assert sum(op.endswith("_attention") for op in ops(compiled)) == 1, ops(compiled)
    assert "aten.scaled_dot_product_attention.default" not in ops(compiled)
    return compiled


def check(
    compiled: pygraph.CompiledModel, model: nn.Module, inputs: tuple[torch.Tensor, ...], bar: float
) -> None:
    """The compiled model against eager, on `inputs` and on fresh q, k, v (never zeros)."""
    for _ in range(2):
        with torch.no_grad():
            got, ref = compiled(*inputs), model(*inputs)
        assert not ref.isnan().any() and relative_error(got, ref) < bar
        inputs = tuple(torch.randn_like(x) for x in inputs[:3]) + inputs[3:]


@pytest.mark.parametrize("case", CASES)
def test_attention_kernel_matches_eager(case: str) -> None:
    torch.manual_seed(0)
    inputs, model = case_inputs(case), Attention(**CASES[case][5])
    compiled = compile_kernel(model, inputs)
    check(compiled, model, inputs, 1e-5)
    if "hidden" in case:  # a row that sees no key is zeros, as ATen's fused kernel gives it
        q, k, _, mask = inputs
        keep = mask if mask.dtype == torch.bool else mask != -math.inf
        hidden = ~keep.expand(*q.shape[:-1], k.shape[-2]).any(-1)
        assert hidden.any() and compiled(*inputs)[hidden].abs().max() == 0


class SelfAttention(nn.Module):
    """Heads as HF models make them: projections viewed as [B, L, H, E] and transposed (strided, not
    copied), the result transposed back and *viewed* as [B, L, H * E]; a padding mask [B, 1, 1, L]."""

    def __init__(self, heads: int = 4, dim: int = 32) -> None:
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in self.qkv(x).split(d, -1))
        y = sdpa(q, k, v, attn_mask=keep[:, None, None, :])
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """A pre-norm transformer block: layer norm, causal self-attention, residual, GELU MLP, residual."""

    def __init__(self, dim: int = 48, heads: int = 3) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(sdpa(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]] = {
    "strided heads": lambda: (SelfAttention().eval(), (torch.randn(2, 45, 32), torch.rand(2, 45) > 0.2)),
    "transformer block": lambda: (Block().eval(), (torch.randn(2, 40, 48),)),
}


@pytest.mark.parametrize("name", MODELS)
def test_models_with_the_attention_kernel_match_eager(name: str) -> None:
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    compiled = compile_kernel(model, inputs)
    # the heads are read where the projection wrote them: no copy kernel before the attention
    assert not any("clone" in op for op in ops(compiled)), ops(compiled)
    with torch.no_grad():
        assert relative_error(compiled(*inputs), model(*inputs)) < 1e-5


def test_routes() -> None:
    """The knob: auto (few scores) and kernel make the kernel; decompose, aten, dropout and the CPU without
    forcing do not."""
    torch.manual_seed(0)
    inputs = case_inputs("odd sizes")
    for route, options, layouts, kernel in (
        ("auto", {}, "on", True),
        ("kernel", {}, "on", True),
        ("decompose", {}, "on", False),
        ("aten", {}, "on", False),
        ("kernel", {"dropout_p": 0.5}, "on", False),
        ("kernel", {}, "auto", False),  # the CPU is no GPU
    ):
        with knobs.scope(gpu_layouts=layouts, attention=route):
            compiled = pygraph.export_and_compile(Attention(**options), inputs)
        assert any(op.endswith("_attention") for op in ops(compiled)) == kernel, (route, options, layouts)
    with (
        knobs.scope(gpu_layouts="on", attention="fast"),
        pytest.raises(ValueError, match="PYGRAPH_ATTENTION"),
    ):
        pygraph.export_and_compile(Attention(), inputs)


@pytest.mark.parametrize(
    "batch, heads, length, dim, tf32, expected",
    [
        (1, 3, 197, 64, True, "kernel"),  # TF32 dots: the kernel wins on every measured shape
        (1, 3, 197, 64, False, "decompose"),  # 116K scores of head dim 64 in IEEE float32
        (1, 12, 32, 64, False, "kernel"),  # few scores: one launch against three
        (8, 4, 128, 32, False, "kernel"),  # head dim 32: the kernel's FMA dots keep up
        (16, 12, 128, 64, False, "aten"),  # past 1M scores of head dim 64
    ],
)
def test_auto_routes_as_measured(
    batch: int, heads: int, length: int, dim: int, tf32: bool, expected: str
) -> None:
    """`auto`'s rule (frontend/attention.py, from bench/results/probe-attention-kernel-h200.log)."""
    inputs = tuple(torch.randn(batch, heads, length, dim) for _ in range(3))
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        with knobs.scope(gpu_layouts="on", attention="auto"):
            program = export_program(Attention(), inputs)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    calls = [
        n for n in program.graph.nodes if n.target is torch.ops.aten.scaled_dot_product_attention.default
    ]
    route = "decompose" if not calls else "kernel" if KERNEL_META in calls[0].meta else "aten"
    assert route == expected


@pytest.mark.parametrize(
    "shapes, options",
    [
        (((2, 3, 8, 272), (2, 3, 8, 272), (2, 3, 8, 16)), {}),  # a head dim past MAX_HEAD_DIM
        (((2, 3, 8, 16), (2, 1, 8, 16), (2, 1, 8, 16)), {}),  # k and v broadcast over heads
    ],
)
def test_attentions_the_kernel_cannot_compute_stay_aten(shapes: tuple, options: dict) -> None:
    inputs = tuple(torch.randn(*shape) for shape in shapes)
    with knobs.scope(gpu_layouts="on", attention="kernel"):
        program = export_program(Attention(**options), inputs)
    (node,) = [
        n for n in program.graph.nodes if n.target is torch.ops.aten.scaled_dot_product_attention.default
    ]
    assert KERNEL_META not in node.meta


def grouped_inputs(
    dtype: torch.dtype, queries: int, mask: bool, device: str = "cpu"
) -> tuple[torch.Tensor, ...]:
    """8 query heads over 2 key and value heads (enable_gqa), 37 keys, head dim 40, and a padding mask."""
    inputs = tuple(torch.randn(2, h, n, 40, device=device) for h, n in ((8, queries), (2, 37), (2, 37)))
    keep = (torch.rand(2, 1, 1, 37, device=device) > 0.3,) if mask else ()
    return tuple(x.to(dtype) for x in inputs) + keep


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("queries, mask", [(1, True), (5, False), (20, True)])
def test_grouped_query_heads_and_half_precision(dtype: torch.dtype, queries: int, mask: bool) -> None:
    """Each key and value head serves a group of query heads (read in place, no copy); half-precision
    operands are read as float32 and the result rounded once: within eager's own rounding of the float32
    result."""
    _check_grouped(dtype, queries, mask, "cpu")


def _check_grouped(dtype: torch.dtype, queries: int, mask: bool, device: str) -> None:
    torch.manual_seed(0)
    model = Attention(enable_gqa=True)
    inputs = grouped_inputs(dtype, queries, mask, device)
    compiled = compile_kernel(model, inputs, "emulator" if device == "cpu" else "cuda")
    for _ in range(2):
        exact = model(*(x.float() if x.is_floating_point() else x for x in inputs))
        with torch.no_grad():
            got, eager = compiled(*inputs), model(*inputs)
        assert got.dtype == dtype and not exact.isnan().any()
        bound = 1e-5 if dtype == torch.float32 else 2 * relative_error(eager.float(), exact)
        assert relative_error(got.float(), exact) <= bound, (relative_error(got.float(), exact), bound)
        inputs = tuple(torch.randn_like(x) for x in inputs[:3]) + inputs[3:]


@pytest.mark.parametrize("route, queries", [("auto", 1), ("auto", 128), ("kernel", 1)])
def test_half_precision_attentions_go_to_aten_unless_forced(route: str, queries: int) -> None:
    """`auto` leaves bfloat16 attentions to ATen's flash and cuDNN kernels, which split the keys of a
    decoding step across programs (bench/results/probe-gqa-s25-h200.log); forced, the kernel's dots run in
    TF32, exact for half-precision q and k."""
    inputs = grouped_inputs(torch.bfloat16, queries, mask=True)
    with knobs.scope(gpu_layouts="on", attention=route):
        program = export_program(Attention(enable_gqa=True), inputs)
    (call,) = [
        n for n in program.graph.nodes if n.target is torch.ops.aten.scaled_dot_product_attention.default
    ]
    assert call.meta.get(KERNEL_META) == ("tf32" if route == "kernel" else None)


@pytest.mark.parametrize("tf32", [False, True])
def test_dot_precision_follows_tf32_at_compile_time(tf32: bool) -> None:
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        with knobs.scope(gpu_layouts="on", attention="kernel"):
            compiled = pygraph.export_and_compile(Attention(), case_inputs("odd sizes"))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
    (source,) = [k.source for k in compiled.plan.kernels.values() if k.name.endswith("_attention")]
    assert f'input_precision="{"tf32" if tf32 else "ieee"}"' in source
    assert f'pygraph.attention_kernel = "{"tf32" if tf32 else "ieee"}"' in compiled.ir("pygraph")


@pytest.mark.parametrize(
    "case, dim",
    [("causal", 64), ("bool mask [B, 1, 1, Lk]", 128), ("float mask [Lq, Lk], a row hidden", 256)],
)
def test_attention_kernels_compile_for_sm90(case: str, dim: int) -> None:
    batch, _, _, _, _, options, make_mask = CASES[case]
    inputs = (torch.randn(*batch, 200, dim), torch.randn(*batch, 300, dim), torch.randn(*batch, 300, dim))
    inputs += (make_mask(batch, 200, 300),) if make_mask else ()
    with knobs.scope(gpu_layouts="on", attention="kernel"):
        compiled = pygraph.export_and_compile(Attention(**options), inputs)
    for kernel in compiled.plan.kernels.values():
        compile_for_h100(kernel)


class BroadcastOperands(nn.Module):
    """q, k and v broadcast along their rows and head dim (strides 0), a bool mask over the keys."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.expand(*x.shape[:2], 5, 4)
        return sdpa(y, y, y.tanh(), attn_mask=y.sum(-1, keepdim=True).mT > 0)


def test_operands_broadcast_along_rows_and_head_dims_are_loaded_as_whole_blocks() -> None:
    """Their addresses had no term along the block's dims, so Triton refused the load of a block mask
    through a single pointer (on the GPU; the interpreter broadcast it)."""
    torch.manual_seed(0)
    model, x = BroadcastOperands(), torch.randn(3, 2, 1, 1)
    compiled = compile_kernel(model, (x,))
    for _ in range(2):
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
        x = torch.randn_like(x)
    for kernel in compiled.plan.kernels.values():
        compile_for_h100(kernel)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.usefixtures("no_tf32")
@pytest.mark.parametrize("case", CASES)
def test_gpu_attention_kernel_matches_eager(case: str) -> None:
    torch.manual_seed(0)
    inputs, model = case_inputs(case, "cuda"), Attention(**CASES[case][5])
    check(compile_kernel(model, inputs, "cuda"), model, inputs, 1e-5)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.usefixtures("no_tf32")
@pytest.mark.parametrize("name", MODELS)
def test_gpu_models_with_the_attention_kernel_match_eager(name: str) -> None:
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model, inputs = model.cuda(), tuple(x.cuda() for x in inputs)
    compiled = compile_kernel(model, inputs, "cuda")
    with torch.no_grad():
        assert relative_error(compiled(*inputs), model(*inputs)) < 1e-5


@pytest.mark.gpu
@needs_gpu
@pytest.mark.usefixtures("no_tf32")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("queries, mask", [(1, True), (5, False), (20, True)])
def test_gpu_grouped_query_heads_and_half_precision(dtype: torch.dtype, queries: int, mask: bool) -> None:
    _check_grouped(dtype, queries, mask, "cuda")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.usefixtures("no_tf32")
@pytest.mark.parametrize("dim", [2, 8])
def test_gpu_hidden_rows_are_zeros_signed_as_eager(dim: int) -> None:
    """Rows the mask hides entirely weigh every value by 0; with every value negative the zeros are still
    +0.0, as eager's CUDA kernels give them (`copysign` would tell -0.0 apart). Eager's math gives -0.0 at
    one query, one key and head dim 2 only (a cuBLAS path of its own, `docs/status.md`)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 4, n, dim, device="cuda") for n in (5, 3, 3))
    v = -v.abs()
    keep = torch.rand(3, 4, 5, 3, device="cuda") > 0.5
    keep[0, 0, 1] = False
    model = Attention()
    compiled = compile_kernel(model, (q, k, v, keep), "cuda")
    with torch.no_grad():
        got, ref = compiled(q, k, v, keep), model(q, k, v, keep)
    hidden = ~keep.any(-1)
    assert hidden.any() and not got[hidden].signbit().any() and got[hidden].abs().max() == 0
    assert torch.equal(got.signbit(), ref.signbit()) and relative_error(got, ref) < 1e-5


@pytest.mark.gpu
@needs_gpu
def test_gpu_attention_kernel_with_tf32() -> None:
    """TF32 dots (10-bit mantissas): about 1e-3 off eager's fp32."""
    torch.manual_seed(0)
    saved = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        inputs, model = case_inputs("causal", "cuda"), Attention(is_causal=True)
        compiled = compile_kernel(model, inputs, "cuda")
        assert all(
            'input_precision="tf32"' in k.source
            for k in compiled.plan.kernels.values()
            if "attention" in k.name
        )
        check(compiled, model, inputs, 5e-3)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved


# Attentions split-keys splits (passes/split_keys.py), a split size forced where the interpreter's sizes
# are below the measured rule's: name: (query heads, key heads, queries, keys, head dim, dtype, options,
# mask maker(batch, queries, keys) or None, keys per program).
SPLIT_CASES: dict[str, tuple] = {
    "grouped decoding step, bool mask, a row hidden": (
        8,
        2,
        1,
        100,
        40,
        torch.float32,
        {"enable_gqa": True},
        lambda b, q, k: (torch.rand(b, 1, 1, k) > 0.3).index_fill(0, torch.tensor([1]), False),
        "16",
    ),
    "two queries of a group, bfloat16": (8, 2, 2, 70, 40, torch.bfloat16, {"enable_gqa": True}, None, "32"),
    "causal, no groups": (2, 2, 3, 90, 16, torch.float32, {"is_causal": True}, None, "16"),
    "eight queries of a group of four (32 rows), bool mask": (
        8,
        2,
        8,
        70,
        24,
        torch.float32,
        {"enable_gqa": True},
        lambda b, q, k: torch.rand(b, 1, q, k) > 0.3,
        "32",
    ),
    "float mask [Lq, Lk], a row hidden": (
        4,
        4,
        2,
        64,
        24,
        torch.float32,
        {"scale": 0.3},
        lambda b, q, k: torch.randn(q, k).index_fill(0, torch.tensor([1]), -math.inf),
        "16",
    ),
    "more splits than the combining kernel takes at once": (
        4,
        1,
        1,
        1200,
        16,
        torch.float16,
        {"enable_gqa": True},
        None,
        "16",
    ),
}


def split_inputs(name: str, device: str = "cpu") -> tuple[torch.Tensor, ...]:
    heads, kv_heads, queries, keys, dim, dtype, _, make_mask, _ = SPLIT_CASES[name]
    shapes = ((heads, queries), (kv_heads, keys), (kv_heads, keys))
    inputs = tuple(torch.randn(2, h, n, dim, dtype=dtype) for h, n in shapes)
    inputs += (make_mask(2, queries, keys),) if make_mask else ()
    return tuple(x.to(device) for x in inputs)


def check_split(name: str, device: str) -> None:
    """The two kernels against eager in float64: float32 within 1e-5, half precision within twice eager's
    own error (one rounding of the result)."""
    torch.manual_seed(0)
    *_, dtype, options, _, keys = SPLIT_CASES[name]
    model, inputs = Attention(**options), split_inputs(name, device)
    layouts = "on" if device == "cpu" else "auto"
    with knobs.scope(gpu_layouts=layouts, attention="auto", split_keys=keys), torch.no_grad():
        compiled = pygraph.export_and_compile(model, inputs, target="emulator" if device == "cpu" else "cuda")
    assert [op for op in ops(compiled) if "attention" in op] == ["k0_attention_parts", "k0_attention_combine"]
    for _ in range(2):
        exact = model(*(x.double() if x.is_floating_point() else x for x in inputs))
        with torch.no_grad():
            got, eager = compiled(*inputs), model(*inputs)
        bound = 1e-5 if dtype == torch.float32 else 2 * relative_error(eager.double(), exact)
        assert got.dtype == dtype and relative_error(got.double(), exact) <= bound
        inputs = tuple(torch.randn_like(x) for x in inputs[:3]) + inputs[3:]
    if "hidden" in name:  # a row that sees no key is zeros, as ATen's fused kernel gives it
        mask = inputs[3]
        keep = mask if mask.dtype == torch.bool else mask != -math.inf
        hidden = ~keep.expand(*got.shape[:-1], mask.shape[-1]).any(-1)
        assert hidden.any() and compiled(*inputs)[hidden].abs().max() == 0


@pytest.mark.parametrize("name", SPLIT_CASES)
def test_split_attention_matches_eager(name: str) -> None:
    """The keys split across programs, every split's parts combined: groups of query heads as rows of a
    program, masks hiding whole splits or rows, causal rows seeing none of the later splits, a tail split,
    and more splits than one block of the combining kernel."""
    check_split(name, "cpu")


class DecodingStep(nn.Module):
    """One token's attention against a cache held as buffers and written in place at its position, the
    key heads repeated for the query heads as Llama's `repeat_kv` does, a mask hiding positions past it."""

    def __init__(self, heads: int = 4, kv_heads: int = 2, dim: int = 16, length: int = 256) -> None:
        super().__init__()
        self.group = heads // kv_heads
        self.register_buffer("keys", torch.randn(1, kv_heads, length, dim))
        self.register_buffer("values", torch.randn(1, kv_heads, length, dim))

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, position: torch.Tensor
    ) -> torch.Tensor:
        self.keys.index_copy_(2, position, k)
        self.values.index_copy_(2, position, v)
        b, h, n, d = self.keys.shape
        keys, values = (
            t[:, :, None].expand(b, h, self.group, n, d).reshape(b, h * self.group, n, d)
            for t in (self.keys, self.values)
        )
        seen = (torch.arange(n) <= position).view(1, 1, 1, n)
        return sdpa(q, keys, values, attn_mask=seen)


def test_decoding_step_splits_its_keys_by_the_measured_rule() -> None:
    """`auto` at 256 positions (past SPLIT_MIN_KEYS): the repeated heads read in place, the keys split in 16 splits of 16 (2 key
    heads leave fewer than 64 programs with larger splits), the cache written in place; eager's result
    and cache after three steps."""
    torch.manual_seed(0)
    model, reference = DecodingStep(), DecodingStep()
    reference.load_state_dict(model.state_dict())

    def step(i: int) -> tuple[torch.Tensor, ...]:
        return torch.randn(1, 4, 1, 16), torch.randn(1, 2, 1, 16), torch.randn(1, 2, 1, 16), torch.tensor([i])

    with knobs.scope(gpu_layouts="on"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, step(0))
    assert [op for op in ops(compiled) if "attention" in op] == ["k0_attention_parts", "k0_attention_combine"]
    assert any(tuple(b.layout.shape) == (2, 16, 2, 18) for b in compiled.plan.buffers)  # the parts
    for i in (7, 8, 200):
        inputs = step(i)
        with torch.no_grad():
            assert relative_error(compiled(*inputs), reference(*inputs)) < 1e-5
    assert (
        relative_error(model.keys, reference.keys) == 0
        and relative_error(model.values, reference.values) == 0
    )


@pytest.mark.parametrize(
    "setting, route, batch", [("auto", "kernel", 1), ("off", "aten", 1), ("auto", "kernel", 32)]
)
def test_half_precision_decoding_steps_go_to_the_split_kernel(setting: str, route: str, batch: int) -> None:
    """A bfloat16 step of 8 query heads over 2 of 512 keys: split under `auto`
    (bench/results/probe-split-keys-s27-h200.log: 4.6 against ATen's 12.8 us), ATen's without the split;
    also for 32 sequences, whose whole kernel would fill the GPU (`probe-decode-s30g-split-h100.log`)."""
    shapes = ((8, 1), (2, 512), (2, 512))
    inputs = tuple(torch.randn(batch, h, n, 64, dtype=torch.bfloat16) for h, n in shapes)
    with knobs.scope(gpu_layouts="on", split_keys=setting):
        program = export_program(Attention(enable_gqa=True), inputs)
    (call,) = [
        n for n in program.graph.nodes if n.target is torch.ops.aten.scaled_dot_product_attention.default
    ]
    assert (call.meta.get(KERNEL_META) is not None) == (route == "kernel")


def test_split_keys_setting_is_checked() -> None:
    inputs = tuple(torch.randn(1, h, n, 16) for h, n in ((4, 1), (2, 300), (2, 300)))
    with (
        knobs.scope(gpu_layouts="on", split_keys="48"),
        pytest.raises(ValueError, match="PYGRAPH_SPLIT_KEYS must be auto, off or a power of two"),
    ):
        pygraph.export_and_compile(Attention(enable_gqa=True), inputs)


@pytest.mark.parametrize(
    "name", ["grouped decoding step, bool mask, a row hidden", "two queries of a group, bfloat16"]
)
def test_split_attention_kernels_compile_for_sm90(name: str) -> None:
    *_, options, _, keys = SPLIT_CASES[name]
    with knobs.scope(gpu_layouts="on", split_keys=keys):
        compiled = pygraph.export_and_compile(Attention(**options), split_inputs(name))
    for kernel in compiled.plan.kernels.values():
        compile_for_h100(kernel)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.usefixtures("no_tf32")
@pytest.mark.parametrize("name", SPLIT_CASES)
def test_gpu_split_attention_matches_eager(name: str) -> None:
    check_split(name, "cuda")
