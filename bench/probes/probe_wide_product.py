"""A language model's logits, [M, 768] by a [50257, 768] weight (TF32): can a generated Triton product write
the unaligned [M, 50257] rows directly as fast as cuBLAS's aligned split (`frontend/align_matmuls.py`:
the prefix of 50256 columns into a temporary, the rest, and a cat into the output, which holds the logits
twice: gpt2's peak memory)? Against cuBLAS's unaligned kernels (what ro calls) and the split, for M = 32
(gpt2) and 2048 (distilgpt2_I16), over a few block shapes.

On the GPU machine: `python3 bench/probes/probe_wide_product.py` (output:
bench/results/probe-wide-product-h200.log).
"""

import torch
import triton
import triton.language as tl
from timing import gpu_us


@triton.jit
def product(x, w, out, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(1) * BM + tl.arange(0, BM)
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        a = tl.load(x + rows[:, None] * K + ks[None, :], mask=rows[:, None] < M, other=0.0)
        b = tl.load(w + cols[None, :] * K + ks[:, None], mask=cols[None, :] < N, other=0.0)
        acc += tl.dot(a, b, input_precision="tf32")
    tl.store(out + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


BLOCKS = [  # BM, BN, BK, warps, stages
    (32, 64, 64, 4, 3),
    (32, 128, 64, 4, 3),
    (32, 128, 32, 4, 4),
    (32, 256, 32, 8, 3),
    (64, 128, 32, 4, 4),
    (128, 128, 32, 8, 3),
    (128, 256, 32, 8, 3),
]


def logits(m: int, k: int = 768, n: int = 50257) -> None:
    aligned = n - n % 4
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    out = torch.empty(m, n, device="cuda")
    ref = x.double() @ w.double().t()
    print(f"== M={m} K={k} N={n}")
    print(f"   cuBLAS mm unaligned          {gpu_us(lambda: torch.mm(x, w.t())):8.2f} us")
    split = lambda: torch.cat([torch.mm(x, w[:aligned].t()), torch.mm(x, w[aligned:].t())], -1)  # noqa: E731
    print(f"   cuBLAS aligned split + cat   {gpu_us(split):8.2f} us")
    for bm, bn, bk, warps, stages in BLOCKS:
        if bm > m:
            continue
        grid = (triton.cdiv(n, bn), triton.cdiv(m, bm))

        def run(bm=bm, bn=bn, bk=bk, warps=warps, stages=stages, grid=grid) -> None:
            product[grid](x, w, out, m, n, k, bm, bn, bk, num_warps=warps, num_stages=stages)

        us = gpu_us(run)
        err = ((out.double() - ref).norm() / ref.norm()).item()
        print(f"   triton BM={bm} BN={bn} BK={bk} w={warps} s={stages}  {us:8.2f} us  (error {err:.1e})")


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    for m in (32, 2048):
        logits(m)


if __name__ == "__main__":
    main()
