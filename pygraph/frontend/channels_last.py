"""Channels-last convolutions: 2-D convolutions on the GPU read their input in NHWC order.

cuDNN's fast float kernels (TF32, half) work on NHWC data. Given NCHW tensors, it transposes each
convolution's input into NHWC and its result back inside every call (resnet18 on an H200: 32 transpose
kernels, a third of its GPU time), and ATen's own depthwise kernel for NCHW is slower still. So, as
Inductor's layout optimization does, each such convolution gets its input as
`clone(x, memory_format=channels_last)`: where a generated kernel produces `x` (a batch norm, a ReLU, an
add), that kernel writes NHWC directly; ATen then returns the convolution's result in NHWC, and the
pointwise ops after it keep that layout, so the transposes disappear. Each weight is converted too (ATen
would copy it in every call): a weight of the model's is converted once and kept, and again only when the
model changes it (derived_state.py). Convolutions that cuDNN runs in NCHW whatever it is given (few input
channels, large filters: `_nchw_engine`) keep their NCHW input.

Every layout in the program then follows from ATen's own rules: the fake tensors of all nodes are
recomputed (`FakeTensorProp`), and the importer annotates eager layouts from them as always.
"""

from __future__ import annotations

import torch

from .rewrite import propagate_fake_tensors, replace_node, views_as_reshapes

aten = torch.ops.aten
_CONVOLUTIONS = (aten.conv2d.default, aten.convolution.default)


def convolutions_channels_last(ep: torch.export.ExportedProgram, devices: tuple[str, ...] = ("cuda",)) -> int:
    """Makes the input and weight of every 4-D convolution on `devices` channels-last, in place; returns
    how many tensors it converts."""
    graph = ep.graph
    conversions: set[torch.fx.Node] = set()
    weights: dict[torch.fx.Node, torch.fx.Node] = {}  # each weight converted once, for all its convolutions
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _CONVOLUTIONS:
            continue
        x = node.args[0]
        value = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        if not isinstance(value, torch.Tensor) or value.dim() != 4 or value.device.type not in devices:
            continue
        weight = node.args[1]
        if not _nhwc(value) and _nchw_engine(value, weight.meta.get("val")):
            continue
        with graph.inserting_before(node):
            if not _nhwc(value) or value.is_contiguous():  # (an input given NHWC already is read as it is)
                x = graph.call_function(aten.clone.default, (x,), {"memory_format": torch.channels_last})
                conversions.add(x)
            if weight not in weights:  # also for an NHWC input: ATen's result layout depends on both
                weights[weight] = graph.call_function(
                    aten.clone.default, (weight,), {"memory_format": torch.channels_last}
                )
        node.args = (x, weights[weight], *node.args[2:])
        conversions.add(weights[weight])
    if not conversions:
        return 0
    views_as_reshapes(ep)  # a flatten before a classifier cannot `view` NHWC strides
    propagate_fake_tensors(ep)
    # Once convolutions return NHWC, the ops after them do too: a conversion of a tensor that is NHWC
    # already (so is a 1x1 or depthwise weight) is a copy for nothing.
    for node in list(conversions):
        if _nhwc(node.args[0].meta.get("val")):
            replace_node(ep, node, node.args[0])
            conversions.discard(node)
    conversions |= _adaptive_pools_read_nchw(graph)
    propagate_fake_tensors(ep)
    return len(conversions)


def _adaptive_pools_read_nchw(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """ATen's adaptive average pooling of NHWC data runs a kernel five times slower than of NCHW (a
    spectrogram's 8 x 16 x 201 x 101 pooled to 8 x 8 on an H200: 104 against 21 us,
    `probe-fourier-s44b-h200.log`), so a pooling after NHWC convolutions gets its input in NCHW, which the
    kernel computing that input writes directly. (Windows of one size are pooling.py's views.)"""
    conversions = set()
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.adaptive_avg_pool2d.default:
            continue
        value = node.args[0].meta.get("val")
        if _nhwc(value) and not value.is_contiguous():
            with graph.inserting_before(node):
                nchw = graph.call_function(
                    aten.clone.default, (node.args[0],), {"memory_format": torch.contiguous_format}
                )
            node.args = (nchw, *node.args[1:])
            conversions.add(nchw)
    return conversions


def _nchw_engine(x: torch.Tensor, weight: object) -> bool:
    """Whether cuDNN computes this convolution with an NCHW kernel anyway: for float inputs of fewer than 4
    channels it has NHWC kernels only for filters up to 7 x 7. Past that (ViT's 16 x 16 patches, AlexNet's
    11 x 11 stem) NHWC tensors cost a conversion kernel of ours and three transposes of cuDNN's around its
    NCHW kernel (bench/results/kernels.json, H200), so such a convolution keeps the NCHW input it is given."""
    return isinstance(weight, torch.Tensor) and x.shape[1] < 4 and min(weight.shape[-2:]) > 7


def _nhwc(value: object) -> bool:
    return (
        isinstance(value, torch.Tensor)
        and value.dim() == 4
        and value.is_contiguous(memory_format=torch.channels_last)
    )
