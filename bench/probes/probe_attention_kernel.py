"""Attention three ways through pygraph, per shape of the benchmark's models, with TF32 matmuls off and on:
the generated flash-attention kernel (PYGRAPH_ATTENTION=kernel), the decomposition into matmul, softmax
kernel, matmul (decompose) and ATen's fused call (aten). Each variant is `sdpa(q, k, v, mask)` compiled
by pygraph (TF32 is read as it compiles) and timed in GPU time per call (the benchmark's profiler trace: the union of
kernel time over 20 calls, so launch costs do not count; what pygraph runs besides the attention, such as
the aten variant's mask preparation, does). The relative error is against float64 eager. Run on the GPU
machine from the repository root: `PYTHONPATH=. python bench/probes/probe_attention_kernel.py`; one line
per shape and TF32 setting. The numbers set `auto`'s rule in `pygraph/frontend/attention.py` and the
blocks of `attention_blocks` in `pygraph/passes/attention_kernel.py`."""

import torch
import torch.nn.functional as F
from torch import nn

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error
from pygraph.passes import attention_kernel
from pygraph.tools.bench import _profile

SHAPES = [  # model, batch, heads, queries, keys, head dim, mask
    ("vit_tiny", 1, 3, 197, 197, 64, None),
    ("bert_base", 1, 12, 128, 128, 64, "pad"),
    ("gpt2", 1, 12, 32, 32, 64, "causal"),
    ("mobilebert_qa_I128", 128, 4, 128, 128, 32, "pad"),
    ("distilgpt2_I16", 16, 12, 128, 128, 64, "causal"),  # GPT-2 passes is_causal without a padding mask
    ("mt5_I16", 16, 6, 128, 128, 64, "full"),  # position bias and mask per head
    ("blenderbot_small_I64", 64, 16, 128, 128, 32, "pad"),
    ("longer", 4, 16, 512, 512, 64, "pad"),
    ("longer causal", 1, 12, 1024, 1024, 64, "causal"),
]
VARIANTS = ("kernel", "decompose", "aten")


class Attention(nn.Module):
    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.causal = causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *mask: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, *mask, is_causal=self.causal)


def inputs(b: int, h: int, lq: int, lk: int, dim: int, kind: str | None) -> tuple[torch.Tensor, ...]:
    q, k, v = (torch.randn(b, h, n, dim, device="cuda") for n in (lq, lk, lk))
    if kind == "pad":  # HF's additive padding mask: the last eighth of the keys hidden by finfo.min
        mask = torch.zeros(b, 1, 1, lk, device="cuda")
        mask[:, :, :, lk - lk // 8 :] = torch.finfo(torch.float32).min
        return q, k, v, mask
    if kind == "full":
        return q, k, v, torch.randn(b, h, lq, lk, device="cuda")
    return q, k, v


def routed(compiled: pygraph.CompiledModel) -> str:
    """How the compiled model computes the attention, from its tensor-level IR."""
    text = compiled.ir("pygraph")
    if "pygraph.attention_kernel" in text:
        return "kernel"
    return "aten" if "scaled_dot_product_attention" in text else "decompose"


def measure(name: str, b: int, h: int, lq: int, lk: int, dim: int, kind: str | None, tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    args = inputs(b, h, lq, lk, dim, kind)
    model = Attention(kind == "causal")
    with torch.no_grad():
        ref = model(*(x.double() for x in args))
    results = []
    for variant in VARIANTS:
        with knobs.scope(attention=variant), torch.no_grad():
            compiled = pygraph.export_and_compile(model, args, target="cuda")
            if routed(compiled) != variant:
                raise RuntimeError(
                    f"{name}: PYGRAPH_ATTENTION={variant} compiled the attention as {routed(compiled)}"
                )
            us = _profile(compiled, [args], calls=20)["gpu_ms"] * 1e3
            err = relative_error(compiled(*args).double(), ref)
        results.append(f"{variant} {us:8.1f} us (err {err:.0e})")
    print(
        f"{name:22s} B{b:<4d} H{h:<3d} L{lq:<5d} S{lk:<5d} D{dim:<4d} mask={kind!s:7s} "
        f"tf32={'on ' if tf32 else 'off'}: {', '.join(results)}",
        flush=True,
    )


BLOCKS = [
    (16, 64, 4, 2),
    (32, 64, 4, 2),
    (64, 64, 4, 2),
    (128, 64, 8, 2),
    (64, 32, 4, 2),
    (32, 32, 2, 2),
    (64, 64, 4, 3),
]


def sweep_blocks(name: str, b: int, h: int, lq: int, lk: int, dim: int, kind: str | None) -> None:
    """The generated kernel's time per (BLOCK_M, BLOCK_N, warps, stages), TF32 on (the benchmark's)."""
    torch.backends.cuda.matmul.allow_tf32 = True
    args = inputs(b, h, lq, lk, dim, kind)
    model = Attention(kind == "causal")
    chosen = attention_kernel.attention_blocks
    results = []
    for bm, bn, warps, stages in BLOCKS:
        attention_kernel.attention_blocks = lambda heads, q, k, d, bm=bm, bn=bn, w=warps, st=stages: (
            min(bm, max(16, 1 << (q - 1).bit_length())),
            min(bn, max(16, 1 << (k - 1).bit_length())),
            w,
            st,
        )
        try:
            with knobs.scope(attention="kernel"), torch.no_grad():
                compiled = pygraph.export_and_compile(model, args, target="cuda")
                results.append(
                    f"{bm}/{bn}/{warps}/{stages} {_profile(compiled, [args], calls=20)['gpu_ms'] * 1e3:.1f}"
                )
        finally:
            attention_kernel.attention_blocks = chosen
    print(f"{name:22s} blocks (M/N/warps/stages us): {', '.join(results)}", flush=True)


if __name__ == "__main__":
    torch.manual_seed(0)
    saved = torch.backends.cuda.matmul.allow_tf32
    try:
        for shape in SHAPES:
            for tf32 in (False, True):
                measure(*shape, tf32)
        for shape in SHAPES:
            sweep_blocks(*shape)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved
