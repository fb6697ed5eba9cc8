"""Attention as one fused ATen call (`scaled_dot_product_attention`, fp32: the memory-efficient kernel)
against its decomposition into TF32 batched matmuls around a softmax, per shape, in GPU time per call
(each variant replayed from a CUDA graph of 20 calls, so launch costs do not count). Run on the GPU
machine; one line per shape. The decomposition's softmax reads the scores once with the mask added
(`softmax(s + mask)`, what one generated kernel does) or without a mask."""

import torch
import torch.nn.functional as F
from timing import gpu_us

SHAPES = [  # batch, heads, queries, keys, head dim, mask
    (128, 4, 128, 128, 32, "pad"),  # mobilebert_qa_I128
    (1, 12, 128, 128, 64, "pad"),  # bert_base
    (16, 12, 128, 128, 64, "causal"),  # distilgpt2_I16
    (64, 16, 128, 128, 32, "pad"),  # blenderbot_small_I64
    (16, 6, 128, 128, 64, "full"),  # mt5_I16 (position bias per head)
    (1, 3, 197, 197, 64, None),  # vit_tiny
    (1, 12, 32, 32, 64, "causal"),  # gpt2
    (4, 16, 512, 512, 64, "pad"),
    (1, 12, 1024, 1024, 64, "causal"),
    (2, 32, 2048, 2048, 128, "causal"),
]


def measure(b: int, h: int, lq: int, lk: int, dim: int, kind: str | None) -> None:
    q, k, v = (torch.randn(b, h, n, dim, device="cuda") for n in (lq, lk, lk))
    if kind == "pad":
        mask = torch.zeros(b, 1, 1, lk, device="cuda")
        mask[:, :, :, lk - lk // 8 :] = -1e9
    elif kind == "causal":
        mask = torch.full((lq, lk), -float("inf"), device="cuda").triu(1)[None, None]
    elif kind == "full":
        mask = torch.randn(b, h, lq, lk, device="cuda")
    else:
        mask = None
    scale = dim**-0.5
    torch.backends.cuda.matmul.allow_tf32 = False
    fused = gpu_us(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))

    def decomposed() -> torch.Tensor:
        s = torch.matmul(q * scale, k.transpose(-1, -2))
        p = torch.softmax(s if mask is None else s + mask, dim=-1)
        return torch.matmul(p, v)

    fp32 = gpu_us(decomposed)
    torch.backends.cuda.matmul.allow_tf32 = True
    tf32 = gpu_us(decomposed)
    fused_tf32 = gpu_us(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    with torch.no_grad():
        ref = F.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), attn_mask=None if mask is None else mask.double()
        )
        err = ((decomposed().double() - ref).norm() / ref.norm()).item()
    scores_mb = b * h * lq * lk * 4 / 2**20
    print(
        f"B{b:<4d} H{h:<3d} L{lq:<5d} S{lk:<5d} D{dim:<4d} mask={kind!s:7s} scores {scores_mb:8.1f} MB: "
        f"sdpa {fused:8.1f} us (tf32 allowed {fused_tf32:8.1f}), decomposed fp32 {fp32:8.1f} us, "
        f"tf32 {tf32:8.1f} us ({fused / tf32:4.2f}x), tf32 rel err {err:.1e}",
        flush=True,
    )


if __name__ == "__main__":
    torch.manual_seed(0)
    for shape in SHAPES:
        measure(*shape)
