"""How each `scaled_dot_product_attention` runs on the GPU: one generated kernel, a decomposition, or ATen.

The choice is made here, once per call, by `route` (PYGRAPH_ATTENTION):

- `kernel`: one generated flash-attention kernel (`passes/attention_kernel.py`): the scores never leave
  the chip, there is one launch, and q, k, v, the mask and the result are read and written at their own
  strides. The call keeps its op and gets `pygraph.attention_kernel` (its `tl.dot` precision: "tf32"
  where TF32 matmuls are allowed as the program is compiled, else "ieee"), which classify-ops makes the
  class `attention`.
- `decompose`: `matmul(q, kᵀ)`, scale and mask, softmax, `matmul(., v)`: the scale, the mask and the
  softmax are one generated kernel (fuse-pointwise), the matmuls vendor calls. Measured on an H200 against
  ATen's fused call (`bench/probes/probe_attention.py`, `bench/results/probe-attention-h200.log`; no TF32):
  ViT-Tiny's 3 x 197 x 197 scores take 27.7 us fused against 14.6 us decomposed, BERT's 12 x 128 x 128
  17.6 against 15.8; from about 1.5M score elements per call (mt5 at batch 16, distilgpt2, MobileBERT at
  batch 128) the fused kernel wins, and at GPT-2's 12 x 32 x 32 the three launches cost more than they
  save; with TF32 the decomposition wins up to much larger score matrices.
- `aten`: ATen's fused call (float32: the memory-efficient kernel), a library op.
- `auto` (default): chosen from `bench/probes/probe_attention_kernel.py` on an H200
  (`bench/results/probe-attention-kernel-h200.log`, the benchmark models' shapes and two longer ones).
  Where TF32 matmuls are allowed the kernel's tensor-core dots win on every shape, 1.1x (ViT-Tiny's 3 x
  197 x 197) to 4x (BlenderBot's 64 x 16 x 128 x 128) against the better of the other two. In IEEE
  float32 (no TF32) its dots run on the FMA units: it still wins with head dims of 32 or less (MobileBERT,
  BlenderBot) and on few scores (GPT-2's 12 x 32 x 32: one launch against three), while from 64K scores
  the decomposition's cuBLAS matmuls win (ViT, BERT: 17 against 60 and 16 against 23 us) and past 1M
  ATen's fused kernel does (distilgpt2, mt5, a causal 12 x 1024 x 1024: 141 against 281 us).

Attentions whose keys split-keys will split across programs (a decoding step: few query rows per key
head, `attention_kernel.split_size`) go to the kernel under `auto`, in any precision
(`probe-split-keys-s27-h200.log`: bfloat16, 16 query heads over 4 of 512 keys in 4.6 us against ATen's
12.8 in the same graph). Other half-precision attentions stay ATen's: its flash and cuDNN kernels beat
one program per head and block of queries (`probe-gqa-s25-h200.log`: 12.7 against 7.6 us at 512 keys
unsplit); PYGRAPH_ATTENTION=kernel forces them there. Calls on the devices
PYGRAPH_GPU_LAYOUTS names, with static shapes, no dropout and what else the kernel can compute
(`attention_kernel.unsupported`) are routed; every other call stays ATen's.

Keys and values whose heads the model repeats for each group of query heads (Llama's `repeat_kv`:
unsqueeze, expand, a copy, a view) are read as the model holds them, with `enable_gqa=True`, where the call
goes to the generated kernel or, in half precision, to ATen (`_grouped_query_heads`): no copy of the cache
per call. Semantics are eager's either way: the scale defaults to 1/sqrt(E); a
boolean mask keeps where True, a float mask is added; `is_causal` keeps the lower triangle; rows a mask
hides entirely give zeros, as the fused kernel gives them, and as ATen's call gives them once its result
passes `_hides_rows_from_cudnn`'s fix-up in half precision.
"""

from __future__ import annotations

import itertools
import math

import torch

from ..knobs import knobs
from ..passes.attention_kernel import split_size, unsupported
from .rewrite import add_constant, propagate_fake_tensors, redirect_uses, replace_node

aten = torch.ops.aten
ROUTES = ("auto", "kernel", "decompose", "aten")
KERNEL_META = "pygraph_attention_kernel"  # node.meta key: tl.dot's precision (the importer's attribute)
# `auto` without TF32 (module docstring): the kernel up to these head dims or below these many scores,
# the decomposition up to _ATEN_SCORES, ATen's fused call beyond.
_FMA_HEAD_DIM = 32
_DECOMPOSE_SCORES = 1 << 16
_ATEN_SCORES = 1 << 20
_SDPA = aten.scaled_dot_product_attention.default
_MERGING_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)
_ARGUMENTS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}


def route_attentions(ep: torch.export.ExportedProgram, devices: tuple[str, ...] = ("cuda",)) -> None:
    """Routes every attention of `ep` (module docstring), in place."""
    decomposed = False
    graph = ep.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not _SDPA:
            continue
        args = _DEFAULTS | dict(zip(_ARGUMENTS, node.args, strict=False)) | node.kwargs
        grouped = _grouped_query_heads(args)
        if grouped is not None and (route(grouped, devices) == "kernel" or _half(args["query"])):
            _take_arguments(ep, node, args, grouped)
            args = grouped
        choice = route(args, devices)
        if choice == "kernel":
            allow_tf32 = torch.backends.cuda.matmul.allow_tf32 or _half(args["query"])
            node.meta[KERNEL_META] = "tf32" if allow_tf32 else "ieee"
        elif choice == "decompose":
            query, key = args["query"].meta["val"], args["key"].meta["val"]
            with graph.inserting_before(node):
                result = _decomposed(ep, args, query, key, node.meta["val"])
            replace_node(ep, node, result)
            decomposed = True
        elif _hides_rows_from_cudnn(args, devices):
            with graph.inserting_after(node):
                kept = graph.call_function(aten.any.dim, (args["attn_mask"], -1, True))
            with graph.inserting_after(kept):
                result = graph.call_function(aten.where.ScalarOther, (kept, node, 0.0))
            redirect_uses(ep, node, result)
            decomposed = True
    if decomposed:
        propagate_fake_tensors(ep)


def _hides_rows_from_cudnn(args: dict, devices: tuple[str, ...]) -> bool:
    """Whether ATen's call may take cuDNN's kernel, eager's default in half precision on sm_90 and newer,
    with a boolean mask: for a row the mask hides entirely it gives neither the zeros of the math and
    memory-efficient kernels nor NaN, and eager takes it or the math kernel by the inputs' strides
    (`bench/results/masked-rows-s41-h100.log`). Such rows are made zeros after the call, PyTorch's
    semantics whichever kernel runs."""
    mask, query = args["attn_mask"], args["query"].meta["val"]
    return (
        isinstance(mask, torch.fx.Node)
        and mask.meta["val"].dtype == torch.bool
        and query.dtype in (torch.float16, torch.bfloat16)
        and query.device.type in devices
    )


def route(args: dict, devices: tuple[str, ...]) -> str:
    """The route of one call, "kernel", "decompose" or "aten", from its arguments (FX nodes, numbers)."""
    if knobs.attention not in ROUTES:
        raise ValueError(f"PYGRAPH_ATTENTION must be one of {', '.join(ROUTES)}, not {knobs.attention!r}")
    if knobs.attention == "aten" or not _routable(args, devices):
        return "aten"
    if knobs.attention != "auto":
        return "aten" if knobs.attention == "decompose" and args["enable_gqa"] else knobs.attention
    query, key = args["query"].meta["val"], args["key"].meta["val"]
    if _splits(query, key, args["enable_gqa"]):
        return "kernel"
    if query.dtype != torch.float32:  # ATen's flash and cuDNN kernels (module docstring)
        return "aten"
    if torch.backends.cuda.matmul.allow_tf32:
        return "kernel"
    scores = math.prod(query.shape[:-1]) * key.shape[-2]
    if query.shape[-1] <= _FMA_HEAD_DIM or scores < _DECOMPOSE_SCORES:
        return "kernel"
    if scores > _ATEN_SCORES:
        return "aten"
    return "aten" if args["enable_gqa"] else "decompose"


def _splits(query: torch.Tensor, key: torch.Tensor, enable_gqa: bool) -> bool:
    """Whether split-keys will split the call's keys across programs (`attention_kernel.split_size`)."""
    heads = math.prod(key.shape[:-2] if enable_gqa else query.shape[:-2])
    group = math.prod(query.shape[:-2]) // heads
    half = query.dtype in (torch.float16, torch.bfloat16)
    return split_size(heads, group, query.shape[-2], key.shape[-2], knobs.split_keys, half) is not None


def _routable(args: dict, devices: tuple[str, ...]) -> bool:
    """Whether the call is on one of `devices`, of static shapes, and one the kernel can compute."""
    mask = args["attn_mask"]
    tensors = [args[name].meta.get("val") for name in ("query", "key", "value")]
    tensors.append(mask.meta.get("val") if isinstance(mask, torch.fx.Node) else None)
    if not all(isinstance(t, torch.Tensor) for t in tensors[:3]) or (mask is not None and tensors[3] is None):
        return False
    if tensors[0].device.type not in devices:
        return False
    if not all(isinstance(n, int) for t in tensors if t is not None for n in t.shape):
        return False
    q, k, v, m = (
        None if t is None else (tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in tensors
    )
    return unsupported(q, k, v, m, args["dropout_p"], args["is_causal"], args["enable_gqa"]) is None


def _grouped_query_heads(args: dict) -> dict | None:
    """The arguments with `enable_gqa=True` on keys and values as the model holds them, where it repeats
    each of their heads for a group of query heads first (Llama's `repeat_kv`: a copy of the whole cache
    per call); None where it does not. The generated kernel and, in half precision, ATen's kernels read the
    group's heads in place (`probe-gqa-s25-h200.log`: ATen's 7.5 against 15.5 us for a decoding step's 16
    query heads over 4, 7.4 against 50 at 2048 keys); ATen's float32 attention is left as it was."""
    if args["enable_gqa"]:
        return None
    key, value = _repeated_heads(args["key"]), _repeated_heads(args["value"])
    if key is None or value is None or key[1] != value[1]:
        return None
    if args["query"].meta["val"].shape[-3] != key[0].meta["val"].shape[-3] * key[1]:
        return None
    return args | {"key": key[0], "value": value[0], "enable_gqa": True}


def _take_arguments(ep: torch.export.ExportedProgram, node: torch.fx.Node, old: dict, new: dict) -> None:
    """`node` called with `new` (q, k, v positional, the rest by keyword); the views and copies that made
    the old keys and values go where nothing else reads them."""
    node.args = tuple(new[name] for name in _ARGUMENTS[:3])
    node.kwargs = {name: new[name] for name in _ARGUMENTS[3:] if new[name] != _DEFAULTS[name]}
    for chain in (old["key"], old["value"]):
        while chain.op == "call_function" and not chain.users:
            source = chain.args[0]
            ep.graph.erase_node(chain)
            chain = source


def _half(node: torch.fx.Node) -> bool:
    return node.meta["val"].dtype in (torch.float16, torch.bfloat16)


def _repeated_heads(node: torch.fx.Node) -> tuple[torch.fx.Node, int] | None:
    """(x, g) where `node` holds each head (dim -3) of x repeated g times in a row: a view merging the
    heads and their copies of an expand of `x.unsqueeze(-3)`, after a contiguous copy or not."""
    view = node
    if view.op != "call_function" or view.target not in _MERGING_VIEWS:
        return None
    expand = view.args[0]
    if expand.op == "call_function" and expand.target is aten.clone.default:
        expand = expand.args[0]
    if expand.op != "call_function" or expand.target is not aten.expand.default:
        return None
    unsqueeze = expand.args[0]
    if unsqueeze.op != "call_function" or unsqueeze.target is not aten.unsqueeze.default:
        return None
    source = unsqueeze.args[0]
    shape = tuple(source.meta["val"].shape)
    rank = len(shape)
    if rank < 3 or unsqueeze.args[1] % (rank + 1) != rank - 2:
        return None
    group = expand.meta["val"].shape[rank - 2]
    expanded, merged = tuple(expand.meta["val"].shape), tuple(view.meta["val"].shape)
    if expanded != (*shape[:-2], group, *shape[-2:]) or merged != (
        *shape[:-3],
        shape[-3] * group,
        *shape[-2:],
    ):
        return None
    return source, group


def _decomposed(
    ep: torch.export.ExportedProgram,
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
        mask = _causal_mask(ep, query.shape[-2], key.shape[-2], query.device)
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


def _causal_mask(
    ep: torch.export.ExportedProgram, rows: int, cols: int, device: torch.device
) -> torch.fx.Node:
    """The lower-triangular mask of `rows` x `cols`, one constant for all the program's causal attentions
    of that size (each layer's own would be memory held for nothing)."""
    name = f"causal_mask_{rows}x{cols}_{device.type}"
    held = next((s.arg.name for s in ep.graph_signature.input_specs if s.target == name), None)
    if held is not None:
        return next(n for n in ep.graph.find_nodes(op="placeholder") if n.name == held)
    return add_constant(ep, name, torch.ones(rows, cols, dtype=torch.bool, device=device).tril())


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
