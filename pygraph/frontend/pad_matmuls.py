"""Padded matmul outputs: a matmul whose output rows would be unaligned writes padded rows instead.

cuBLAS uses its fast kernels only when every matrix's rows start at 16-byte aligned addresses. A linear
layer with N outputs where N * itemsize is not a multiple of 16 (GPT-2's vocabulary of 50257 words) writes
rows of N elements, and cuBLAS falls back to kernels for unaligned data (`align1`; distilgpt2's logits on
an H200: 1.25 ms against 0.43 ms aligned). As Inductor's padding does, the weight gets zero rows up to an
aligned N', the matmul writes [M, N'] and the program reads the view [..., :N] of it. The padded weight
is computed from the model's tensors alone, so it is made once, not per call (derived_state.py); a
generated kernel reads the view where it lies, and an output of the program is copied into the layout
eager returns (`keep_output_layouts`).

Only matmuls whose weight is the model's state (a parameter, buffer or constant, or a view of one) and
whose output is large enough for the kernel choice to matter are padded.
"""

from __future__ import annotations

import torch

from .derived_state import state_only_nodes
from .rewrite import propagate_fake_tensors, redirect_uses, views_as_reshapes

aten = torch.ops.aten
_ALIGNMENT_BYTES = 16
_MIN_ELEMENTS = 1 << 20  # smaller outputs: an unaligned kernel costs a few microseconds at most


def pad_matmul_outputs(ep: torch.export.ExportedProgram, devices: tuple[str, ...] = ("cuda",)) -> int:
    """Pads the weight of every `linear`, `mm`, `matmul` and `addmm` on `devices` whose output rows would be
    unaligned, in place; returns how many it padded."""
    graph = ep.graph
    state = state_only_nodes(ep)
    padded = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _WEIGHT:
            continue
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor) or value.device.type not in devices:
            continue
        if not value.dtype.is_floating_point or value.numel() < _MIN_ELEMENTS:
            continue
        width = value.shape[-1]
        per_row = _ALIGNMENT_BYTES // value.element_size()
        weight_index = _WEIGHT[node.target]
        if width % per_row == 0 or node.args[weight_index] not in state:
            continue
        extra = per_row - width % per_row
        with graph.inserting_before(node):
            args = list(node.args)
            args[weight_index] = _pad_columns(graph, node.target, args[weight_index], extra)
            bias_index = _BIAS.get(node.target)
            if bias_index is not None and bias_index < len(args) and _widths(args[bias_index]) == width:
                args[bias_index] = graph.call_function(
                    aten.constant_pad_nd.default, (args[bias_index], [0, extra])
                )
        with graph.inserting_after(node):
            view = graph.call_function(aten.slice.Tensor, (node, -1, 0, width))
        redirect_uses(ep, node, view)
        node.args = tuple(args)
        padded += 1
    if padded:
        views_as_reshapes(ep)
        propagate_fake_tensors(ep)
    return padded


# the operand holding the weight, whose output columns get padded, and the bias operand
_WEIGHT = {aten.linear.default: 1, aten.mm.default: 1, aten.matmul.default: 1, aten.addmm.default: 2}
_BIAS = {aten.linear.default: 2, aten.addmm.default: 0}


def _pad_columns(graph: torch.fx.Graph, op: object, weight: torch.fx.Node, extra: int) -> torch.fx.Node:
    """The weight with `extra` more output columns of zeros: rows of a linear's [N, K] weight; columns of
    a matmul's [K, N] operand, padded in its transposed source (`t(W)`, nn.Linear's) so that the padded copy
    keeps the source's memory order."""
    if op is aten.linear.default:
        return graph.call_function(aten.constant_pad_nd.default, (weight, [0, 0, 0, extra]))
    if (
        weight.target in (aten.t.default, aten.transpose.int, aten.permute.default)
        and weight.meta["val"].dim() == 2
    ):
        source = weight.args[0]
        rows = graph.call_function(aten.constant_pad_nd.default, (source, [0, 0, 0, extra]))
        return graph.call_function(aten.t.default, (rows,))
    return graph.call_function(aten.constant_pad_nd.default, (weight, [0, extra]))


def _widths(node: object) -> int | None:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value.shape[-1] if isinstance(value, torch.Tensor) and value.dim() else None
