"""Strided copies between plan buffers, as launches of an identity fused function (codegen makes each a
copy kernel specialized to both layouts). Used where a pass must move data between two buffers."""

from __future__ import annotations

from typing import Any

from ..ir import attrs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_layout
from ..ir.torch_types import vtensor_type


def launch_kernel(callee: str, inputs: list[ir.Value], outputs: list[ir.Value]) -> Any:
    """A `pygraph.kernel` launch of `callee` at the current insertion point (codegen sets the grid)."""
    return d.create(
        d.KernelOp,
        [inputs + outputs],
        {
            "kernel": ir.FlatSymbolRefAttr.get(callee),
            "grid": attrs.i64_array([1, 1, 1]),
            "access": attrs.str_array(["r"] * len(inputs) + ["w"] * len(outputs)),
        },
    )


def fused_function(module: ir.Module, stem: str, inputs: list[ir.Type], results: list[ir.Type]) -> Any:
    """A new private fused function `<stem>_<n>` (a name not yet taken) at the module's end, with an
    entry block for the caller to fill."""
    names = {
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in module.body.operations
        if "sym_name" in op.attributes
    }
    name = next(f"{stem}_{i}" for i in range(len(names) + 1) if f"{stem}_{i}" not in names)
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp(name, ir.FunctionType.get(inputs, results), visibility="private")
        fn.attributes[d.FUSED] = ir.UnitAttr.get()
        fn.add_entry_block()
    return fn


def emit_copy(module: ir.Module, source: ir.Value, target: ir.Value) -> Any:
    """Launches a copy of `source` into `target` (same sizes and dtype) at the current insertion point."""
    layout = buffer_layout(target)
    type_ = vtensor_type(layout.shape, layout.dtype)
    fn = fused_function(module, "copy", [type_], [type_])
    block = fn.regions[0].blocks[0]
    with ir.InsertionPoint(block):
        func.ReturnOp([block.arguments[0]])
    return launch_kernel(fn.sym_name.value, [source], [target])
