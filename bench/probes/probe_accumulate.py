"""A product added to a residual: `mm` into a buffer of its own against cuBLAS accumulating into the
residual's bytes (`addmm_(r, h, w)`, beta = 1), which would let a plan drop the product's buffer (BERT's
MLP down projection: its 0.38 MB are where the arena is fullest).

On the GPU machine: `python3 bench/probes/probe_accumulate.py` (TF32 on, as the benchmark times; GPU time
per call from a CUDA graph, `timing.gpu_us`). Output: bench/results/probe-accumulate-h200.log.
"""

import torch
from timing import gpu_us


def measure(label: str, rows: int, inner: int, outer: int) -> None:
    h = torch.randn(rows, inner, device="cuda")
    w = torch.randn(outer, inner, device="cuda").t()  # a linear's weight, transposed as eager reads it
    r = torch.randn(rows, outer, device="cuda")
    d = torch.empty(rows, outer, device="cuda")
    bias = torch.randn(outer, device="cuda")
    mm = gpu_us(lambda: torch.mm(h, w, out=d))
    accumulate = gpu_us(lambda: r.addmm_(h, w))
    with_bias = gpu_us(lambda: torch.addmm(bias, h, w, out=d))
    check = r.clone().addmm_(h, w)
    error = ((check - (r + h @ w)).norm() / check.norm()).item()
    print(
        f"{label}: mm {mm:.2f} us, addmm_ into the residual {accumulate:.2f} us (x{accumulate / mm:.2f}), "
        f"addmm with a bias {with_bias:.2f} us; check {error:.1e}",
        flush=True,
    )


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    measure("bert down [128, 3072] x [3072, 768]", 128, 3072, 768)
    measure("bert attention out [128, 768] x [768, 768]", 128, 768, 768)
    measure("gpt2 down [32, 3072] x [3072, 768]", 32, 3072, 768)
    measure("batch 16 down [2048, 3072] x [3072, 768]", 2048, 3072, 768)


if __name__ == "__main__":
    main()
