"""Small attentions as two matmuls around a softmax, on the GPU.

`scaled_dot_product_attention` in float32 runs ATen's memory-efficient kernel, made for long sequences:
it never writes the scores. When the scores are few, writing them is cheaper. Measured on an H200
(`bench/probes/probe_attention.py`, `bench/results/probe-attention-h200.log`; fp32 matmuls, no TF32):
ViT-Tiny's 3 x 197 x 197 scores take 27.7 us fused against 14.6 us as matmul, softmax, matmul; BERT's
12 x 128 x 128 take 17.6 against 15.8; but from about 1.5M score elements per call (mt5 at batch 16,
distilgpt2, MobileBERT at batch 128) the fused kernel wins, and at GPT-2's 12 x 32 x 32 the three
launches cost more than they save. Where TF32 matmuls are allowed (as the program is compiled), the
matmuls run at several times the speed and the decomposition wins up to much larger score matrices
(mt5's 1.5M: 25.2 against 21.7 us, 4 x 16 x 512 x 512: 170.9 against 148.1, measured with the mask
added and the scale applied by kernels of their own, which the generated softmax takes in), as
reduce-overhead's kernels do it. So an attention whose scores number `_MIN_SCORES` to `_MAX_SCORES`
elements (`_MAX_SCORES_TF32` with TF32, 64 MiB of scores) becomes `matmul(q, kᵀ)`, scale and mask,
softmax, `matmul(., v)`: the scale, the mask and the softmax are one generated kernel (fuse-pointwise),
the matmuls vendor calls.

Semantics are eager's: the scale defaults to 1/sqrt(E); a boolean mask keeps where True, a float mask is
added; `is_causal` keeps the lower triangle (a constant mask); rows a mask hides entirely give zeros, as
the fused kernel gives them. Attentions with dropout, grouped-query heads or dynamic shapes are left to
ATen.
"""

from __future__ import annotations

import itertools
import math

import torch

from .rewrite import add_constant, propagate_fake_tensors, replace_node

aten = torch.ops.aten
_MIN_SCORES = 1 << 16
_MAX_SCORES = 1 << 20
_MAX_SCORES_TF32 = 1 << 24
_SDPA = aten.scaled_dot_product_attention.default
_ARGUMENTS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}


def decompose_small_attention(ep: torch.export.ExportedProgram, devices: tuple[str, ...] = ("cuda",)) -> int:
    """Rewrites every float32 attention on `devices` with a small score matrix, in place; returns how many."""
    graph = ep.graph
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not _SDPA:
            continue
        args = _DEFAULTS | dict(zip(_ARGUMENTS, node.args, strict=False)) | node.kwargs
        query, key = args["query"].meta.get("val"), args["key"].meta.get("val")
        if not _small(query, key, devices) or args["dropout_p"] or args["enable_gqa"]:
            continue
        with graph.inserting_before(node):
            result = _decomposed(ep, node.name, args, query, key, node.meta["val"])
        replace_node(ep, node, result)
        rewritten += 1
    if rewritten:
        propagate_fake_tensors(ep)
    return rewritten


def _small(query: object, key: object, devices: tuple[str, ...]) -> bool:
    if not isinstance(query, torch.Tensor) or not isinstance(key, torch.Tensor):
        return False
    if query.dtype != torch.float32 or query.device.type not in devices or query.dim() < 2:
        return False
    sizes = [*query.shape, key.shape[-2]]
    if not all(isinstance(n, int) for n in sizes):
        return False
    scores = math.prod(query.shape[:-1]) * key.shape[-2]
    return (
        _MIN_SCORES <= scores <= (_MAX_SCORES_TF32 if torch.backends.cuda.matmul.allow_tf32 else _MAX_SCORES)
    )


def _decomposed(
    ep: torch.export.ExportedProgram,
    name: str,
    args: dict,
    query: torch.Tensor,
    key: torch.Tensor,
    fused: torch.Tensor,
) -> torch.fx.Node:
    """The attention as matmul, softmax, matmul, its result in the memory order of `fused`'s (the fused
    call's result, its fake tensor)."""
    call = ep.graph.call_function
    q, k, v = (_contiguous(ep, args[operand]) for operand in ("query", "key", "value"))
    scale = args["scale"] if args["scale"] is not None else 1 / math.sqrt(query.shape[-1])
    scores = call(aten.matmul.default, (q, call(aten.transpose.int, (k, -2, -1))))
    scores = call(aten.mul.Tensor, (scores, scale))
    mask = args["attn_mask"]
    if args["is_causal"]:
        lower = torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool, device=query.device).tril()
        mask = add_constant(ep, f"{name}_causal_mask", lower)
    if mask is not None:
        if mask.meta["val"].dtype == torch.bool:
            scores = call(
                aten.masked_fill.Scalar, (scores, call(aten.logical_not.default, (mask,)), -math.inf)
            )
        else:
            scores = call(aten.add.Tensor, (scores, mask))
    probabilities = call(aten._softmax.default, (scores, -1, False))
    if mask is not None:  # a row hidden entirely: zeros, not the NaNs of softmax over -inf
        hidden = call(aten.eq.Scalar, (call(aten.amax.default, (scores, [-1], True)), -math.inf))
        probabilities = call(aten.masked_fill.Scalar, (probabilities, hidden, 0.0))
    return _in_memory_order(ep, call(aten.matmul.default, (probabilities, v)), fused.stride())


def _contiguous(ep: torch.export.ExportedProgram, node: torch.fx.Node) -> torch.fx.Node:
    """`node` itself if a batched matmul reads it as it is, else a contiguous copy: the matmul folds the
    leading dims into one batch stride, which the heads of a projection viewed as [B, L, H, E] and
    transposed do not have when B > 1; ATen's matmul would copy them with a kernel of its own, a
    generated copy may join its producer's kernel."""
    value = node.meta["val"]
    sizes, strides = value.shape, value.stride()
    batch = [d for d in range(value.dim() - 2) if sizes[d] != 1]
    folds = all(strides[a] == strides[b] * sizes[b] for a, b in itertools.pairwise(batch))
    if folds and 1 in strides[-2:]:
        return node
    return ep.graph.call_function(aten.clone.default, (node,), {"memory_format": torch.contiguous_format})


def _in_memory_order(
    ep: torch.export.ExportedProgram, node: torch.fx.Node, strides: tuple[int, ...]
) -> torch.fx.Node:
    """`node` (contiguous) copied into the memory order of `strides`, the fused kernel's result ([B, L, H,
    E] in memory): what the model does next (`transpose(1, 2).view(B, L, H * E)`) may need it."""
    order = sorted(range(len(strides)), key=lambda d: -strides[d])
    if order == list(range(len(strides))):
        return node
    call = ep.graph.call_function
    ordered = call(
        aten.clone.default,
        (call(aten.permute.default, (node, order)),),
        {"memory_format": torch.contiguous_format},
    )
    return call(aten.permute.default, (ordered, [order.index(d) for d in range(len(order))]))
