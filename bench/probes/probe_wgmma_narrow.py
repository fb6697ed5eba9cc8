"""tl.dot of a block of 64 rows by a narrow block of a half-precision weight on sm_90: which cases fault.

The few-row matmul kernel made an illegal memory access (or wrong values) on an H100 with blocks of 64
rows (warp-group `wgmma` instructions; blocks of 16 and 32 rows use `mma.sync`) in a gated MLP whose
products read 37 and 45 values per row. This probe reduces it to one Triton kernel of the same form: the
rows [M, K] (masked to M of BM), one or two weights, each [K, N] (N contiguous) or [N, K] (K contiguous),
looped over K in steps of BK, accumulated in float32 and multiplied (two weights) as the gated MLP's
epilogue does; compared with torch in float32. A fault leaves the context unusable, so the cases run in a
worker process that is started again after the case that faulted.

GPU machine: `python3 bench/probes/probe_wgmma_narrow.py [float16|tf32]` (one line per case).
"""

import itertools
import subprocess
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _product(
    x,
    w,
    rm,
    rn,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    KN: tl.constexpr,
    TF32: tl.constexpr,
):
    acc = tl.zeros([BM, BN], tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        a = tl.load(x + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        if KN:
            b = tl.load(
                w + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0
            )
        else:
            b = tl.load(
                w + k[:, None] + rn[None, :] * K, mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0
            )
        acc = tl.dot(a, b, acc, input_precision="tf32" if TF32 else "ieee")
    return acc


@triton.jit
def _kernel(
    x,
    w0,
    w1,
    out,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    KN0: tl.constexpr,
    KN1: tl.constexpr,
    TWO: tl.constexpr,
    TF32: tl.constexpr,
):
    rm = tl.program_id(1) * BM + tl.arange(0, BM)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = _product(x, w0, rm, rn, M, N, K, BM, BN, BK, KN0, TF32)
    if TWO:
        acc = acc * _product(x, w1, rm, rn, M, N, K, BM, BN, BK, KN1, TF32)
    tl.store(out + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def case(
    bm: int, bn: int, bk: int, m: int, n: int, k: int, layouts: list[str], stages: int, kind: str
) -> str:
    torch.manual_seed(0)
    dtype = torch.float16 if kind == "float16" else torch.float32
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    weights = [torch.randn(k, n, device="cuda", dtype=dtype) / k**0.5 for _ in range(2)]
    stored = [
        w.contiguous() if lay == "kn" else w.t().contiguous()
        for w, lay in zip(weights, (layouts * 2)[:2], strict=True)
    ]
    out = torch.empty(m, n, device="cuda")
    two = len(layouts) == 2
    kn = [lay == "kn" for lay in layouts] + [True]
    _kernel[(triton.cdiv(n, bn), triton.cdiv(m, bm))](
        x,
        stored[0],
        stored[1],
        out,
        m,
        n,
        k,
        bm,
        bn,
        bk,
        kn[0],
        kn[1],
        two,
        kind == "tf32",
        num_warps=8 if bm == 128 else 4,
        num_stages=stages,
    )
    ref = x.float() @ weights[0].float()
    if two:
        ref = ref * (x.float() @ weights[1].float())
    err = ((out - ref).norm() / ref.norm()).item()
    return "ok" if err < 1e-2 else f"WRONG rel err {err:.2e}"


def cases(kind: str) -> list[tuple]:
    """float16: the few-row kernel's cases; tf32: float32 operands in TF32 dots, blocks of 64 and 128 rows
    (the attention kernel's scores and values, in that order, read a K-major and an N-major operand)."""
    if kind == "float16":
        shapes, rows, columns, stages = (
            [(33, 37, 45), (64, 64, 128), (64, 2048, 128)],
            [32, 64],
            [16, 32],
            [1, 4],
        )
    else:
        shapes, rows, columns, stages = (
            [(64, 64, 128), (128, 64, 128), (256, 128, 64)],
            [64, 128],
            [16, 32, 64],
            [2],
        )
    return [
        (bm, bn, 64 if k < 128 else 128, m, n, k, layouts, st, kind)
        for (m, k, n), bm, bn, layouts, st in itertools.product(
            shapes, rows, columns, ["nk", "kn", "nk,kn", "kn,nk", "nk,nk", "kn,kn"], stages
        )
    ]


def describe(c: tuple) -> str:
    return f"{c[8]} BM {c[0]:3} BN {c[1]:2} BK {c[2]:3} M {c[3]} N {c[4]} K {c[5]} {c[6]:5} stages {c[7]}"


def worker(kind: str, start: int) -> None:
    for i, c in enumerate(cases(kind)[start:], start):
        print(f"{i} {describe(c)}: {case(*c[:6], c[6].split(','), *c[7:])}", flush=True)


def main(kind: str) -> None:
    done = 0
    while done < len(cases(kind)):
        run = subprocess.run(
            [sys.executable, __file__, kind, str(done)], capture_output=True, text=True, timeout=300
        )
        lines = [line for line in run.stdout.splitlines() if line[:1].isdigit()]
        for line in lines:
            print(line.split(" ", 1)[1], flush=True)
        done += len(lines)
        if run.returncode != 0:
            error = next(
                (line for line in run.stderr.splitlines() if "Error" in line), f"exit {run.returncode}"
            )
            print(f"{describe(cases(kind)[done])}: FAULT {error}", flush=True)
            done += 1


if __name__ == "__main__":
    if len(sys.argv) > 2:
        worker(sys.argv[1], int(sys.argv[2]))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "float16")
