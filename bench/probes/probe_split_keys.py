"""Attention of a decoding step with its keys split across programs: a first kernel computes, per key
head, split of keys and query row, the running maximum, the sum of exponentials and the weighted values of
its keys; a second combines the splits. Against ATen's fused call (flash or cuDNN: its own split of the
keys) and the generated kernel of one program per head and block of queries.

On the GPU machine: `PYTHONPATH=$PYTHONPATH:bench/probes python3 bench/probes/probe_split_keys.py`
(output: bench/results/probe-split-keys-*-h200.log). bfloat16, batch 1, 16 query heads over 4 key heads
(Llama's grouped queries, read in place), head dim 128, a boolean mask over the cache's positions.
"""

import functools

import torch
import triton
import triton.language as tl
from timing import gpu_us


@triton.jit
def parts_kernel(q, k, v, mask, parts, KEYS: tl.constexpr, SPLIT: tl.constexpr, GROUP: tl.constexpr,
                 E: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    splits = KEYS // SPLIT
    head, split = pid // splits, pid % splits
    rows = tl.arange(0, BM)[:, None]  # (query head in group) for one query
    e_row = tl.arange(0, E)[None, :]
    e_col = tl.arange(0, E)[:, None]
    qb = tl.load(q + (head * GROUP + rows) * E + e_row, mask=rows < GROUP, other=0.0).to(tl.float32)
    m_i = tl.full([BM, 1], float("-inf"), tl.float32)
    l_i = tl.full([BM, 1], 0.0, tl.float32)
    acc = tl.full([BM, E], 0.0, tl.float32)
    for start in range(split * SPLIT, split * SPLIT + SPLIT, BN):
        keys = start + tl.arange(0, BN)
        kt = tl.load(k + head * KEYS * E + keys[None, :] * E + e_col).to(tl.float32)
        s = tl.dot(qb, kt, input_precision="tf32") * 0.08838834764831845
        s = tl.where(tl.load(mask + keys[None, :]), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1, keep_dims=True))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - m_use)
        p = tl.exp(s - m_use)
        l_i = l_i * alpha + tl.sum(p, 1, keep_dims=True)
        vb = tl.load(v + head * KEYS * E + keys[:, None] * E + e_row).to(tl.float32)
        acc = acc * alpha + tl.dot(p, vb, input_precision="tf32")
        m_i = m_new
    base = parts + ((head * splits + split) * GROUP + rows) * (E + 2)
    tl.store(base + e_row, acc, mask=rows < GROUP)
    tl.store(base + E, m_i, mask=rows < GROUP)
    tl.store(base + E + 1, l_i, mask=rows < GROUP)


@triton.jit
def combine_kernel(parts, out, SPLITS: tl.constexpr, GROUP: tl.constexpr, E: tl.constexpr):
    pid = tl.program_id(0)  # query head
    head, row = pid // GROUP, pid % GROUP
    s = tl.arange(0, SPLITS)[:, None]
    base = parts + ((head * SPLITS + s) * GROUP + row) * (E + 2)
    m = tl.load(base + E)
    l_ = tl.load(base + E + 1)
    m_max = tl.max(m, 0, keep_dims=True)
    w = tl.where(m == float("-inf"), 0.0, tl.exp(m - tl.where(m_max == float("-inf"), 0.0, m_max)))
    acc = tl.load(base + tl.arange(0, E)[None, :])
    total = tl.sum(w * l_, 0)
    o = tl.sum(w * acc, 0) / tl.where(total == 0.0, 1.0, total)
    tl.store(out + pid * E + tl.arange(0, E), o.to(tl.bfloat16))


def launch(q, k, v, mask, parts, out, split: int, warps: int) -> None:
    heads, kv_heads, keys, dim = q.shape[1], k.shape[1], k.shape[2], q.shape[3]
    splits, group = keys // split, heads // kv_heads
    parts_kernel[(kv_heads * splits,)](q, k, v, mask, parts, keys, split, group, dim, 16, min(split, 64),
                                       num_warps=warps, num_stages=2)  # fmt: skip
    combine_kernel[(heads,)](parts, out, splits, group, dim, num_warps=4)


def measure(keys: int, used: int, heads: int = 16, kv_heads: int = 4, dim: int = 128) -> None:
    q = torch.randn(1, heads, 1, dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, kv_heads, keys, dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(1, kv_heads, keys, dim, device="cuda", dtype=torch.bfloat16)
    mask = torch.zeros(1, 1, 1, keys, dtype=torch.bool, device="cuda")
    mask[..., :used] = True
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, mask, enable_gqa=True)
    aten = gpu_us(
        functools.partial(torch.nn.functional.scaled_dot_product_attention, q, k, v, mask, enable_gqa=True)
    )
    print(f"keys {keys} ({used} seen): ATen {aten:.2f} us")
    for split in (16, 32, 64, 128, 256):
        if split > keys:
            continue
        parts = torch.empty(kv_heads * (keys // split) * (heads // kv_heads) * (dim + 2), device="cuda")
        out = torch.empty(1, heads, 1, dim, device="cuda", dtype=torch.bfloat16)
        for warps in (4, 8):
            run = functools.partial(launch, q, k, v, mask, parts, out, split, warps)
            run()
            err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
            print(f"  split {split:4d} ({kv_heads * keys // split:4d} programs, {warps} warps): "
                  f"{gpu_us(run):6.2f} us, max rel err {err:.1e}")  # fmt: skip


def main() -> None:
    torch.manual_seed(0)
    for keys, used in ((512, 300), (2048, 1500), (4096, 4000)):
        measure(keys, used)


if __name__ == "__main__":
    main()
