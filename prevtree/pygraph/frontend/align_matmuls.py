"""Aligned matmul outputs: a matmul whose output rows would be unaligned computes aligned ones instead.

cuBLAS uses its fast TF32 kernels only when every matrix's rows start at 16-byte aligned addresses. A
linear layer with N outputs where N * itemsize is not a multiple of 16 (GPT-2's vocabulary of 50257 words)
writes rows of N elements, and cuBLAS falls back to kernels for unaligned data (H200, TF32, [2048, 768] by
50257 outputs: 1253 us against 450 aligned; [32, 768]: 65 against 47; `bench/results/probe-out-form-
h200.log`). Writing rows of an aligned width through `out=` does not help: cuBLAS checks N itself (1265
us). In IEEE float32 (TF32 off, torch's default for matmuls) the unaligned kernels are as fast (3104
against 3100 us), so nothing is rewritten then: the choice reads `torch.backends.cuda.matmul.allow_tf32`
at compile time, as the recorded cuBLAS calls do.

Two rewrites, by the weight's memory order:
- Rows of K contiguous values at aligned addresses (nn.Linear's [N, K] weight, or the `t(W)` of one):
  the matmul is split in two, the aligned prefix of A = N - N % (16 / itemsize) columns (a view of the
  weight's first A rows, no copy) and the remaining one to three columns, joined by `cat`: the prefix
  product gets cuBLAS's fast kernels and the cat writes the layout eager returns (a generated kernel that
  its readers fuse). No memory beyond the results (a padded copy of GPT-2's tied embedding was 154 MB).
- Any other weight (`x @ W` with W's own rows of N unaligned, a slice of a wider weight): splitting
  leaves the weight's rows unaligned, so the weight gets zero columns up to an aligned N', computed from
  the model's tensors alone and so made once, not per call (derived_state.py); the matmul writes [M, N']
  and the program reads the view [..., :N] of it (results returned are copied into eager's layout,
  `keep_output_layouts`).

A bias-free product of many rows is left whole instead of split: row-phases (`passes/row_phases.py`)
writes it in eager's layout by aligned products, one per phase of rows, with no copy, where reading the
weight once per phase costs less than the copy (distilgpt2's logits, 2048 rows).

Only matmuls whose weight is the model's state (a parameter, buffer or constant, or a view of one) and
whose output is large enough for the kernel choice to matter are rewritten; and not those the generated
matmul kernel computes as they are, faster than either rewrite: float32 products of few rows
(`passes/matmul_kernel.py`, `computes_alone`: GPT-2's logits while it generates, 32 rows).
"""

from __future__ import annotations

import torch

from ..knobs import knobs
from ..passes.matmul_kernel import computes_alone, routed
from ..passes.row_phases import ALIGNMENT_BYTES, MIN_ELEMENTS, phases_pay
from .derived_state import state_only_nodes
from .rewrite import propagate_fake_tensors, redirect_uses, views_as_reshapes

aten = torch.ops.aten


def align_matmul_outputs(ep: torch.export.ExportedProgram, devices: tuple[str, ...] = ("cuda",)) -> int:
    """Rewrites every `linear`, `mm`, `matmul` and `addmm` on `devices` whose output rows would be
    unaligned, in place, when TF32 matmuls are allowed; returns how many it rewrote."""
    if not torch.backends.cuda.matmul.allow_tf32:
        return 0
    graph = ep.graph
    state = state_only_nodes(ep)
    rewritten = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _WEIGHT:
            continue
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor) or value.device.type not in devices:
            continue
        if not value.dtype.is_floating_point or value.numel() < MIN_ELEMENTS:
            continue
        width = value.shape[-1]
        per_row = ALIGNMENT_BYTES // value.element_size()
        weight = node.args[_WEIGHT[node.target]]
        if width % per_row == 0 or width < per_row or weight not in state or weight.meta["val"].dim() != 2:
            continue
        if _left_to_the_kernel(node, value.numel() // width, width):
            continue
        if _rows_along_k(node.target, weight):
            if _in_phases(node, value.numel() // width, width):
                continue
            _split(ep, node, width - width % per_row)
        else:
            _pad(ep, node, per_row - width % per_row)
        rewritten += 1
    if rewritten:
        views_as_reshapes(ep)
        propagate_fake_tensors(ep)
    return rewritten


# the operand holding the weight, whose output columns get aligned, and the bias operand
_WEIGHT = {aten.linear.default: 1, aten.mm.default: 1, aten.matmul.default: 1, aten.addmm.default: 2}
_BIAS = {aten.linear.default: 2, aten.addmm.default: 0}
_ROWS = {aten.linear.default: 0, aten.mm.default: 0, aten.matmul.default: 0, aten.addmm.default: 1}


def _n_dim(op: object) -> int:
    """The weight's dim along the output columns: linear's weight is [N, K], the others' [K, N]."""
    return 0 if op is aten.linear.default else 1


def _column_bias(node: torch.fx.Node, args: list[object], width: int) -> int | None:
    """The operand index of the node's bias if it has one value per output column, else None."""
    index = _BIAS.get(node.target)
    return index if index is not None and index < len(args) and _widths(args[index]) == width else None


def _rows_along_k(op: object, weight: torch.fx.Node) -> bool:
    """Whether the weight holds each output column's K values contiguously, at aligned addresses (cuBLAS
    reads a slice of its columns with aligned rows then; a padded copy aligns any weight)."""
    value = weight.meta["val"]
    n_dim = _n_dim(op)
    k_dim = 1 - n_dim
    row, offset = value.stride(n_dim), value.storage_offset()
    aligned = (
        (row * value.element_size()) % ALIGNMENT_BYTES
        == (offset * value.element_size()) % ALIGNMENT_BYTES
        == 0
    )
    return value.stride(k_dim) == 1 and aligned


def _split(ep: torch.export.ExportedProgram, node: torch.fx.Node, aligned: int) -> None:
    """`node` computes the first `aligned` columns, a copy of it the rest, and a cat joins them."""
    graph = ep.graph
    width = node.meta["val"].shape[-1]
    weight_index, n_dim = _WEIGHT[node.target], _n_dim(node.target)
    with graph.inserting_after(node):
        rest = graph.call_function(node.target, node.args, node.kwargs)
    with graph.inserting_after(rest):
        joined = graph.call_function(aten.cat.default, ([node, rest], -1))
    for part, (start, end) in ((node, (0, aligned)), (rest, (aligned, width))):
        args = list(part.args)
        bias_index = _column_bias(part, args, width)
        with graph.inserting_before(part):
            args[weight_index] = graph.call_function(
                aten.slice.Tensor, (args[weight_index], n_dim, start, end)
            )
            if bias_index is not None:
                args[bias_index] = graph.call_function(aten.slice.Tensor, (args[bias_index], -1, start, end))
        part.args = tuple(args)
    redirect_uses(ep, node, joined)


def _pad(ep: torch.export.ExportedProgram, node: torch.fx.Node, extra: int) -> None:
    """`node` computes `extra` more columns from a zero-padded weight (and bias); its readers read the
    view of the first ones."""
    graph = ep.graph
    width = node.meta["val"].shape[-1]
    args = list(node.args)
    weight_index, bias_index = _WEIGHT[node.target], _column_bias(node, args, width)
    n_pad = [0, extra] if _n_dim(node.target) == 1 else [0, 0, 0, extra]  # (pads list the last dim first)
    with graph.inserting_before(node):
        args[weight_index] = graph.call_function(aten.constant_pad_nd.default, (args[weight_index], n_pad))
        if bias_index is not None:
            args[bias_index] = graph.call_function(
                aten.constant_pad_nd.default, (args[bias_index], [0, extra])
            )
    with graph.inserting_after(node):
        view = graph.call_function(aten.slice.Tensor, (node, -1, 0, width))
    redirect_uses(ep, node, view)
    node.args = tuple(args)


def _left_to_the_kernel(node: torch.fx.Node, rows: int, width: int) -> bool:
    """Whether the generated matmul kernel computes this product as it is: few rows, which it writes
    unaligned faster than cuBLAS computes either rewrite (`passes/matmul_kernel.py`, `computes_alone`)."""
    k = node.args[_ROWS[node.target]].meta["val"].shape[-1]
    index = _BIAS.get(node.target)
    bias = node.args[index] if index is not None and index < len(node.args) else None
    plain = all(node.kwargs.get(scalar, 1) == 1 for scalar in ("beta", "alpha")) and (
        bias is None or bias.meta["val"].numel() == width  # (a bias per column, as the kernel adds)
    )
    return (
        node.meta["val"].dtype == torch.float32
        and plain
        and routed(rows, width, k, knobs.matmul, "tf32")
        and computes_alone(rows, width)
    )


def _in_phases(node: torch.fx.Node, rows: int, width: int) -> bool:
    """Whether the product stays whole for row-phases (`passes/row_phases.py`) to write in aligned phases
    of rows: a bias-free product of contiguous aligned input rows, with rows enough that reading the
    weight once per phase costs less than the prefix's copy."""
    x = node.args[0].meta["val"]
    bias = _BIAS.get(node.target)
    if node.target not in (aten.linear.default, aten.mm.default) or (
        bias is not None and bias < len(node.args) and node.args[bias] is not None
    ):
        return False
    k = x.shape[-1]
    aligned = x.is_contiguous() and (k * x.element_size()) % ALIGNMENT_BYTES == 0
    return aligned and phases_pay(rows, width, k, x.element_size())


def _widths(node: object) -> int | None:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value.shape[-1] if isinstance(value, torch.Tensor) and value.dim() else None
