"""How the matrix-vector kernel should tile a decoding step's products: the kernel's form (BN rows per
program, the whole row loaded at once) against a loop over blocks of BK columns accumulating in float32
(loads of the next block independent of this block's sums, so more of them are in flight), with BN rows
per program, warps and software-pipelining stages swept. bfloat16 weights streamed from memory (each timed
call runs the product over enough copies of the weight to exceed L2, as a model's layers do) at a Llama
decoding step's shapes: q, k and v together (3072 x 2048), the output projection (2048 x 2048), gate and
up together (11264 x 2048), the down projection (2048 x 5632). GPU time per product, and the bandwidth it
reaches.

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_gemv_tiles.py`
(output: bench/results/probe-gemv-tiles-s26-h200.log).
"""

import itertools

import torch
import torch.nn.functional as F  # (the reference)
import triton
import triton.language as tl
from timing import gpu_us


@triton.jit
def whole_row(w, x, y, N: tl.constexpr, K: tl.constexpr, KP: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BN + tl.arange(0, BN)
    cols = tl.arange(0, KP)
    v = tl.load(x + cols, mask=cols < K, other=0.0).to(tl.float32)
    weights = tl.load(
        w + rows[:, None] * K + cols[None, :], mask=(rows[:, None] < N) & (cols[None, :] < K), other=0.0
    )
    tl.store(y + rows, tl.sum(weights.to(tl.float32) * v[None, :], 1).to(y.dtype.element_ty), mask=rows < N)


@triton.jit
def blocked(w, x, y, N: tl.constexpr, K: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros([BN, BK], tl.float32)
    for start in range(0, K, BK):
        cols = start + tl.arange(0, BK)
        v = tl.load(x + cols, mask=cols < K, other=0.0).to(tl.float32)
        weights = tl.load(
            w + rows[:, None] * K + cols[None, :], mask=(rows[:, None] < N) & (cols[None, :] < K), other=0.0
        )
        acc += weights.to(tl.float32) * v[None, :]
    tl.store(y + rows, tl.sum(acc, 1).to(y.dtype.element_ty), mask=rows < N)


def shape(n: int, k: int) -> None:
    dtype = torch.bfloat16
    copies = max(2, (512 << 20) // (n * k * 2))
    ws = [torch.randn(n, k, device="cuda", dtype=dtype) / 16 for _ in range(copies)]
    x, y = torch.randn(1, k, device="cuda", dtype=dtype), torch.empty(n, device="cuda", dtype=dtype)
    ref = F.linear(x, ws[0])[0].float()
    gb = n * k * 2 / 1e9

    def per_product(fn) -> float:
        return gpu_us(lambda: [fn(w) for w in ws], reps=2) / copies

    def report(label: str, launch) -> None:
        try:
            launch(ws[0])
            err = float((y.float() - ref).norm() / ref.norm())
            us = per_product(launch)
            print(f"  {label:34s} {us:7.2f} us {gb / us * 1e6:6.0f} GB/s (err {err:.0e})", flush=True)
        except Exception as exc:  # (a tile too large to compile)
            print(f"  {label:34s} failed ({type(exc).__name__})", flush=True)

    print(f"{n} x {k} bfloat16 ({copies} copies)", flush=True)
    report("cuBLAS", lambda w: torch.mm(x, w.t(), out=y.view(1, n)))
    kp = triton.next_power_of_2(k)
    for bn, warps in itertools.product((2, 4), (2, 4, 8)):
        report(
            f"whole row BN {bn} warps {warps}",
            lambda w, bn=bn, warps=warps: whole_row[(triton.cdiv(n, bn),)](
                w, x, y, N=n, K=k, KP=kp, BN=bn, num_warps=warps
            ),
        )
    for bn, bk, warps, stages in itertools.product((2, 4, 8, 16), (256, 512, 1024), (4, 8), (1, 3)):
        if bn * bk > 16384:
            continue
        report(
            f"blocked BN {bn} BK {bk} warps {warps} stages {stages}",
            lambda w, bn=bn, bk=bk, warps=warps, stages=stages: blocked[(triton.cdiv(n, bn),)](
                w, x, y, N=n, K=k, BN=bn, BK=bk, num_warps=warps, num_stages=stages
            ),
        )


def main() -> None:
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), flush=True)
    for n, k in ((3072, 2048), (2048, 2048), (11264, 2048), (2048, 5632)):
        shape(n, k)


if __name__ == "__main__":
    main()
