"""Where a generated matmul with its epilogue should replace the vendor call plus an epilogue kernel, and with
which blocks: the data behind `passes/matmul_kernel.py`'s routing (issue 4: "choose by measurement").

`probe_matmul_epilogue.py` showed a Triton matmul with bias and GELU fused beating cuBLASLt plus a GELU kernel
on five MLP shapes, each with a different best block configuration. This probe widens that to every linear
shape of the benchmark's transformers (and two squares), three epilogues (none: the bias only; GELU; a
residual add, which reads a second [M, N] tensor), both precisions (TF32 dots, the benchmark's timing
setting, and IEEE float32, its correctness setting) and eight block configurations. Per shape and
precision it prints the vendor's time alone and with the epilogue as a kernel of its own, and the
generated kernel's per configuration, in GPU microseconds per call (`timing.gpu_us`).

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_matmul_template.py`
(output: bench/results/probe-matmul-template-h200.log). Each configuration's relative error against float64
is printed beside its time. (No interpreter check: Triton 3.6's interpreter cannot loop to a runtime bound,
which the probe needs to compile once per configuration rather than once per shape.)
"""

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

SHAPES = [  # model, rows, inputs, outputs, epilogue
    ("gpt2 qkv", 32, 768, 2304, "none"),
    ("gpt2 proj", 32, 768, 768, "add"),
    ("gpt2 fc", 32, 768, 3072, "gelu"),
    ("gpt2 fc2", 32, 3072, 768, "add"),
    ("bert qkv", 128, 768, 768, "none"),
    ("bert fc", 128, 768, 3072, "gelu"),
    ("bert fc2", 128, 3072, 768, "add"),
    ("vit qkv", 197, 192, 576, "none"),
    ("vit proj", 197, 192, 192, "add"),
    ("vit fc", 197, 192, 768, "gelu"),
    ("vit fc2", 197, 768, 192, "add"),
    ("mt5 fc", 2048, 512, 1024, "gelu"),
    ("mt5 fc2", 2048, 1024, 512, "add"),
    ("distilgpt2 qkv", 2048, 768, 2304, "none"),
    ("distilgpt2 fc", 2048, 768, 3072, "gelu"),
    ("distilgpt2 fc2", 2048, 3072, 768, "add"),
    ("blenderbot fc", 8192, 512, 2048, "gelu"),
    ("blenderbot fc2", 8192, 2048, 512, "add"),
    ("mobilebert fc", 16384, 128, 512, "gelu"),
    ("mobilebert fc2", 16384, 512, 128, "add"),
    ("square 1k", 1024, 1024, 1024, "none"),
    ("square 4k", 4096, 4096, 4096, "gelu"),
]
CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages
    (16, 64, 64, 4, 3),
    (32, 64, 32, 4, 3),
    (32, 128, 32, 4, 3),
    (64, 64, 32, 4, 3),
    (64, 128, 32, 4, 3),
    (128, 64, 32, 4, 3),
    (128, 128, 32, 8, 3),
    (128, 256, 32, 8, 3),
]
EPILOGUES = {"none": 0, "gelu": 1, "add": 2}


@triton.jit
def linear_epilogue(
    x, w, b, r, y, M, N, K,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EPILOGUE: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    """y = epilogue(x @ w.T + b): x [M, K], w [N, K], r [M, N] (the residual of EPILOGUE 2), row-major."""
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    pid_m, pid_n = pid // grid_n, pid % grid_n
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
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    at = rows[:, None] * N + cols[None, :]
    if EPILOGUE == 1:
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    elif EPILOGUE == 2:
        acc = acc + tl.load(r + at, mask=mask)
    tl.store(y + at, acc, mask=mask)


def generated(x, w, b, r, y, epilogue: str, config: tuple, precision: str) -> None:
    bm, bn, bk, warps, stages = config
    (m, k), n = x.shape, w.shape[0]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    linear_epilogue[grid](
        x, w, b, r, y, m, n, k, BM=bm, BN=bn, BK=bk, EPILOGUE=EPILOGUES[epilogue], PRECISION=precision,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip


def vendor(x, w, b, r, epilogue: str) -> torch.Tensor:
    y = F.linear(x, w, b)
    return F.gelu(y) if epilogue == "gelu" else y + r if epilogue == "add" else y


def measure(name: str, m: int, k: int, n: int, epilogue: str, precision: str) -> None:
    from timing import gpu_us

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    x, r = torch.randn(m, k, device="cuda"), torch.randn(m, n, device="cuda")
    w, b = torch.randn(n, k, device="cuda") / k**0.5, torch.randn(n, device="cuda")
    y = torch.empty(m, n, device="cuda")
    ref = vendor(x.double(), w.double(), b.double(), r.double(), epilogue).float()
    line = [
        f"vendor {gpu_us(lambda: F.linear(x, w, b)):.1f}",
        f"vendor+{epilogue} {gpu_us(lambda: vendor(x, w, b, r, epilogue)):.1f}",
    ]
    best = None
    for config in CONFIGS:
        if precision == "ieee" and config[0] * config[1] > 128 * 128:
            continue  # IEEE dots keep the accumulator and the tiles in registers: the largest spill

        def run(config: tuple = config) -> None:
            generated(x, w, b, r, y, epilogue, config, precision)

        us = gpu_us(run)
        err = float((y - ref).norm() / ref.norm())
        best = min(best or (us, config), (us, config))
        line.append(f"{'/'.join(map(str, config[:4]))} {us:.1f} ({err:.0e})")
    programs = -(-m // best[1][0]) * -(-n // best[1][1])
    print(
        f"{name:16s} {precision} [{m}, {k}] x [{k}, {n}] {epilogue}: best {best[0]:.1f} "
        f"{'/'.join(map(str, best[1][:4]))} ({programs} programs) | " + ", ".join(line),
        flush=True,
    )


def main() -> None:
    torch.manual_seed(0)
    for precision in ("tf32", "ieee"):
        for shape in SHAPES:
            if precision == "ieee" and shape[1] * shape[2] * shape[3] > 1 << 33:
                continue
            measure(*shape, precision)
    torch.backends.cuda.matmul.allow_tf32 = True


if __name__ == "__main__":
    main()
