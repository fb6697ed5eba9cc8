"""Means over the pixels of a channels-last tensor with few channels, summed in two steps.

A mean over H and W of an NHWC tensor reduces columns that lie C elements apart, so its kernel takes 64
rows (channels) per program to load along them; with few channels that is one or two programs walking
every pixel (a squeeze-excitation block of 16 channels over 56 x 56 pixels: one program for 50,176
elements; on the H200 mobilenetv3_small's batch norm + hardswish + mean kernels took 6.5-12 us each
where Inductor, which splits such reductions, took 1.5-3 us). Summed over W first, the reduction has
N * C * H rows, spread over many programs, and the sum over H after it is small. The fuser puts the
first sum with its producers (the normalization and the activation, whose result it also writes) and
the second with the division.
"""

from __future__ import annotations

import torch

from .rewrite import propagate_fake_tensors, replace_node

aten = torch.ops.aten
_FEW_ROWS = 2048  # N * C under which one reduction over H and W keeps fewer than 32 programs of 64 rows
_MANY_PIXELS = 64  # H * W from which splitting pays for the second kernel


def split_spatial_means(ep: torch.export.ExportedProgram, devices: tuple[str, ...] = ("cuda",)) -> int:
    """Rewrites each mean or sum over dims 2 and 3 of a 4-D channels-last tensor on `devices` with few
    channels and many pixels as a sum over W, then over H (then the division); returns how many."""
    graph, count = ep.graph, 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.mean.dim, aten.sum.dim_IntList):
            continue
        x, dims = node.args[0], node.args[1]
        value = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if not _splits(value, dims, devices) or node.kwargs.get("dtype") is not None:
            continue
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        pixels = value.shape[2] * value.shape[3]
        with graph.inserting_before(node):
            rows = graph.call_function(aten.sum.dim_IntList, (x, [3], True))
            result = graph.call_function(aten.sum.dim_IntList, (rows, [2], True))
            if node.target is aten.mean.dim:
                result = graph.call_function(aten.div.Tensor, (result, pixels))
            if not keepdim:
                result = graph.call_function(aten.squeeze.dims, (result, [2, 3]))
        replace_node(ep, node, result)
        count += 1
    if count:
        propagate_fake_tensors(ep)
    return count


def _splits(value: object, dims: object, devices: tuple[str, ...]) -> bool:
    if not isinstance(value, torch.Tensor) or value.dim() != 4 or value.device.type not in devices:
        return False
    if not value.dtype.is_floating_point or not isinstance(dims, (list, tuple)):
        return False
    if sorted(d % 4 for d in dims) != [2, 3] or len(dims) != 2:
        return False
    n, c, h, w = value.shape
    channels_last = value.is_contiguous(memory_format=torch.channels_last) and not value.is_contiguous()
    return channels_last and n * c < _FEW_ROWS and h * w >= _MANY_PIXELS and h > 1 and w > 1
