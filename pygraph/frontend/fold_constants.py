"""Constant folding: the numbers a program computes from compile-time constants alone, computed once.

`torch.tensor(64.0)` in `forward` holds the same value in every call: its data are Python numbers, which
export bakes into the program (it lifts the tensor as a constant that the program copies, with
`lift_fresh_copy`). So do tensors made from numbers alone (`torch.full((), 2.0)`) and any deterministic op
whose tensor operands are all such values: DeBERTa's `sqrt(tensor(head_size) * scale_factor)`, by which
every layer divides its keys. Such an op whose result is 0-d is computed here with ATen, on the device
and in the dtypes of the program (so the value is bit for bit eager's), and the result replaces it as a
literal: a lifted constant marked `LITERAL`, which the importer makes a number in the op reading it
(`torch.prim.NumToTensor.Scalar` of the value, in the result's dtype: it promotes like the 0-d tensor).
A generated kernel writes it in its source (`k / 8.0` is `k * 0.125`), and passes can read the value
(move-scales moves a scale by a power of two from a product's operand to its result).

Not folded: anything that reads a parameter, buffer or input, or a constant the model holds (a tensor
attribute or a global, which it may change in place: derived state, `derived_state.py`, recomputes those
when they change); random ops and ops whose values are undefined (`empty`); results the program returns
(a literal is one tensor for every call); results of more than one element (derived state places those
on the device once, which is all folding would do for them); intermediates past `_MAX_ELEMENTS`.
"""

from __future__ import annotations

import torch
from torch.export.graph_signature import InputKind

from .derived_state import deterministic
from .rewrite import add_constant

aten = torch.ops.aten

LITERAL = (
    "pygraph_literal"  # node.meta key of a folded constant's placeholder: the importer makes it a number
)
_MAX_ELEMENTS = 1 << 16  # larger intermediates are not computed at compile time
# ops whose values are undefined: neither folded nor merged (common_subexpressions.py)
UNDEFINED = ("empty", "new_empty", "empty_like", "empty_strided", "new_empty_strided", "empty_permuted")


def fresh_constants(ep: torch.export.ExportedProgram) -> set[str]:
    """Lifted constants that `torch.tensor(data)` made during tracing: read only through `lift_fresh_copy`
    (an exported program before `run_decompositions`, which makes those copies clones)."""
    placeholders = {n.name: n for n in ep.graph.find_nodes(op="placeholder")}
    return {
        spec.target
        for spec in ep.graph_signature.input_specs
        if spec.kind == InputKind.CONSTANT_TENSOR
        and (users := placeholders[spec.arg.name].users)
        and all(u.target is aten.lift_fresh_copy.default for u in users)
    }


def fold_constants(ep: torch.export.ExportedProgram, fresh: set[str]) -> list[str]:
    """Replaces the 0-d results computed from the `fresh` constants and numbers alone by literals (module
    docstring), in place; returns the names of the constants added."""
    specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
    returned = set(ep.graph.output_node().all_input_nodes)
    values: dict[torch.fx.Node, torch.Tensor] = {}
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in specs and specs[node.name].target in fresh:
            values[node] = ep.constants[specs[node.name].target]
        elif node.op == "call_function" and _foldable(node, values):
            value = _evaluate(node, values)
            if value is not None:
                values[node] = value
    folded: set[torch.fx.Node] = set()
    computed: set[torch.fx.Node] = set()  # what the program still computes
    for node in reversed(ep.graph.nodes):
        if node not in values:
            computed.add(node)
        elif node.op == "call_function" and any(u in computed for u in node.users):
            small = values[node].dim() == 0 and node not in returned
            (folded if small else computed).add(node)
    names = []
    for node in [n for n in ep.graph.nodes if n in folded]:
        name = f"folded_{node.name}"
        literal = add_constant(ep, name, values[node])
        literal.meta[LITERAL] = True
        node.replace_all_uses_with(literal)
        names.append(name)
    if names:
        ep.graph.eliminate_dead_code()
        ep.graph_module.recompile()
    return names


def _foldable(node: torch.fx.Node, values: dict[torch.fx.Node, torch.Tensor]) -> bool:
    """A deterministic op with defined values, of one small static tensor, reading folded values alone."""
    value = node.meta.get("val")
    return (
        deterministic(node)
        and not node.target.is_view
        and node.target._schema.name.split("::")[-1] not in UNDEFINED
        and isinstance(value, torch.Tensor)
        and not value.is_complex()
        and all(isinstance(s, int) for s in value.shape)
        and value.numel() <= _MAX_ELEMENTS
        and all(n in values for n in node.all_input_nodes)
    )


def _evaluate(node: torch.fx.Node, values: dict[torch.fx.Node, torch.Tensor]) -> torch.Tensor | None:
    """The node's value computed with ATen; None where ATen has no kernel for it here (a custom op known
    to export by its fake implementation alone: it stays in the program), or where its value disagrees
    with export's."""
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), values.__getitem__)
    try:
        with torch.no_grad():
            value = node.target(*args, **kwargs)
    except NotImplementedError:
        return None
    expected = node.meta["val"]
    if not isinstance(value, torch.Tensor) or (value.shape, value.dtype) != (expected.shape, expected.dtype):
        return None
    return value
