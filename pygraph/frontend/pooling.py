"""Pooling as views and pointwise ops, so that a pooling window joins the kernels around it.

`max_pool2d(x, k, s, p)` is the elementwise maximum of the k*k strided views `xp[..., i::s, j::s]`
(cropped to the output's size) of `xp`, x padded with -inf; `avg_pool2d` without padding is the sum of
those views divided by k*k; `adaptive_avg_pool2d(x, 1)` is the mean over the last two dims. The views cost
nothing and the maximum or sum is pointwise, so fuse-pointwise puts it in one kernel with its neighbours,
where ATen launches a pooling kernel of its own (on NHWC data a slow one: 26 us per max pool of AlexNet
on an H200, against 4 for the kernel of the same window as views). Maxima are exact, so max pooling
gives eager's bits; an average sums in another order (within a few ulp).

Left to ATen: dilation, ceil_mode, padded averages, `divisor_override`, integer tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .rewrite import propagate_fake_tensors, replace_node

aten = torch.ops.aten


def pooling_as_views(ep: torch.export.ExportedProgram) -> int:
    """Rewrites the poolings it can (module docstring) in place; returns how many."""
    graph = ep.graph
    changed = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        x = node.args[0] if node.args else None
        value = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        out = node.meta.get("val")
        if (
            not isinstance(value, torch.Tensor)
            or not value.dtype.is_floating_point
            or value.dim() not in (3, 4)
        ):
            continue
        if not isinstance(out, torch.Tensor) or not all(isinstance(n, int) for n in out.shape):
            continue  # sizes known only at run time
        with graph.inserting_before(node):
            if node.target is aten.max_pool2d.default:
                result = _max_pool(graph, x, value, out, *node.args[1:])
            elif node.target is aten.avg_pool2d.default:
                result = _avg_pool(graph, x, value, out, *node.args[1:])
            elif node.target is aten.adaptive_avg_pool2d.default and list(node.args[1]) == [1, 1]:
                result = graph.call_function(aten.mean.dim, (x, [-2, -1], True))
            else:
                continue
        if result is None:
            continue
        with graph.inserting_before(node):
            result = _in_memory_format_of(graph, result, value, out)
        if result is None:
            continue
        replace_node(ep, node, result)
        changed += 1
    if changed:
        propagate_fake_tensors(ep)
    return changed


def _in_memory_format_of(
    graph: torch.fx.Graph, result: torch.fx.Node, value: torch.Tensor, out: torch.Tensor
) -> torch.fx.Node | None:
    """`result` (pointwise ops of views of `value`, laid out as `value` is) in the memory format of the
    pooling's own output `out`, which later views in the trace assume (a reshape that was a view of
    ATen's contiguous output of a transposed input is no view of the maximum's): a copy in the same
    kernel where the two differ; None where `out` is in neither format."""
    for memory_format in (torch.contiguous_format, torch.channels_last):
        if out.dim() == 3 and memory_format is torch.channels_last:
            continue
        if out.is_contiguous(memory_format=memory_format):
            if value.is_contiguous(memory_format=memory_format):
                return result
            return graph.call_function(aten.clone.default, (result,), {"memory_format": memory_format})
    return None


def _max_pool(
    graph: torch.fx.Graph,
    x: torch.fx.Node,
    value: torch.Tensor,
    out: Any,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    dilation: Sequence[int] = (1,),
    ceil_mode: bool = False,
) -> torch.fx.Node | None:
    if _pair(dilation) != (1, 1) or ceil_mode:
        return None
    (ph, pw) = _pair(padding)
    source = x
    if ph or pw:
        source = graph.call_function(aten.constant_pad_nd.default, (x, [pw, pw, ph, ph], float("-inf")))
    views = _windows(graph, source, value.dim(), _pair(kernel_size), _pair(stride or kernel_size), out)
    return _combine(graph, views, aten.maximum.default)


def _avg_pool(
    graph: torch.fx.Graph,
    x: torch.fx.Node,
    value: torch.Tensor,
    out: Any,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: Sequence[int] = (0,),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> torch.fx.Node | None:
    if _pair(padding) != (0, 0) or ceil_mode or divisor_override is not None:
        return None
    kernel = _pair(kernel_size)
    views = _windows(graph, x, value.dim(), kernel, _pair(stride or kernel_size), out)
    total = _combine(graph, views, aten.add.Tensor)
    return graph.call_function(aten.div.Scalar, (total, kernel[0] * kernel[1]))


def _windows(
    graph: torch.fx.Graph,
    source: torch.fx.Node,
    rank: int,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    out: torch.Tensor,
) -> list[torch.fx.Node]:
    """The kernel[0] * kernel[1] strided views of `source`, one per position in the window, each of the
    output's size."""
    rows, cols = out.shape[-2], out.shape[-1]
    views = []
    for i in range(kernel[0]):
        band = graph.call_function(
            aten.slice.Tensor, (source, rank - 2, i, i + stride[0] * (rows - 1) + 1, stride[0])
        )
        for j in range(kernel[1]):
            views.append(
                graph.call_function(
                    aten.slice.Tensor, (band, rank - 1, j, j + stride[1] * (cols - 1) + 1, stride[1])
                )
            )
    return views


def _combine(graph: torch.fx.Graph, views: list[torch.fx.Node], op: Any) -> torch.fx.Node:
    """`op(...op(op(v0, v1), v2)..., vn)`: the window's maximum or sum, in window order."""
    result = views[0]
    for view in views[1:]:
        result = graph.call_function(op, (result, view))
    return result


def _pair(value: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    values = list(value)
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])
