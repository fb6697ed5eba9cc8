"""Whether a generated matrix-vector kernel could replace cuBLAS's gemv in mlp-like models: cuBLAS's
`F.linear` of one row (the mlp workload's 512 x 512 layers) against a Triton gemv, alone and with the
previous layer's GELU and layer norm computed in its prologue (each program recomputes the norm of the
512 inputs it reads, so a layer is one launch instead of two). Not used by the compiler yet: the data for
deciding whether to build it (docs/status.md, next steps).

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_gemv.py [--half]`
(output: bench/results/probe-gemv-h200.log; with `--half`, cuBLAS against the kernel's form for float16
and bfloat16 rows at several shapes: probe-gemv-half-s24-h200.log; with `--decoding`, bfloat16 decoding
shapes with the weights streamed from memory: probe-gemv-decoding-s24-h200.log).
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from timing import gpu_us


@triton.jit
def gemv(w, x, b, y, gamma, beta, K: tl.constexpr, BN: tl.constexpr, PROLOGUE: tl.constexpr):
    rows = tl.program_id(0) * BN + tl.arange(0, BN)
    cols = tl.arange(0, K)
    v = tl.load(x + cols).to(tl.float32)
    if PROLOGUE:  # layer_norm(gelu(v)) with weight gamma and bias beta, as the previous layer's kernel does
        v = v * 0.5 * (1.0 + tl.math.erf(v * 0.7071067811865476))
        mean = tl.sum(v, 0) / K
        centered = v - mean
        rstd = tl.math.rsqrt(tl.sum(centered * centered, 0) / K + 1e-5)
        v = centered * rstd * tl.load(gamma + cols) + tl.load(beta + cols)
    weights = tl.load(w + rows[:, None] * K + cols[None, :]).to(tl.float32)
    tl.store(y + rows, tl.sum(weights * v[None, :], 1) + tl.load(b + rows).to(tl.float32))


def half_precision() -> None:
    """cuBLAS against the generated kernel's form (two outputs per program, warps by weight values per
    program) for half-precision rows of the shapes the matvec kernel takes (K <= 1024)."""
    torch.manual_seed(0)
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for n, k in (
            (512, 512),
            (1024, 1024),
            (4096, 1024),
            (1024, 256),
            (32768, 512),
            (2048, 2048),
            (4096, 4096),
        ):
            w, b = (
                torch.randn(n, k, device="cuda", dtype=dtype) / 16,
                torch.randn(n, device="cuda", dtype=dtype),
            )
            x, y = torch.randn(1, k, device="cuda", dtype=dtype), torch.empty(n, device="cuda", dtype=dtype)
            line = f"{str(dtype)[6:]:9s} {n:5d} x {k:4d}: cuBLAS {gpu_us(lambda w=w, x=x, b=b: F.linear(x, w, b)):6.2f} us;"
            for warps in (1, 2, 4, 8):

                def launch(w=w, x=x, b=b, y=y, n=n, k=k, warps=warps) -> None:
                    gemv[(n // 2,)](w, x, b, y, b, b, K=k, BN=2, PROLOGUE=False, num_warps=warps)

                line += f" warps {warps} {gpu_us(launch):6.2f}"
            print(line, flush=True)


def main() -> None:
    torch.manual_seed(0)
    n = k = 512
    w, b = torch.randn(n, k, device="cuda") / 16, torch.randn(n, device="cuda")
    x = torch.randn(1, k, device="cuda")
    gamma, beta = torch.rand(k, device="cuda") + 0.5, torch.randn(k, device="cuda")
    y = torch.empty(n, device="cuda")
    ref = F.linear(x, w, b)[0]
    normed = F.layer_norm(F.gelu(x), (k,), gamma, beta)
    ref_prologue = F.linear(normed, w, b)[0]
    print(f"cuBLAS F.linear(1 x {k}, {n} x {k}): {gpu_us(lambda: F.linear(x, w, b)):.2f} us")
    print(
        f"cuBLAS gelu + layer_norm kernel + F.linear: {gpu_us(lambda: F.linear(F.layer_norm(F.gelu(x), (k,), gamma, beta), w, b)):.2f} us (eager, 3+ kernels)"
    )
    for prologue in (False, True):
        for bn in (2, 4, 8, 16, 32):
            for warps in (1, 2, 4, 8):

                def launch(bn: int = bn, warps: int = warps, p: bool = prologue) -> None:
                    gemv[(n // bn,)](w, x, b, y, gamma, beta, K=k, BN=bn, PROLOGUE=p, num_warps=warps)

                launch()
                err = float(
                    (y - (ref_prologue if prologue else ref)).norm()
                    / (ref_prologue if prologue else ref).norm()
                )
                print(
                    f"triton gemv prologue={prologue!s:5s} BN {bn:2d} warps {warps}: {gpu_us(launch):.2f} us (err {err:.0e})",
                    flush=True,
                )


def decoding() -> None:
    """Decoding-step shapes in bfloat16 with the weights out of L2: each timed call runs the product over
    enough copies of the weight (at least 256 MB, more than the H200's L2) that every copy comes from HBM,
    as a model's successive layers do; time per product."""
    torch.manual_seed(0)
    for n, k in ((2048, 2048), (4096, 4096), (11008, 4096), (4096, 8192), (32000, 4096), (32768, 512)):
        print(_decoding_shape(n, k), "(BN/warps)", flush=True)


def _decoding_shape(n: int, k: int) -> str:
    dtype = torch.bfloat16
    copies = max(1, (256 << 20) // (n * k * 2))
    ws = [torch.randn(n, k, device="cuda", dtype=dtype) / 16 for _ in range(copies)]
    b = torch.randn(n, device="cuda", dtype=dtype)
    x, y = torch.randn(1, k, device="cuda", dtype=dtype), torch.empty(n, device="cuda", dtype=dtype)

    def per_product(fn) -> float:
        return gpu_us(lambda: [fn(w) for w in ws], reps=2) / copies

    line = f"{n:5d} x {k:4d} ({copies} copies): cuBLAS {per_product(lambda w: F.linear(x, w, b)):6.2f} us;"
    for bn in (2, 4, 8):
        for warps in (1, 2, 4, 8):

            def launch(w: torch.Tensor, bn: int = bn, warps: int = warps) -> None:
                gemv[(n // bn,)](w, x, b, y, b, b, K=k, BN=bn, PROLOGUE=False, num_warps=warps)

            try:
                line += f" {bn}/{warps} {per_product(launch):6.2f}"
            except Exception as exc:  # (a tile too large to compile)
                line += f" {bn}/{warps} failed ({type(exc).__name__})"
    return line


if __name__ == "__main__":
    import sys

    {"--half": half_precision, "--decoding": decoding}.get(sys.argv[1] if sys.argv[1:] else "", main)()
