"""Calls one ATen op with the arguments a plan states (`pygraph.library` / `pygraph.host`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .. import pair_ops  # noqa: F401  (registers the pygraph ops plans may call: `pygraph.fft_r2c`, ...)
from ..ir import dtypes
from ..ir.plan import Device, Node, Operand
from . import AssumptionFailed

_CHECK = torch.ops.aten._assert_scalar.default


def resolve(op_name: str) -> torch._ops.OpOverload:
    """`"aten.add.Tensor"` -> `torch.ops.aten.add.Tensor`, or an error naming the op."""
    namespace, name, overload = op_name.split(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), overload)
    except AttributeError:
        raise ValueError(f"ATen has no op {op_name}") from None


class AtenCall:
    """A bound call: resolved once, then run any number of times on the operands' current tensors.

    Device arguments become `device`, the backend's; a host op's CPU device stays the CPU (a GPU model
    computing on the CPU, see isolate-data-dependent). An out form (`aten.mm.out`) must write the buffer
    it is given where it is: ATen would resize an `out` of another shape, moving its storage (the whole
    arena) where no reader of the plan looks, so that is an error."""

    def __init__(
        self, op_name: str, aten_args: Sequence[Any], device: torch.device, host: bool = False
    ) -> None:
        self.op = resolve(op_name)
        schema = self.op._schema.arguments
        if len(aten_args) != len(schema):
            raise ValueError(f"{op_name} takes {len(schema)} arguments, the plan gives {len(aten_args)}")
        self.positional: list[Any] = []
        self.keyword: dict[str, Any] = {}
        last = aten_args[-1] if aten_args else None
        self.out = last.index if op_name.endswith(".out") and isinstance(last, Operand) else None
        for spec, value in zip(schema, aten_args, strict=True):
            value = _convert(value, str(spec.type), device, host)
            if spec.kwarg_only:
                self.keyword[spec.name] = value
            else:
                self.positional.append(value)

    def __call__(self, operands: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        args = [_substitute(a, operands) for a in self.positional]
        kwargs = {k: _substitute(v, operands) for k, v in self.keyword.items()}
        if self.out is not None:
            given = operands[self.out]
            address, shape = given.data_ptr(), given.shape
        try:
            out = self.op(*args, **kwargs)
        except RuntimeError as e:
            if self.op is _CHECK:
                raise AssumptionFailed(str(e)) from None
            raise
        if self.out is not None and (given.data_ptr() != address or given.shape != shape):
            raise RuntimeError(f"{self.op} resized the buffer it was to write ({list(shape)})")
        return [_tensor(o) for o in out] if isinstance(out, (tuple, list)) else [_tensor(out)]


@dataclass(frozen=True)
class _Number:
    """Operand `index`, a 0-d tensor passed where the schema wants a number (`.item()`, a size)."""

    index: int


_NUMBER_TYPES = ("int", "float", "bool", "number", "SymInt")


def _tensor(out: Any) -> Any:
    """A number an op returns (`aten.item`, `aten.size.int`) as the 0-d tensor the plan holds for it."""
    if isinstance(out, float):
        return torch.tensor(out, dtype=torch.float64)
    return torch.tensor(out) if isinstance(out, (bool, int)) else out


def _convert(value: Any, schema_type: str, device: torch.device, host: bool) -> Any:
    if isinstance(value, list):
        element = schema_type.removeprefix("Optional[").removeprefix("List[").rstrip("]")
        return [_convert(v, element, device, host) for v in value]
    if isinstance(value, Operand) and schema_type.removeprefix("Optional[").rstrip("]") in _NUMBER_TYPES:
        return _Number(value.index)
    if isinstance(value, Device):
        return torch.device("cpu") if host and value.kind == "cpu" else device
    if isinstance(value, dtypes.DType):
        return getattr(torch, value.name)
    if isinstance(value, int) and not isinstance(value, bool):
        if "ScalarType" in schema_type:
            return getattr(torch, dtypes.BY_SCALAR_TYPE[value].name)
        if "MemoryFormat" in schema_type:
            return [
                torch.contiguous_format,
                torch.preserve_format,
                torch.channels_last,
                torch.channels_last_3d,
            ][value]
        if "Layout" in schema_type:
            return torch.strided
    if isinstance(value, str) and "Device" in schema_type:
        return torch.device("cpu") if host and value == "cpu" else device
    return value


def _substitute(value: Any, operands: Sequence[torch.Tensor]) -> Any:
    if isinstance(value, Operand):
        return operands[value.index]
    if isinstance(value, _Number):
        return operands[value.index].item()
    if isinstance(value, list):
        return [_substitute(v, operands) for v in value]
    return value


def check_results(node: Node, reads: list[torch.Tensor], outs: Sequence[Any]) -> None:
    """A library node's results are fresh storage in the plan (memory planning may reuse its inputs'
    bytes once they die): an ATen call that returns a view of an input (`type_as` of the same dtype, a
    one-operand `einsum`) would be corrupted there, so it is an error here, not a wrong result. (Host
    nodes may return views: the views of data-dependent results run there.)"""
    inputs = {t.untyped_storage().data_ptr() for t in reads if t.numel() > 0}
    for out in outs[: len(node.results)]:
        if isinstance(out, torch.Tensor) and out.numel() > 0 and out.untyped_storage().data_ptr() in inputs:
            raise RuntimeError(f"{node.location}: {node.op} returned a view of its input, not a fresh tensor")
