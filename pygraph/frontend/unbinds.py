"""Unbinds as selects: each `unbind` of the exported graph becomes one `select` per piece.

A host op cannot hold a list, and the pieces as views each get the layout their rule gives. The count is
the one the trace met (the length of the unbind's value): where it is a size the data decide (`for u in
x.unique()`), decomposing cannot know it (torch 2.11's own unbind then guards on it, and the trace
failed), while the trace's check of the count (`u0 == 5`) stays in the program and runs on the host
(`isolate-data-dependent`), so a call with another count is traced again.
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
        for piece in list(node.users):  # (each getitem becomes its select: names, and so outputs, kept)
            piece.target, piece.args = aten.select.int, (source, dim, piece.args[1])
        graph.erase_node(node)
    program.graph_module.recompile()
