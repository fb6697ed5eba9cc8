"""A product whose output rows are unaligned (N * 4 bytes not a multiple of 16: GPT-2's 50257 words),
written where eager puts it by aligned cuBLAS calls: rows r = j (mod P) form phase j (P = 4 for odd N,
2 for N = 2 mod 4); within a phase every row starts at the same alignment, so its columns from the
first aligned one form an aligned matrix (leading dimension P * N, a multiple of 4), written by one
product; the few columns before and after it are small products of their own. Against the unaligned
product, and the aligned prefix, the rest and a cat (what `frontend/align_matmuls.py` does now).

On the GPU machine: `python3 bench/probes/probe_row_phases.py` (output: bench/results/probe-row-phases-h200.log).
"""

import torch
from probe_out_form import kernels
from timing import gpu_us

PER_ROW = 4  # float32 values per 16 bytes


def phases(n: int) -> int:
    p = 1
    while (p * n) % PER_ROW:
        p += 1
    return p


def runs(m: int, n: int) -> list[tuple[int, int, int]]:
    """(phase, first column, end column) of every product: per phase, its aligned middle and edges."""
    p = phases(n)
    found = []
    for j in range(min(p, m)):
        first = (-j * n) % PER_ROW
        end = first + (n - first) // PER_ROW * PER_ROW
        found += [(j, a, b) for a, b in ((0, first), (first, end), (end, n)) if b > a]
    return found


def phased(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    m, n = out.shape
    p = phases(n)
    for j, a, b in runs(m, n):
        torch.mm(x[j::p], w[a:b].t(), out=out[j::p, a:b])
    return out


def phased_mv(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """The same, each edge column a matrix-vector product (cuBLAS's gemv writes a strided vector)."""
    m, n = out.shape
    p = phases(n)
    for j, a, b in runs(m, n):
        if b - a >= PER_ROW:
            torch.mm(x[j::p], w[a:b].t(), out=out[j::p, a:b])
        else:
            for c in range(a, b):
                torch.mv(x[j::p], w[c], out=out[j::p, c])
    return out


def measure(m: int, n: int, k: int) -> None:
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    out = torch.empty(m, n, device="cuda")
    aligned = n - n % PER_ROW
    unaligned = gpu_us(lambda: torch.mm(x, w.t()))
    split = gpu_us(lambda: torch.cat([torch.mm(x, w[:aligned].t()), torch.mm(x, w[aligned:].t())], -1))
    phase = gpu_us(lambda: phased(x, w, out))
    phase_mv = gpu_us(lambda: phased_mv(x, w, out))
    ref = x.double() @ w.double().t()
    err = ((phased(x, w, out).double() - ref).norm() / ref.norm()).item()
    out.zero_()
    err_mv = ((phased_mv(x, w, out).double() - ref).norm() / ref.norm()).item()
    print(
        f"M={m:5d} N={n} K={k}: unaligned {unaligned:8.2f} us, split+cat {split:8.2f}, "
        f"phases {phase:8.2f} ({len(runs(m, n))} products, error {err:.1e}), "
        f"edges by gemv {phase_mv:8.2f} (error {err_mv:.1e})",
        flush=True,
    )
    if m == 2048 and n == 50257:
        print("  kernels of the phases:", kernels(lambda: phased(x, w, out)))
        print("  kernels with gemv edges:", kernels(lambda: phased_mv(x, w, out)))


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    for n in (50257, 30522, 32001):
        for m in (2048, 512, 128, 64):
            measure(m, n, 768)
    measure(1024, 3, 768)  # a tiny head: every column an edge


if __name__ == "__main__":
    main()
