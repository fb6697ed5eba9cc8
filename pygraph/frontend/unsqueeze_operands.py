"""Unit dims added to a pointwise op's result are added to its operands instead.

`unsqueeze(f(a, b))` is `f(unsqueeze(a), unsqueeze(b))` when `a`, `b` and the result share one shape and
`f` is elementwise: the values are the same, element for element. The fuser recomputes a small pointwise
group in its reader's kernel only where the group's shape broadcasts to the reader's from the right
(`fuse_pointwise._broadcasts`); a unit dim inserted before the last one breaks that alignment, so the
group was a kernel of its own whose result the reader loaded. With the unsqueeze on the operands, the group
computes in the reader's alignment: GPT-J's `stack([-x2, x1], -1)` (a `cat` of pieces unsqueezed at the
end) computes the negation in the `cat`'s kernel, and a mask `(a & b)[:, None, None, :]` is recomputed in
the attention scores' kernel. Only single-use, deterministic pointwise ops move (a result read elsewhere
would be computed twice), none that sets a memory format or a device, and none with an operand on another
device (a 0-d host number that a GPU op reads as a scalar would, unsqueezed, be a host tensor).
"""

from __future__ import annotations

import torch
from torch.fx.experimental.symbolic_shapes import guard_or_false
from torch.fx.node import map_arg

from ..passes.pointwise import POINTWISE
from .derived_state import deterministic
from .rewrite import propagate_fake_tensors, replace_node, views_as_reshapes

aten = torch.ops.aten


def unsqueeze_operands(ep: torch.export.ExportedProgram) -> int:
    """Moves each `unsqueeze` of a pointwise op's result onto the op's operands, repeatedly (a chain of
    pointwise ops takes it to its inputs), in place; returns how many moved."""
    graph, moved = ep.graph, 0
    pending = [n for n in graph.nodes if n.target is aten.unsqueeze.default]
    while pending:
        view = pending.pop()
        source = view.args[0]
        if not _moves_through(source):
            continue
        dim = view.args[1] % (source.meta["val"].dim() + 1)
        with graph.inserting_before(view):
            operands = {
                a: graph.call_function(aten.unsqueeze.default, (a, dim)) for a in source.all_input_nodes
            }
            args, kwargs = map_arg((source.args, source.kwargs), operands.__getitem__)
            result = graph.call_function(source.target, args, kwargs)
        for operand in operands.values():  # (values for the next moves; all are recomputed at the end)
            operand.meta["val"] = operand.args[0].meta["val"].unsqueeze(dim)
        result.meta["val"] = view.meta["val"]
        replace_node(ep, view, result)
        for check in list(source.users):  # (export's dtype checks of the value: the moved op keeps it)
            graph.erase_node(check)
        graph.erase_node(source)
        pending += [*operands.values(), *(u for u in result.users if u.target is aten.unsqueeze.default)]
        moved += 1
    if moved:  # (views as reshapes: where the recomputed layouts differ from the trace's, a `view` the trace
        # made after a `.contiguous()` it elided fails; Gemma3's `attn_output.transpose(1, 2)` did on the GPU)
        views_as_reshapes(ep)
        propagate_fake_tensors(ep)
    return moved


def _moves_through(node: torch.fx.Node) -> bool:
    """A pointwise op read once (besides export's dtype checks) whose tensor operands have its shape and
    device."""
    readers = [user for user in node.users if user.target is not aten._assert_tensor_metadata.default]
    if node.op != "call_function" or str(node.target) not in POINTWISE or len(readers) != 1:
        return False
    if not deterministic(node) or {"memory_format", "device"} & set(node.kwargs):
        return False
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor) or not node.all_input_nodes:
        return False  # (an op of no tensor operand, `full`, `arange`, has its shape in its arguments)
    for operand in node.all_input_nodes:
        other = operand.meta.get("val")
        if not isinstance(other, torch.Tensor) or other.dim() != value.dim() or other.device != value.device:
            return False  # (a 0-d host operand of a GPU op, a lifted number, meets it as a scalar only)
        if not all(guard_or_false(a == b) for a, b in zip(other.shape, value.shape, strict=True)):
            return False
    return True
