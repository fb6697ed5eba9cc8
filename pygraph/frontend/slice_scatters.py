"""Writes into slices of tensors the program computes, as concatenations.

`out = torch.zeros(...); out[:, :, :m, :m] = y` (a Fourier layer keeping its lowest modes, a padded copy)
is `slice_scatter(zeros, ..., 2, 0, m)` of a `slice_scatter(zeros[:, :, :m], y, 3, 0, m)` after
functionalization: ATen computes each as a copy of its whole base and a copy of the source into it, a
vendor call of its own, where `cat([y, zeros[..., m:]], 3)` is a concatenation that fuse-pointwise computes
in one kernel with the fill and with `y`'s producer. So a `slice_scatter` of step 1, or a `select_scatter`,
whose base the program computes (the source of the base's dtype and device) becomes the `cat` of the
base's slices before and after the written range around the source. The concatenation is contiguous, where
ATen's result keeps its base's strides: so the write is rewritten where its result is contiguous, or where
it is read only as values whose layout nothing after depends on (a piece of a concatenation, the source of
a write: the inner of the nested writes above).

Writes into the model's state or inputs (a KV cache), also after earlier writes into them, stay as they
are: write-in-place makes them copies into the target's view, which move only the written elements.
"""

from __future__ import annotations

import torch

from .rewrite import propagate_fake_tensors, replace_node

aten = torch.ops.aten
# Functional writes, whose result is their first operand's tensor with some elements replaced.
_WRITES = {
    aten.slice_scatter.default,
    aten.select_scatter.default,
    aten.diagonal_scatter.default,
    aten.as_strided_scatter.default,
    aten.index_put.default,
    aten.scatter.src,
    aten.scatter.value,
    aten.copy.default,
}


def slice_scatters_as_concatenations(ep: torch.export.ExportedProgram) -> int:
    """Rewrites the writes it can (module docstring) in place; returns how many."""
    graph = ep.graph
    changed = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (
            aten.slice_scatter.default,
            aten.select_scatter.default,
        ):
            continue
        base, source = node.args[0], node.args[1]
        value, written = base.meta.get("val"), source.meta.get("val")
        if (
            not isinstance(value, torch.Tensor)
            or not isinstance(written, torch.Tensor)
            or (written.dtype, written.device) != (value.dtype, value.device)
            or not (node.meta["val"].is_contiguous() or all(_reads_values(user, node) for user in node.users))
            or _written_into_state(base)
        ):
            continue
        with graph.inserting_before(node):
            pieces = _pieces(graph, node, value)
            if pieces is None:
                continue
            concatenation = graph.call_function(aten.cat.default, (pieces, _dim(node, value)))
        concatenation.meta["val"] = node.meta["val"]  # (for writes into it later in this walk)
        replace_node(ep, node, concatenation)
        changed += 1
    if changed:
        propagate_fake_tensors(ep)
    return changed


def _dim(node: torch.fx.Node, value: torch.Tensor) -> int:
    """The dim a write's range lies along, counted from the front."""
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    return dim % value.dim()


def _reads_values(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """Whether `user` reads `node` as a piece of a concatenation or as the source of a write, whose results'
    layouts do not follow its strides."""
    if user.target is aten.cat.default:
        return True
    return (
        user.target in (aten.slice_scatter.default, aten.select_scatter.default) and user.args[0] is not node
    )


def _written_into_state(node: torch.fx.Node) -> bool:
    """Whether `node` is a placeholder (state, an input) or views or functional writes of one."""
    while node.op == "call_function" and (getattr(node.target, "is_view", False) or node.target in _WRITES):
        node = node.args[0]
    return node.op == "placeholder"


def _pieces(graph: torch.fx.Graph, node: torch.fx.Node, value: torch.Tensor) -> list[torch.fx.Node] | None:
    """The base's slices before and after the written range (those not empty) around the source (given the
    dim a `select_scatter` removes); None for a step other than 1 or an empty range."""
    base, source = node.args[0], node.args[1]
    dim = _dim(node, value)
    size = value.shape[dim]
    if node.target is aten.select_scatter.default:
        index = node.args[3] if len(node.args) > 3 else node.kwargs["index"]
        start = index % size
        end = start + 1
        source = graph.call_function(aten.unsqueeze.default, (source, dim))
    else:
        given, defaults = list(node.args[3:]), [None, None, 1]
        arguments = [*given, *defaults[len(given) :]]
        start, end, step = (
            node.kwargs.get(k, a) for k, a in zip(("start", "end", "step"), arguments, strict=True)
        )
        if step != 1 or not all(isinstance(v, int | None) for v in (start, end)):
            return None
        start, end, _ = slice(start, end).indices(size)
        if start >= end:
            return None
    pieces = [graph.call_function(aten.slice.Tensor, (base, dim, 0, start))] if start > 0 else []
    pieces.append(source)
    if end < size:
        pieces.append(graph.call_function(aten.slice.Tensor, (base, dim, end, size)))
    return pieces
