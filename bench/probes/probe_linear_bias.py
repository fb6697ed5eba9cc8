"""`linear` with its bias in cuBLASLt's epilogue against `linear` without (the bias then added by the
generated kernel that reads the result, at no extra pass), per shape [M, K] x [K, N] of the benchmark's
models, in GPU time per call (replayed from a CUDA graph of 20 calls), TF32 allowed as the bench times.
Run on the GPU machine; one line per shape."""

import torch
import torch.nn.functional as F
from timing import gpu_us

SHAPES = [  # rows M, in K, out N: where they occur
    (1, 512, 512, "mlp"),
    (32, 768, 2304, "gpt2"),
    (128, 768, 768, "bert"),
    (128, 768, 3072, "bert"),
    (128, 3072, 768, "bert"),
    (197, 192, 576, "vit_tiny"),
    (2048, 768, 2304, "distilgpt2_I16"),
    (2048, 768, 3072, "distilgpt2_I16"),
    (2048, 3072, 768, "distilgpt2_I16"),
    (2048, 512, 1024, "mt5_I16"),
    (8192, 512, 512, "blenderbot_small_I64"),
    (8192, 512, 2048, "blenderbot_small_I64"),
    (8192, 2048, 512, "blenderbot_small_I64"),
    (16384, 512, 128, "mobilebert_qa_I128"),
    (16384, 128, 128, "mobilebert_qa_I128"),
    (16384, 128, 512, "mobilebert_qa_I128"),
]


def measure(m: int, k: int, n: int, where: str) -> None:
    x, w, b = (
        torch.randn(m, k, device="cuda"),
        torch.randn(n, k, device="cuda"),
        torch.randn(n, device="cuda"),
    )
    with_bias = gpu_us(lambda: F.linear(x, w, b))
    without = gpu_us(lambda: F.linear(x, w))
    print(
        f"M {m:6d} K {k:5d} N {n:5d} ({where:20s}): with bias {with_bias:7.1f} us, without {without:7.1f} us "
        f"({with_bias / without:4.2f}x)",
        flush=True,
    )


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = True
    for shape in SHAPES:
        measure(*shape)
