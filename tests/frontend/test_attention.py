"""Attentions as matmuls around a softmax (frontend/attention.py, PYGRAPH_ATTENTION=decompose), forced on
the CPU with PYGRAPH_GPU_LAYOUTS=on; the emulator runs the plans against eager. The generated attention
kernel has tests of its own (tests/test_attention_kernel.py)."""

import pytest
import torch
from gpu_marks import needs_gpu
from test_attention_kernel import Attention, ops
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa

import pygraph
from pygraph.frontend import export_program
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")  # masked-off lanes


def qkv(batch: int, heads: int, queries: int, keys: int, dim: int = 16) -> tuple[torch.Tensor, ...]:
    return (
        torch.randn(batch, heads, queries, dim),
        torch.randn(batch, heads, keys, dim),
        torch.randn(batch, heads, keys, dim),
    )


def bool_mask(batch: int, queries: int, keys: int) -> torch.Tensor:
    """Padding of the last keys of each batch row, and one query row that sees no key at all."""
    keep = torch.ones(batch, 1, queries, keys, dtype=torch.bool)
    keep[:, :, :, keys - 5 :] = False
    keep[0, 0, 3] = False
    return keep


CASES = {
    "no mask": ({}, None),
    "bool mask": ({}, bool_mask),
    "float mask": ({}, lambda b, q, k: torch.randn(b, 1, q, k)),
    "causal": ({"is_causal": True}, None),
    "scale": ({"scale": 0.3}, None),
}


@pytest.mark.parametrize("case", CASES)
def test_attention_is_matmuls_around_a_softmax(case: str) -> None:
    torch.manual_seed(0)
    options, make_mask = CASES[case]
    q, k, v = qkv(2, 3, 100, 120)
    inputs = (q, k, v) + ((make_mask(2, 100, 120),) if make_mask else ())
    model = Attention(**options)
    with knobs.scope(gpu_layouts="on", attention="decompose"):
        compiled = pygraph.export_and_compile(model, inputs)
    first, softmax, second = ops(compiled)  # scale, mask and softmax in one kernel
    assert first == second == "aten.bmm.out" and "softmax" in softmax  # (heads as one batch)
    got, ref = compiled(*inputs), model(*inputs)
    assert not ref.isnan().any() and relative_error(got, ref) < 1e-5
    if make_mask is bool_mask:  # the row that sees nothing is zeros, as eager gives
        assert got[0, 0, 3].abs().max() == 0
    q2, k2, v2 = qkv(2, 3, 100, 120)
    assert relative_error(compiled(q2, k2, v2, *inputs[3:]), model(q2, k2, v2, *inputs[3:])) < 1e-5


@pytest.mark.parametrize(
    "route, options",
    [("aten", {}), ("decompose", {"dropout_p": 0.5}), ("decompose", {"enable_gqa": True})],
)
def test_other_attentions_stay_fused(route: str, options: dict) -> None:
    with knobs.scope(gpu_layouts="on", attention=route):
        program = export_program(Attention(**options), qkv(2, 3, 100, 120))
    targets = [n.target for n in program.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.scaled_dot_product_attention.default in targets
    assert torch.ops.aten.matmul.default not in targets


def test_attention_on_the_cpu_is_left_to_aten_unless_forced() -> None:
    with knobs.scope(attention="decompose"):
        program = export_program(Attention(), qkv(2, 3, 100, 120))
    assert any(n.target is torch.ops.aten.scaled_dot_product_attention.default for n in program.graph.nodes)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.usefixtures("no_tf32")
@pytest.mark.parametrize("case", CASES)
def test_gpu_decomposed_attention_matches_eager(case: str) -> None:
    torch.manual_seed(0)
    options, make_mask = CASES[case]
    inputs = qkv(2, 3, 100, 120) + ((make_mask(2, 100, 120),) if make_mask else ())
    inputs = tuple(x.cuda() for x in inputs)
    model = Attention(**options)
    with knobs.scope(attention="decompose"):
        compiled = pygraph.export_and_compile(model, inputs, target="cuda")
    assert "aten.bmm.out" in ops(compiled)
    for _ in range(2):
        assert relative_error(compiled(*inputs), model(*inputs)) < 1e-5
        inputs = tuple(torch.randn_like(x) for x in inputs[:3]) + inputs[3:]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rows_a_boolean_mask_hides_are_zeros_after_aten_s_call_in_half_precision(dtype) -> None:
    """cuDNN's kernel, which eager's call may take there, gives other values (see the GPU twin)."""
    torch.manual_seed(0)
    inputs = tuple(x.to(dtype) for x in qkv(2, 3, 100, 120)) + (bool_mask(2, 100, 120),)
    model = Attention()
    with knobs.scope(gpu_layouts="on", attention="aten"):
        compiled = pygraph.export_and_compile(model, inputs)
    assert ops(compiled)[0] == "aten.scaled_dot_product_attention.default"
    got, ref = compiled(*inputs), model(*inputs)
    assert got[0, 0, 3].abs().max() == 0 and relative_error(got, ref) < 1e-2


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("reversed_in_memory", [False, True], ids=["contiguous", "dims reversed"])
def test_gpu_rows_a_boolean_mask_hides_are_zeros_whatever_kernel_aten_takes(reversed_in_memory) -> None:
    """Eager's call takes cuDNN's kernel for contiguous half-precision inputs (a hidden row: neither zeros
    nor NaN) and the math kernel for others (zeros): pygraph gives the math kernel's answer either way."""
    torch.manual_seed(0)
    inputs = tuple(x.cuda().half() for x in qkv(2, 3, 100, 120))
    if reversed_in_memory:
        inputs = tuple(x.transpose(0, -1).contiguous().transpose(0, -1) for x in inputs)
    inputs += (bool_mask(2, 100, 120).cuda(),)
    model = Attention()
    compiled = pygraph.export_and_compile(model, inputs, target="cuda")
    with sdpa_kernel([SDPBackend.MATH]):
        ref = model(*inputs)
    got = compiled(*inputs)
    assert got[0, 0, 3].abs().max() == 0 and relative_error(got, ref) < 1e-2


class SelfAttention(nn.Module):
    """Heads as HF models make them: projections viewed as [B, L, H, E] and transposed (not contiguous),
    the result transposed back and *viewed* as [B, L, H * E], which needs the fused call's memory order."""

    def __init__(self, heads: int = 4, dim: int = 32) -> None:
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in self.qkv(x).split(d, -1))
        y = sdpa(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).view(b, n, d))


def test_heads_of_projections_and_the_view_back() -> None:
    torch.manual_seed(0)
    model, x = SelfAttention().eval(), torch.randn(8, 96, 32)  # 8 x 4 x 96 x 96 = 294912 scores
    with knobs.scope(gpu_layouts="on", attention="decompose"), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,))
        assert "aten.scaled_dot_product_attention.default" not in ops(compiled)
        assert relative_error(compiled(x), model(x)) < 1e-5


class RepeatedKeys(nn.Module):
    """Grouped-query attention as Llama writes it: each key and value head repeated for its group of query
    heads (`repeat_kv`: unsqueeze, expand, reshape), then ATen's call, with a padding mask; `tiled` repeats
    the heads as a whole instead (`repeat`), which is not what `enable_gqa` computes."""

    def __init__(self, tiled: bool = False) -> None:
        super().__init__()
        self.tiled = tiled

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, kv_heads, keys, dim = k.shape
        group = q.shape[1] // kv_heads
        if self.tiled:
            k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
        else:
            k, v = (
                t[:, :, None].expand(b, kv_heads, group, keys, dim).reshape(b, -1, keys, dim) for t in (k, v)
            )
        return sdpa(q, k, v, attn_mask=keep, scale=0.3)


@pytest.mark.parametrize(
    "tiled, dtype, layouts",
    [
        (False, torch.float32, "on"),  # the generated kernel reads each group's key head
        (False, torch.bfloat16, "auto"),  # ATen's call with enable_gqa (CPU: not routed)
        (True, torch.float32, "on"),  # heads tiled as a whole: not grouped heads, left as they are
    ],
)
def test_repeated_key_heads_are_read_in_place(tiled: bool, dtype: torch.dtype, layouts: str) -> None:
    torch.manual_seed(0)
    model = RepeatedKeys(tiled)

    def inputs() -> tuple[torch.Tensor, ...]:
        q, k, v = torch.randn(2, 8, 3, 16), torch.randn(2, 2, 10, 16), torch.randn(2, 2, 10, 16)
        return q.to(dtype), k.to(dtype), v.to(dtype), torch.rand(2, 1, 3, 10) > 0.3

    with knobs.scope(gpu_layouts=layouts):
        compiled = pygraph.export_and_compile(model, inputs(), target="emulator")
    torch_ir = compiled.ir("torch")
    grouped = "torch.aten.expand" not in torch_ir and "torch.aten.repeat" not in torch_ir
    assert grouped != tiled and torch_ir.count("torch.aten.scaled_dot_product_attention") == 1
    for _ in range(2):
        x = inputs()
        exact = model(*(t.float() if t.is_floating_point() else t for t in x))
        bound = 1e-5 if dtype == torch.float32 else 1e-2  # (bfloat16 inputs: 8-bit mantissas, eps 7.8e-3)
        assert relative_error(compiled(*x).float(), exact) < bound
