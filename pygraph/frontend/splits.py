"""Splits of sizes the data decide as slices: `x.split(counts.tolist())` becomes one `slice` per piece.

A host op cannot hold a list, and a split whose pieces' sizes the data decide runs on the host: sizes read
from the data (the image features of each image, the tokens of each sequence), or rows the data decide
split along another dim (`x[mask].chunk(2, dim=-1)`, JetMoE's experts' gated halves). Each piece as a slice
from the sum of the sizes before it is the same view of the same bytes, and a host op of its own. The
number of pieces is the one the trace met, as for any list the data decide. Other splits stay (a list of
views pygraph knows).
"""

from __future__ import annotations

import operator

import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

aten = torch.ops.aten
# ops that split their first operand along the dim of their third (default 0) into a list of views
_BY_SIZES = {aten.split_with_sizes.default, aten.unsafe_split_with_sizes.default}
_SPLITS = {
    *_BY_SIZES,
    aten.split.Tensor,
    aten.unsafe_split.Tensor,
    aten.chunk.default,
    aten.unsafe_chunk.default,
}

Size = int | torch.fx.Node


def splits_as_slices(program: torch.export.ExportedProgram) -> None:
    """Rewrites, in place, every split whose pieces have sizes the data decide and are only read one by one
    (`getitem`): a split into symbolic sizes, or into pieces of unbacked sizes along a dim of a static
    size."""
    graph = program.graph_module.graph
    splits = [n for n in graph.nodes if n.target in _SPLITS]
    for node in splits:
        sizes = _sizes(node)
        if sizes is None or any(u.target is not operator.getitem for u in node.users):
            continue
        source = node.args[0]
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
        with graph.inserting_before(node):
            bounds: list[Size] = [0]
            for size in sizes:
                bounds.append(_sum(graph, bounds[-1], size, node))
        for piece in list(node.users):  # (each getitem becomes its slice: names, and so outputs, kept)
            index = piece.args[1]
            piece.target, piece.args = aten.slice.Tensor, (source, dim, bounds[index], bounds[index + 1])
        graph.erase_node(node)
    program.graph_module.recompile()


def _sizes(split: torch.fx.Node) -> list[Size] | None:
    """The sizes of the pieces of `split` along its dim, where they are to become slices; else None."""
    pieces = split.meta.get("val")
    data_sized = any(free_unbacked_symbols(p) for p in pieces or ())
    if split.target in _BY_SIZES:
        sizes = list(split.args[1])
        return sizes if data_sized or not all(isinstance(s, int) for s in sizes) else None
    dim = split.args[2] if len(split.args) > 2 else split.kwargs.get("dim", 0)
    sizes = [p.shape[dim] for p in pieces or ()]
    return sizes if data_sized and all(isinstance(s, int) for s in sizes) else None


def _sum(graph: torch.fx.Graph, a: Size, b: Size, at: torch.fx.Node) -> Size:
    """`a + b`, a node where either is one (its value the sum of theirs)."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    total = graph.call_function(operator.add, (a, b))
    total.meta = {"val": _value(a) + _value(b), "stack_trace": at.meta.get("stack_trace")}
    return total


def _value(size: Size) -> int | torch.SymInt:
    return size.meta["val"] if isinstance(size, torch.fx.Node) else size
