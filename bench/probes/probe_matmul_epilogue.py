"""Whether a generated matmul with its epilogue fused should replace the vendor call plus an epilogue kernel
(issue 4's "Triton matmul with fused epilogue where it measures faster"), on the benchmark models' MLP
shapes: a linear layer with its bias, then GELU.

Per shape, in GPU time per call (`timing.gpu_us`, replayed from a CUDA graph) with TF32 dots (the
benchmark's setting):
- vendor + kernel: `F.linear` (cuBLASLt, bias in its epilogue) then GELU, as pygraph runs it today;
- vendor epilogue: `torch._addmm_activation(..., use_gelu=True)` (cuBLASLt's GELU epilogue, one ATen op;
  its GELU is the tanh approximation, so it only stands in for models that use that one, as GPT-2 does);
- generated: a Triton matmul whose epilogue adds the bias and applies GELU, per block configuration.
Not used by the compiler yet: the data for deciding whether to build it (docs/status.md, next steps).

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_matmul_epilogue.py`
(output: bench/results/probe-matmul-epilogue-h200.log). Under `TRITON_INTERPRET=1` with `--check` it checks
the generated kernel against eager on the CPU.
"""

import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

SHAPES = [  # model, rows, inputs, outputs, GELU approximation
    ("gpt2", 32, 768, 3072, "tanh"),
    ("bert_base", 128, 768, 3072, "none"),
    ("vit_tiny", 197, 192, 768, "none"),
    ("distilgpt2_I16", 2048, 768, 3072, "tanh"),
    ("mobilebert_qa_I128", 16384, 128, 512, "none"),
]
CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages
    (16, 64, 64, 4, 3),
    (32, 64, 32, 4, 3),
    (64, 64, 32, 4, 3),
    (64, 128, 32, 4, 3),
    (128, 64, 32, 4, 3),
    (128, 128, 32, 8, 3),
]


@triton.jit
def linear_gelu(
    x, w, b, y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TANH: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    """y = gelu(x @ w.T + b): x [M, K], w [N, K] (a linear layer's weight), row-major."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for start in range(0, K, BK):
        k = start + ks
        a = tl.load(
            x + rows[:, None] * K + k[None, :], mask=(rows[:, None] < M) & (k[None, :] < K), other=0.0
        )
        bt = tl.load(
            w + cols[None, :] * K + k[:, None], mask=(cols[None, :] < N) & (k[:, None] < K), other=0.0
        )
        acc += tl.dot(a, bt, input_precision=PRECISION)
    acc += tl.load(b + cols, mask=cols < N, other=0.0)[None, :]
    if TANH:
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = 0.5 * acc * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))
    else:
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    tl.store(y + rows[:, None] * N + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


def generated(x, w, b, y, approximate: str, config: tuple, precision: str) -> None:
    bm, bn, bk, warps, stages = config
    (m, k), n = x.shape, w.shape[0]
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    linear_gelu[grid](
        x, w, b, y, m, n, k, BM=bm, BN=bn, BK=bk, TANH=approximate == "tanh", PRECISION=precision,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip


def check() -> None:
    """The generated kernel against eager on the CPU (TRITON_INTERPRET=1), IEEE dots."""
    torch.manual_seed(0)
    for approximate in ("none", "tanh"):
        x, w, b = torch.randn(37, 40), torch.randn(50, 40) / 6, torch.randn(50)
        y = torch.empty(37, 50)
        generated(x, w, b, y, approximate, (16, 32, 16, 4, 1), "ieee")
        ref = F.gelu(F.linear(x, w, b), approximate=approximate)
        print(f"gelu={approximate}: relative error {float((y - ref).norm() / ref.norm()):.1e}")


def measure(name: str, m: int, k: int, n: int, approximate: str) -> None:
    from timing import gpu_us

    x = torch.randn(m, k, device="cuda")
    w, b = torch.randn(n, k, device="cuda") / k**0.5, torch.randn(n, device="cuda")
    y = torch.empty(m, n, device="cuda")
    ref = F.gelu(F.linear(x.double(), w.double(), b.double()), approximate=approximate).float()

    def vendor() -> None:
        F.gelu(F.linear(x, w, b), approximate=approximate)

    def vendor_epilogue() -> None:
        torch._addmm_activation(b, x, w.t(), use_gelu=True)

    line = [f"vendor + kernel {gpu_us(vendor):.1f}"]
    if approximate == "tanh":
        line.append(f"vendor epilogue {gpu_us(vendor_epilogue):.1f}")
    for config in CONFIGS:

        def run(config: tuple = config) -> None:
            generated(x, w, b, y, approximate, config, "tf32")

        us = gpu_us(run)
        err = float((y - ref).norm() / ref.norm())
        line.append(f"{'/'.join(map(str, config))} {us:.1f} (err {err:.0e})")
    print(f"{name:20s} [{m}, {k}] x [{k}, {n}]: " + ", ".join(line), flush=True)


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    for shape in SHAPES:
        measure(*shape)


if __name__ == "__main__":
    check() if "--check" in sys.argv else main()
