"""Grouped-query attention at a decoding step: ATen's attention on keys and values expanded to every query
head (as Llama's `repeat_kv` gives them: a copy of the cache per call) against `enable_gqa=True` on the
cache as it is (no mask, a boolean or a float one), in bfloat16 on the GPU, and pygraph's generated kernels on
the same: one program per head and block of queries ("whole"), and the keys split across programs as
split-keys splits them by its rule ("split"; where the rule does not split, 32 keys per program forced).
GPU time per call (ATen's: replayed from a CUDA graph; the kernels': torch.profiler, both of a split).

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_gqa.py` (output:
bench/results/probe-gqa-s25-h200.log before split-keys, probe-gqa-s27-h200.log with it).
"""

import torch
import torch.nn.functional as F
from timing import gpu_us

import pygraph
from pygraph.knobs import knobs
from pygraph.passes.attention_kernel import SPLIT_ROWS, split_size


class Grouped(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *mask: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, *mask, enable_gqa=True)


def kernel_us(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: torch.Tensor | None, split: str
) -> tuple[float, float]:
    """pygraph's generated attention kernels on these operands, PYGRAPH_SPLIT_KEYS=`split`: their GPU time
    per call (torch.profiler) and the result's largest difference from ATen's."""
    inputs = (q, k, v) + (() if m is None else (m,))
    with knobs.scope(attention="kernel", split_keys=split):
        compiled = pygraph.export_and_compile(Grouped(), inputs)
    calls = 20
    for _ in range(3):
        compiled(*inputs)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            compiled(*inputs)
        torch.cuda.synchronize()
    times = [
        e.device_time
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and "attention" in e.name
    ]
    error = (compiled(*inputs).float() - Grouped()(*inputs).float()).abs().max().item()
    return sum(times) / calls, error


def shape(heads: int, kv_heads: int, keys: int, dim: int, queries: int, mask: str) -> str:
    q = torch.randn(1, heads, queries, dim, device="cuda", dtype=torch.bfloat16)
    m = None  # a cache filled up to `keys - 7` positions, as a static cache's decoding step masks it
    if mask != "no":
        m = (torch.arange(keys, device="cuda") < keys - 7).expand(1, 1, queries, keys)
        if mask == "float":
            m = torch.zeros(m.shape, device="cuda", dtype=torch.bfloat16).masked_fill(~m, float("-inf"))
    k, v = (torch.randn(1, kv_heads, keys, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    group = heads // kv_heads

    def expanded() -> torch.Tensor:
        ke = k[:, :, None].expand(1, kv_heads, group, keys, dim).reshape(1, heads, keys, dim)
        ve = v[:, :, None].expand(1, kv_heads, group, keys, dim).reshape(1, heads, keys, dim)
        return F.scaled_dot_product_attention(q, ke, ve, attn_mask=m)

    def grouped() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)

    error = (expanded().float() - grouped().float()).abs().max().item()
    whole, whole_error = kernel_us(q, k, v, m, "off")
    rows = heads // kv_heads * queries
    forced = "auto" if split_size(kv_heads, heads // kv_heads, queries, keys) else "32"
    split, split_error = kernel_us(q, k, v, m, forced) if rows <= SPLIT_ROWS else (float("nan"), 0.0)
    return (
        f"{heads} heads over {kv_heads}, {queries} x {keys} x {dim}, {mask} mask: expanded {gpu_us(expanded):6.2f} us, "
        f"enable_gqa {gpu_us(grouped):6.2f} us (max difference {error:.1e}); pygraph whole {whole:6.2f} us "
        f"({whole_error:.1e}), split ({forced}) {split:6.2f} us ({split_error:.1e})"
    )


def main() -> None:
    torch.manual_seed(0)
    cases = [(16, 4, 512, 128, 1), (32, 8, 2048, 128, 1), (12, 4, 256, 64, 1), (16, 4, 128, 128, 1)]
    cases += [(32, 8, 512, 128, n) for n in (4, 16)]
    for case in cases:
        for mask in ("no", "bool", "float") if case == cases[0] else ("bool",):
            print(shape(*case, mask), flush=True)


if __name__ == "__main__":
    main()
