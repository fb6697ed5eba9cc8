"""Short builders and readers for the builtin attributes pygraph writes (call inside a Context)."""

from __future__ import annotations

from collections.abc import Iterable

from ._mlir import ir


def i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def index(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IndexType.get(), int(value))


def f64(value: float) -> ir.FloatAttr:
    return ir.FloatAttr.get(ir.F64Type.get(), float(value))


def string(value: str) -> ir.StringAttr:
    return ir.StringAttr.get(value)


def i64_array(values: Iterable[int]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([i64(v) for v in values])


def str_array(values: Iterable[str]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([string(v) for v in values])


def int_list(attr: ir.Attribute) -> list[int]:
    return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(attr)]


def str_list(attr: ir.Attribute) -> list[str]:
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(attr)]
