"""Splits of sizes the data decide as slices: `x.split(counts.tolist())` becomes one `slice` per piece.

A host op cannot hold a list, and a split whose sizes are read from the data (the image features of each
image, the tokens of each sequence) runs on the host: each piece as a slice from the sum of the sizes
before it is the same view of the same bytes, and a host op of its own. The number of pieces is the one the
trace met, as for any list the data decide. Splits of static sizes stay (a list of views pygraph knows).
"""

from __future__ import annotations

import operator

import torch

aten = torch.ops.aten


Size = int | torch.fx.Node


def splits_as_slices(program: torch.export.ExportedProgram) -> None:
    """Rewrites, in place, every `split_with_sizes` of a symbolic size whose pieces are only read one by
    one (`getitem`)."""
    graph = program.graph_module.graph
    for node in list(graph.find_nodes(op="call_function", target=aten.split_with_sizes.default)):
        source, sizes = node.args[:2]
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
        if all(isinstance(s, int) for s in sizes) or any(
            u.target is not operator.getitem for u in node.users
        ):
            continue
        with graph.inserting_before(node):
            bounds: list[Size] = [0]
            for size in sizes:
                bounds.append(_sum(graph, bounds[-1], size, node))
        for piece in list(node.users):  # (each getitem becomes its slice: names, and so outputs, kept)
            index = piece.args[1]
            piece.target, piece.args = aten.slice.Tensor, (source, dim, bounds[index], bounds[index + 1])
        graph.erase_node(node)
    program.graph_module.recompile()


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
