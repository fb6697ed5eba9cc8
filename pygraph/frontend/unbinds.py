"""Unbinds as selects: each `unbind` of the exported graph becomes one `select` per piece.

A host op cannot hold a list, and the pieces as views each get the layout their rule gives. The count is
the one the trace met (the length of the unbind's value): where it is a size the data decide (`for u in
x.unique()`), decomposing cannot know it (torch 2.11's own unbind then guards on it, and the trace
failed). Such a count is checked (`u0 == 5`): torch 2.13's trace has that check, torch 2.11's lacks it
(there the selects read past the values of a call with fewer: wrong answers on the GPU), so it is added
where missing; it runs on the host (`isolate-data-dependent`), so a call with another count is traced
again.
"""

from __future__ import annotations

import operator

import torch

aten = torch.ops.aten


def unbinds_as_selects(program: torch.export.ExportedProgram) -> None:
    """Rewrites, in place, every unbind whose pieces are only read one by one (`getitem`)."""
    graph = program.graph_module.graph
    for node in list(graph.nodes):
        if node.target is not aten.unbind.int or any(u.target is not operator.getitem for u in node.users):
            continue
        source = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        count = source.meta["val"].shape[dim]
        pieces = len(node.meta["val"])
        if isinstance(count, torch.SymInt) and not _checked(source, dim, pieces):
            _check_count(graph, node, source, dim, count, pieces)
        for piece in list(node.users):  # (each getitem becomes its select: names, and so outputs, kept)
            piece.target, piece.args = aten.select.int, (source, dim, piece.args[1])
        graph.erase_node(node)
    program.graph_module.recompile()


def _checked(source: torch.fx.Node, dim: int, count: int) -> bool:
    """Whether the trace checks itself that `source` has `count` pieces along `dim` (torch 2.13's does)."""
    sizes = [n for n in source.users if n.target is aten.sym_size.int and n.args[1:] == (dim,)]
    equalities = [
        n for size in sizes for n in size.users if n.target is operator.eq and n.args == (size, count)
    ]
    return any(user.target is aten._assert_scalar.default for n in equalities for user in n.users)


def _check_count(
    graph: torch.fx.Graph,
    unbind: torch.fx.Node,
    source: torch.fx.Node,
    dim: int,
    size: torch.SymInt,
    count: int,
) -> None:
    """Inserts, before `unbind`, the check that `source` has the `count` pieces along `dim` the trace met."""
    with graph.inserting_before(unbind):
        length = graph.call_function(aten.sym_size.int, (source, dim))
        holds = graph.call_function(operator.eq, (length, count))
        graph.call_function(
            aten._assert_scalar.default,
            (holds, f"Runtime assertion failed: the trace met {count} pieces of '{unbind.name}' (dim {dim})"),
        )
    length.meta = {"val": size, "stack_trace": unbind.meta.get("stack_trace")}
    holds.meta = {"val": size == count, "stack_trace": unbind.meta.get("stack_trace")}
