"""Common subexpressions: an op computed twice from the same operands is computed once.

Rewrites repeat work that the model wrote once: every attention decomposed by `attention.py` inverts the
same boolean mask (BERT's twelve layers, twelve `logical_not`s of one mask), and derived state would
hold each copy (`derived_state.py`: 16 KB each at 128 tokens, 12 MB each at 2048). Models repeat work
too (a rotary embedding's `cos` and `sin` of the same angles in every layer). Here, in program order,
a deterministic ATen op whose target, operands and arguments equal an earlier op's takes that op's result.

Not merged: ops that write or draw random numbers (`derived_state.deterministic`), undefined values
(`empty`), ops returning no tensor, and results the program returns or returns a view of: two returned
results that are one tensor would alias where eager's do not. The decomposed program is functional (export
turns writes into returned values), so equal operands stay equal between the two ops; a program that still
writes in place is left as it is.
"""

from __future__ import annotations

from typing import Any

import torch

from .derived_state import deterministic
from .fold_constants import UNDEFINED
from .rewrite import replace_node


class _Unhashable(Exception):
    """An argument that has no key here: its op is left alone."""


def merge_common_subexpressions(ep: torch.export.ExportedProgram) -> int:
    """Merges repeated ops of `ep` in place (module docstring); returns how many went."""
    if any(n.op == "call_function" and _writes(n.target) for n in ep.graph.nodes):
        return 0  # (a read before a write and one after it would look alike)
    returned = _returned(ep.graph)
    canonical: dict[Any, torch.fx.Node] = {}
    merged = 0
    for node in list(ep.graph.nodes):
        if (
            node.op != "call_function"
            or node in returned
            or not deterministic(node)
            or node.target._schema.name.split("::")[-1] in UNDEFINED
            or not isinstance(node.meta.get("val"), torch.Tensor)
        ):
            continue
        try:
            key = (node.target, _key(node.args), _key(node.kwargs))
        except _Unhashable:
            continue
        first = canonical.setdefault(key, node)
        if first is not node:
            replace_node(ep, node, first)
            merged += 1
    if merged:
        ep.graph_module.recompile()
    return merged


def _writes(target: Any) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable


def _returned(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The program's results and the ops whose results they view."""
    returned: set[torch.fx.Node] = set()
    pending = list(graph.output_node().all_input_nodes)
    while pending:
        node = pending.pop()
        if node in returned:
            continue
        returned.add(node)
        if node.op == "call_function" and getattr(node.target, "is_view", False) and node.args:
            pending += [a for a in node.args[:1] if isinstance(a, torch.fx.Node)]
    return returned


def _key(value: Any) -> Any:
    """A hashable key equal for equal arguments: numbers carry their type (`add(x, 1)` and `add(x, 1.0)`
    differ in dtype; `-0.0` and `0.0` differ in sign, so floats compare by their bits)."""
    if isinstance(value, torch.fx.Node):
        return ("node", value)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(v)) for k, v in value.items()))
    if isinstance(value, float):
        return ("float", value.hex())
    if value is None or isinstance(value, (bool, int, str, torch.dtype, torch.device, torch.layout)):
        return (type(value).__name__, value)
    if isinstance(value, torch.memory_format):
        return ("memory_format", str(value))
    raise _Unhashable(type(value).__name__)
