"""Indexing by an `arange` as a slice: `index_select(x, d, arange(a, b, s))` is the view `x[..., a:b:s]`.

Relative attention (XLNet, Transformer-XL) shifts its scores with `index_select(x, 3, arange(klen))`: as
an ATen gather it is a kernel of its own that reads and writes every score (4.5 us per layer of xlnet_I1
on an H200); as a slice it is a view, which the kernel reading the scores (the softmax) folds into its
loads. Only constant, ascending ranges inside the dim are rewritten (out of range, eager raises; the view
would not), and not where the program returns the result (a view would alias what it indexes).
"""

from __future__ import annotations

import torch
from torch.export.graph_signature import TensorArgument

from .rewrite import propagate_fake_tensors, replace_node

aten = torch.ops.aten
_ARANGES = (aten.arange.default, aten.arange.start, aten.arange.start_step)


def arange_indexing_as_slices(ep: torch.export.ExportedProgram) -> int:
    """Rewrites the `index_select`s of an `arange` it can (module docstring) in place; returns how many."""
    graph = ep.graph
    returned = {s.arg.name for s in ep.graph_signature.output_specs if isinstance(s.arg, TensorArgument)}
    changed = 0
    for node in list(graph.nodes):
        if (
            node.op != "call_function"
            or node.target is not aten.index_select.default
            or node.name in returned
        ):
            continue
        x, dim, index = node.args
        span = _constant_range(index)
        size = x.meta["val"].shape[dim] if isinstance(x.meta.get("val"), torch.Tensor) else None
        if span is None or not isinstance(size, int):
            continue
        start, step, count = span
        if step <= 0 or count == 0 or start < 0 or start + (count - 1) * step >= size:
            continue
        with graph.inserting_before(node):
            view = graph.call_function(aten.slice.Tensor, (x, dim, start, start + count * step, step))
        view.meta = dict(node.meta)
        replace_node(ep, node, view)
        changed += 1
    if changed:
        propagate_fake_tensors(ep)
    return changed


def _constant_range(node: object) -> tuple[int, int, int] | None:
    """(start, step, count) of an `arange` node with constant integer arguments, else None."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function" or node.target not in _ARANGES:
        return None
    if not all(isinstance(a, int) for a in node.args):
        return None
    bounds = {1: (0, node.args[0], 1), 2: (*node.args, 1), 3: node.args}.get(len(node.args))
    if bounds is None:
        return None
    start, end, step = bounds
    return (start, step, len(range(start, end, step))) if step else None
