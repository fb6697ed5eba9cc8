"""The KV-cache write of a decoding step: `torch.ops.aten.index_put_(cache, [None, None, position], values)` (what
transformers' static cache's `index_copy_` becomes in export, run by pygraph as ATen's call), against
`index_copy_` on the same dim, with the values contiguous and as the rotary kernel leaves them
(transposed), and a Triton kernel doing the same, in bfloat16 on the GPU. GPU time per call (replayed from a CUDA graph).

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_cache_write.py`
(output: bench/results/probe-cache-write-s25-h200.log).
"""

import torch
import triton
import triton.language as tl
from timing import gpu_us


@triton.jit
def scatter(
    cache, values, position, HEADS: tl.constexpr, LENGTH: tl.constexpr, DIM: tl.constexpr, VH: tl.constexpr
):
    """What a generated kernel would do: one program writes every head's row at the position."""
    h = tl.arange(0, HEADS)[:, None]
    d = tl.arange(0, DIM)[None, :]
    p = tl.load(position)
    tl.store(cache + h * (LENGTH * DIM) + p * DIM + d, tl.load(values + h * VH + d))


def shape(heads: int, length: int, dim: int) -> str:
    cache = torch.randn(1, heads, length, dim, device="cuda", dtype=torch.bfloat16)
    position = torch.tensor([length // 3], device="cuda")
    contiguous = torch.randn(1, heads, 1, dim, device="cuda", dtype=torch.bfloat16)
    transposed = torch.randn(1, 1, heads, dim, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    line = f"[1, {heads}, {length}, {dim}]:"
    for name, values in (("contiguous", contiguous), ("transposed", transposed)):
        put = gpu_us(lambda values=values: torch.ops.aten.index_put_(cache, [None, None, position], values))
        copy = gpu_us(lambda values=values: cache.index_copy_(2, position, values))
        vh = values.stride(1)

        def generated(values: torch.Tensor = values, vh: int = vh) -> None:
            scatter[(1,)](cache, values, position, HEADS=heads, LENGTH=length, DIM=dim, VH=vh)

        line += f" {name} values: index_put_ {put:5.2f} us, index_copy_ {copy:5.2f} us, Triton {gpu_us(generated):5.2f};"
    return line


def main() -> None:
    torch.manual_seed(0)
    for heads, length, dim in ((4, 512, 128), (8, 4096, 128), (32, 2048, 128)):
        print(shape(heads, length, dim), flush=True)


if __name__ == "__main__":
    main()
