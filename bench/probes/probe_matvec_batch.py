"""Products of a few rows (a decoding step of B sequences: every projection multiplies B rows by its weight)
as matrix-vector kernels that load a tile of the weight once and multiply it by each row in turn, against
cuBLAS, in bfloat16 with the weights streamed from memory (each call reads another copy, more than L2
holds). Variants: the rows in a loop over each program's BN weight rows loaded whole (`loopBN`), and a
tensor-core tile (`tl.dot`, the rows padded to 16) of BN weight rows with a pipelined loop over K in
blocks of BK (`dotBN/BK/stages`). The first run (`probe-matvec-batch-s29a-h200.log`) had the loop with two
weight rows a program, unrolled or not, against one tensor-core tile.

On the GPU machine: `python3 bench/probes/probe_matvec_batch.py [--shapes NxK,...] [--rows 4] [--wide |
--many] [--split]` (output: bench/results/probe-matvec-batch-s29b-h200.log, `-s30-h100.log` with `--wide`,
`-s30-many-h100.log` with `--many`, `-s31-split-h100.log` with `--split`: K split across programs, float32
parts summed by a second kernel): GPU microseconds per product, the best variants first.
"""

import argparse
import functools
import itertools

import torch
import triton
import triton.language as tl
from timing import gpu_us

SHAPES = [(512, 2048), (2048, 2048), (11264, 2048), (2048, 5632), (4096, 4096), (32000, 2048)]  # (N, K)
ROWS = [2, 4, 8]
COPIES_BYTES = 400 << 20  # weights cycled through per shape: well beyond the H200's 50 MB of L2


@triton.jit
def rows_loop(
    x,
    w,
    out,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    KP: tl.constexpr,
    BN: tl.constexpr,
):
    pid = tl.program_id(0)
    n = pid * BN + tl.arange(0, BN)
    k = tl.arange(0, KP)
    wt = tl.load(w + n[:, None] * K + k[None, :], mask=(n[:, None] < N) & (k[None, :] < K), other=0.0).to(
        tl.float32
    )
    for m in range(M):
        xm = tl.load(x + m * K + k, mask=k < K, other=0.0).to(tl.float32)
        acc = tl.sum(wt * xm[None, :], 1)
        tl.store(out + m * N + n, acc.to(tl.bfloat16), mask=n < N)


@triton.jit
def rows_dot(
    x,
    w,
    out,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    n = pid * BN + tl.arange(0, BN)
    m = tl.arange(0, BM)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in tl.range(0, K, BK, num_stages=STAGES):
        k = k0 + tl.arange(0, BK)
        xt = tl.load(x + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        wt = tl.load(w + n[None, :] * K + k[:, None], mask=(n[None, :] < N) & (k[:, None] < K), other=0.0)
        acc = tl.dot(xt, wt, acc)
    tl.store(out + m[:, None] * N + n[None, :], acc.to(tl.bfloat16), mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def rows_dot_parts(
    x,
    w,
    parts,
    M: tl.constexpr,
    N: tl.constexpr,
    K: tl.constexpr,
    SLICE: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    STAGES: tl.constexpr,
):
    """`rows_dot` over the K slice `program_id(1)` (SLICE values, a multiple of BK): float32 parts [S, M, N]."""
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    s = tl.program_id(1)
    m = tl.arange(0, BM)
    acc = tl.zeros((BM, BN), tl.float32)
    for k0 in tl.range(0, SLICE, BK, num_stages=STAGES):
        k = s * SLICE + k0 + tl.arange(0, BK)
        xt = tl.load(x + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
        wt = tl.load(w + n[None, :] * K + k[:, None], mask=(n[None, :] < N) & (k[:, None] < K), other=0.0)
        acc = tl.dot(xt, wt, acc)
    tl.store(parts + s * M * N + m[:, None] * N + n[None, :], acc, mask=(m[:, None] < M) & (n[None, :] < N))


@triton.jit
def combine_parts(parts, out, M: tl.constexpr, N: tl.constexpr, S: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for s in tl.static_range(S):
        acc += tl.load(parts + s * M * N + i, mask=i < M * N, other=0.0)
    tl.store(out + i, acc.to(tl.bfloat16), mask=i < M * N)


# Tensor-core tiles tried: (BN, BK, stages, warps); `--wide` tries more (thirtieth session, the kernels'
# blocks for products of a few rows, `matmul_kernel.few_row_blocks`).
TILES = list(itertools.product((16, 32), (256, 512), (3, 4), (4,)))
WIDE_TILES = list(itertools.product((16, 32), (128, 256, 512), (3, 4, 5), (4, 8)))
# `--many`: tiles for 16 to 64 rows (all in one block of rows: the weight still streams once)
MANY_TILES = list(itertools.product((16, 32, 64), (128, 256), (3, 4), (4,)))
# `--split`: the K slices (S) of a split-K tile, parts in float32 and a second kernel summing them
SPLIT_TILES = list(itertools.product((2, 4, 8), (16, 32), (128, 256), (4,)))


def variants(
    x: torch.Tensor,
    weights: list[torch.Tensor],
    out: torch.Tensor,
    tiles: list[tuple[int, ...]],
    loops: bool,
    split_tiles: list[tuple[int, ...]] = (),
) -> dict[str, float]:
    """GPU microseconds of cuBLAS and each kernel computing `out = x @ weight.T`, each call on another copy;
    each checked against float32 on the first."""
    (m, k), n, copies = x.shape, out.shape[1], len(weights)
    reference = x.float() @ weights[0].float().T
    width = triton.next_power_of_2(k)
    calls = iter(range(1 << 30))

    def cublas() -> None:
        torch.mm(x, weights[next(calls) % copies].T, out=out)

    def loop(block_n: int) -> None:
        warps = max(1, min(8, block_n * width // 1024))
        rows_loop[(triton.cdiv(n, block_n),)](
            x, weights[next(calls) % copies], out, m, n, k, width, block_n, num_warps=warps
        )

    def dot(block_n: int, block_k: int, stages: int, warps: int) -> None:
        block_m = max(16, triton.next_power_of_2(m))  # (all rows in one block)
        rows_dot[(triton.cdiv(n, block_n),)](
            x, weights[next(calls) % copies], out, m, n, k, block_m, block_n, block_k, stages, num_warps=warps
        )

    def split(slices: int, block_n: int, block_k: int, stages: int) -> None:
        block_m = max(16, triton.next_power_of_2(m))
        size = triton.cdiv(triton.cdiv(k, slices), block_k) * block_k
        rows_dot_parts[(triton.cdiv(n, block_n), triton.cdiv(k, size))](
            x, weights[next(calls) % copies], parts, m, n, k, size, block_m, block_n, block_k, stages
        )
        combine_parts[(triton.cdiv(m * n, 1024),)](parts, out, m, n, triton.cdiv(k, size), 1024)

    fns = {"cuBLAS": cublas}
    if split_tiles:
        parts = torch.empty(max(s for s, *_ in split_tiles), m, n, device=x.device)
        for slices, bn, bk, stages in split_tiles:
            fns[f"split{slices}/dot{bn}/{bk}/{stages}"] = functools.partial(split, slices, bn, bk, stages)
    if loops:
        fns.update({f"loop{bn}": functools.partial(loop, bn) for bn in (2, 4, 8, 16) if bn * width <= 32768})
    for bn, bk, stages, warps in tiles:
        name = f"dot{bn}/{bk}/{stages}" + (f"/w{warps}" if warps != 4 else "")
        fns[name] = functools.partial(dot, bn, bk, stages, warps)
    times = {}
    for name, fn in fns.items():
        calls = iter(range(1 << 30))  # (the first call reads copy 0)
        try:
            fn()
        except Exception as error:  # (a tile too large for shared memory)
            print(f"  {name}: {str(error).splitlines()[0][:100]}")
            continue
        torch.cuda.synchronize()
        error = ((out.float() - reference).abs().max() / reference.abs().max()).item()
        assert error < 2e-2, (name, n, k, m, error)
        times[name] = gpu_us(fn, reps=min(copies, 40))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", help="N x K of each weight, e.g. 2048x5632,3072x2048 (default: SHAPES)")
    parser.add_argument("--rows", default=",".join(map(str, ROWS)))
    parser.add_argument("--wide", action="store_true", help="more tiles (WIDE_TILES), no loop variants")
    parser.add_argument("--many", action="store_true", help="tiles for many rows (MANY_TILES), no loops")
    parser.add_argument("--split", action="store_true", help="also split-K tiles (SPLIT_TILES), no loops")
    args = parser.parse_args()
    shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",")] if args.shapes else SHAPES
    tiles = WIDE_TILES if args.wide else MANY_TILES if args.many else TILES
    torch.manual_seed(0)
    for n, k in shapes:
        copies = max(2, COPIES_BYTES // (n * k * 2))
        weights = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5 for _ in range(copies)]
        for m in map(int, args.rows.split(",")):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            loops = not (args.wide or args.many or args.split)
            times = variants(x, weights, out, tiles, loops, SPLIT_TILES if args.split else [])
            best = sorted(times, key=times.get)
            print(
                f"{n:>5} x {k:<5} rows {m}: cuBLAS {times['cuBLAS']:.2f} us; best "
                + ", ".join(f"{name} {times[name]:.2f}" for name in best[:4])
                + "; all "
                + " ".join(f"{name}={t:.1f}" for name, t in times.items()),
                flush=True,
            )
        del weights


if __name__ == "__main__":
    main()
