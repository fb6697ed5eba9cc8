"""Triton's `%` of floats against libdevice's fmod and torch.fmod (C's fmod, exact) on the GPU: elements
that differ (value or sign of zero), with and without contraction, for quotients of every size.

On the GPU machine: `python3 bench/probes/probe_fmod.py` (output: bench/results/fmod-s37-h100.log).
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

N = 1 << 20


@triton.jit
def percent(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    tl.store(out + i, tl.load(a + i, mask=mask) % tl.load(b + i, mask=mask), mask=mask)


@triton.jit
def library(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    tl.store(out + i, libdevice.fmod(tl.load(a + i, mask=mask), tl.load(b + i, mask=mask)), mask=mask)


def main() -> None:
    torch.manual_seed(0)
    divisors = torch.rand(N, device="cuda") + 0.1
    cases = {
        "small": (torch.randn(N, device="cuda") * 3, torch.randn(N, device="cuda")),
        "quotients ~1e6": (torch.randn(N, device="cuda") * 1e6, divisors),
        "quotients ~1e30": (torch.randn(N, device="cuda") * 1e30, divisors),
        "exact multiples": (
            torch.randint(-8, 8, (N,), device="cuda") * 0.5,
            torch.where(torch.rand(N, device="cuda") < 0.5, -0.5, 0.5),
        ),
    }
    for name, (a, b) in cases.items():
        want = torch.fmod(a, b)
        for label, kernel in (("%", percent), ("libdevice.fmod", library)):
            for fusion in (True, False):
                got = torch.empty_like(a)
                kernel[(N // 1024,)](a, b, got, N, BLOCK=1024, enable_fp_fusion=fusion)
                same = (got == want) & (got.signbit() == want.signbit()) | (got.isnan() & want.isnan())
                bad = (~same).nonzero().flatten()[:2].tolist()
                examples = [
                    f"fmod({a[j].item():.7g}, {b[j].item():.7g}) = {want[j].item():.7g}, got {got[j].item():.7g}"
                    for j in bad
                ]
                print(
                    f"{name:16s} {label:15s} contraction {fusion!s:5s}: {int((~same).sum()):8d} of {N} differ; {examples}"
                )


if __name__ == "__main__":
    main()
