"""Registered state that the model also reaches through plain Python objects.

transformers' `TorchExportableModuleWithStaticCache` registers the tensors of its `StaticCache` as
buffers, and the attention layers write them through the cache object. Non-strict export swaps a module's
registered tensors for fake ones but not the references other objects hold, so it lifts those as
constants: the program gets two inputs for one tensor, one of them written in place, and functionalization
fails on it ("expected compiled_fn to be GraphModule"), or, without a write through the constant, reads a
value from before a write through the buffer. A constant that is exactly a parameter or buffer (same
storage, offset, shape, strides and dtype) is that state: its uses become uses of the state's placeholder.
A constant that overlaps state in another view, where either is written, is refused by name.
"""

from __future__ import annotations

import torch
from torch.export.graph_signature import InputKind, InputSpec

from .rewrite import replace_node, state_value

_STATE = (InputKind.PARAMETER, InputKind.BUFFER)


class StateAliasError(Exception):
    """A tensor the model reaches outside its module attributes overlaps its state in another view."""


def constants_as_state(ep: torch.export.ExportedProgram) -> None:
    """Each lifted constant that is a parameter or buffer becomes a use of it (module docstring)."""
    specs = ep.graph_signature.input_specs
    placeholders = {node.name: node for node in ep.graph.nodes if node.op == "placeholder"}
    state = [(spec, state_value(ep, spec)) for spec in specs if spec.kind in _STATE]
    same_view = {_view(tensor): spec for spec, tensor in state}
    changed = False
    for spec in [s for s in specs if s.kind == InputKind.CONSTANT_TENSOR]:
        value = ep.constants[spec.target]
        same = same_view.get(_view(value)) if value.numel() else None
        if same is None:
            _check_no_written_overlap(spec, value, state, placeholders)
            continue
        replace_node(ep, placeholders[spec.arg.name], placeholders[same.arg.name])
        specs.remove(spec)
        if not any(s.target == spec.target for s in specs):
            del ep.constants[spec.target]
        changed = True
    if changed:
        ep.graph_module.recompile()


def _view(t: torch.Tensor) -> tuple:
    return (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), t.shape, t.stride(), t.dtype)


def _check_no_written_overlap(
    spec: InputSpec,
    value: torch.Tensor,
    state: list[tuple[InputSpec, torch.Tensor]],
    placeholders: dict[str, torch.fx.Node],
) -> None:
    """Raises where `value` shares storage with a parameter or buffer in another view and the program
    writes either: one traced program cannot keep the two in step."""
    for other, tensor in state:
        if not _overlap(tensor, value):
            continue
        if _written(placeholders[spec.arg.name]) or _written(placeholders[other.arg.name]):
            raise StateAliasError(
                f"the model reaches a tensor outside its module attributes (lifted as {spec.target}) that "
                f"overlaps {other.kind.name.lower()} {other.target} in another view, and writes one of "
                "them: pygraph cannot keep the two in step. Reach it through the module's attribute, or "
                "hold exactly the registered tensor"
            )


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the bytes of one storage that the views `a` and `b` can reach intersect."""
    if a.device != b.device or not a.numel() or not b.numel():
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    (a_start, a_stop), (b_start, b_stop) = _bytes(a), _bytes(b)
    return a_start < b_stop and b_start < a_stop


def _bytes(t: torch.Tensor) -> tuple[int, int]:
    """The range of storage bytes the view `t` can reach."""
    extent = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True))
    return t.storage_offset() * t.itemsize, (t.storage_offset() + extent + 1) * t.itemsize


def _written(node: torch.fx.Node) -> bool:
    """Whether an op writes `node` or a view of it, in export's graph before functionalization."""
    pending, seen = [node], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for user in current.users:
            schema = getattr(user.target, "_schema", None)
            if schema is None:
                continue
            for argument, given in zip(schema.arguments, user.args, strict=False):
                if given is current and argument.alias_info is not None and argument.alias_info.is_write:
                    return True
            if any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns):
                pending.append(user)  # a view of it
    return False
