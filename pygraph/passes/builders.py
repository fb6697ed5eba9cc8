"""Torch-dialect ops that passes create, at the current insertion point and location.

A pass running after classify-ops gives each op it creates its class (`classified=True`: constants and
lists `scalar`, views `view`, the rest as the caller says); one running before leaves them to
classify-ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ir import attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.torch_types import tensor_info, vtensor_type


def create(
    name: str,
    operands: Sequence[ir.Value],
    results: Sequence[ir.Type],
    cls: str | None = None,
    **attributes: Any,
) -> Any:
    """The op `name`; its class `cls` where one is given."""
    op = ir.Operation.create(name, results=list(results), operands=list(operands), attributes=attributes)
    if cls is not None:
        op.attributes[d.CLASS] = attrs.string(cls)
    return op


def value(
    name: str, operands: Sequence[ir.Value], result: ir.Type, cls: str | None = None, **attributes: Any
) -> ir.Value:
    """The one result of a new op `name`."""
    return create(name, operands, [result], cls, **attributes).results[0]


def constant(value: bool | int | float | None, classified: bool = False) -> ir.Value:
    """`torch.constant.none`, `.bool`, `.int` or `.float` of `value`."""
    cls = "scalar" if classified else None
    if value is None:
        return create("torch.constant.none", [], [ir.Type.parse("!torch.none")], cls).results[0]
    if isinstance(value, bool):
        kind, attribute = "bool", ir.BoolAttr.get(value)
    elif isinstance(value, int):
        kind, attribute = "int", attrs.i64(value)
    else:
        kind, attribute = "float", attrs.f64(value)
    return create(
        f"torch.constant.{kind}", [], [ir.Type.parse(f"!torch.{kind}")], cls, value=attribute
    ).results[0]


def int_list(values: Sequence[int], classified: bool = False) -> ir.Value:
    """A `torch.prim.ListConstruct` of int constants (sizes, dims)."""
    items = [constant(n, classified) for n in values]
    cls = "scalar" if classified else None
    return create("torch.prim.ListConstruct", items, [ir.Type.parse("!torch.list<int>")], cls).results[0]


def view(value: ir.Value, shape: Sequence[int], classified: bool = False) -> ir.Value:
    """`aten.view(value, shape)`, with the constants it needs."""
    _, dtype = tensor_info(value.type)
    result = vtensor_type(list(shape), dtype)
    listed = int_list(shape, classified)
    return create("torch.aten.view", [value, listed], [result], "view" if classified else None).results[0]
