"""C's pow (libdevice's, which eager's CUDA kernels call) against `exp(y * log|x|)` and torch.pow on the GPU:
per case, the elements where each differs from eager, its largest distance from eager in ulps, and the
elements where each (eager too) differs from the correctly rounded power (float64's, rounded), with and
without contraction (the `enable_fp_fusion` pygraph compiles most kernels with).

On the GPU machine: `python3 bench/probes/probe_pow.py` (output: bench/results/pow-s41-h100.log).
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

N = 1 << 20


@triton.jit
def library(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    tl.store(out + i, libdevice.pow(tl.load(a + i, mask=mask), tl.load(b + i, mask=mask)), mask=mask)


@triton.jit
def exp_log(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    x, y = tl.load(a + i, mask=mask), tl.load(b + i, mask=mask)
    tl.store(out + i, tl.exp(y * tl.log(tl.abs(x))), mask=mask)


def ulps(a: torch.Tensor, b: torch.Tensor) -> int:
    """The largest distance between `a` and `b` in units of the last place (float32 bits as integers)."""
    bits = {torch.float32: torch.int32, torch.float64: torch.int64}[a.dtype]
    ia, ib = a.view(bits).to(torch.int64), b.view(bits).to(torch.int64)
    finite = a.isfinite() & b.isfinite()
    return int((ia - ib)[finite].abs().max()) if finite.any() else 0


def main() -> None:
    torch.manual_seed(0)
    positive = torch.rand(N, device="cuda") * 4 + 0.1
    cases = {
        "x in (0.1, 4.1), y ~ 8 randn": (positive, torch.randn(N, device="cuda") * 8),
        "2 ** integers": (
            torch.full((N,), 2.0, device="cuda"),
            torch.randint(-60, 60, (N,), device="cuda").float(),
        ),
        "x in (1e-3, 1e3), y ~ randn": (
            10 ** (torch.rand(N, device="cuda") * 6 - 3),
            torch.randn(N, device="cuda"),
        ),
        "negative x, integer y": (-positive, torch.randint(-9, 9, (N,), device="cuda").float()),
    }
    for name, (x, y) in cases.items():
        want = torch.pow(x, y)
        exact = torch.pow(x.double(), y.double()).float()
        line = [f"{name}: eager not correctly rounded {int((want != exact).sum())}"]
        for kernel in (library, exp_log):
            for fusion in (True, False):
                if kernel is exp_log and not fusion:
                    continue
                got = torch.empty_like(x)
                kernel[(N // 1024,)](
                    x, y, got, N, BLOCK=1024, enable_fp_fusion=fusion, enable_reflect_ftz=False
                )
                same = (got == want) | (got.isnan() & want.isnan())
                line.append(
                    f"{kernel.__name__}{'' if fusion else ' (no contraction)'}: {int((~same).sum())} differ from "
                    f"eager (at most {ulps(got, want)} ulp), {int((got != exact).sum())} not correctly rounded"
                )
        print("; ".join(line))
    x, y = positive.double(), torch.randn(N, device="cuda", dtype=torch.float64) * 8
    got = torch.empty_like(x)
    library[(N // 1024,)](x, y, got, N, BLOCK=1024, enable_reflect_ftz=False)
    print(f"float64 x ** y: libdevice {int((got != torch.pow(x, y)).sum())} differ from eager")


if __name__ == "__main__":
    main()
