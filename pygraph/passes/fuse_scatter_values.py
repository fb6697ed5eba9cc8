"""fuse-scatter-values: a scatter kernel computes its values itself where one pointwise kernel made them for
it alone.

A decoding step writes the keys it computes (the rotary embedding of the k projection) into its key cache.
write-in-place makes that write a scatter kernel (`scatter_kernel.py`), which reads the keys that a
pointwise kernel wrote just before: two launches and a buffer for one row of keys. This pass joins them:
the scatter's function takes the pointwise kernel's inputs and ops, and its kernel computes each value
where it stores it (the values have the indexed shape, the scatter kernel's iteration space, and a
pointwise kernel's ops compute any element from its inputs at their strides).

The pointwise launch joins the scatter launch after it when its function holds pointwise ops and
concatenations only (an `arange` aside: its values are its kernel's element index), it has one output, the
scatter's values, which nothing else touches (no view of it either), that output has the indexed shape (no
broadcast), and no node between the two launches touches the storage of its inputs other than by
reading it (the join reads them later than the pointwise kernel did).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import aten
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_root, users, views
from ..ir.torch_types import tensor_info
from .base import Pass, fused_functions, plan_function, record_transform
from .copies import fused_function, launch_kernel
from .fuse_pointwise import clone_op
from .layouts import op_class
from .scatter_kernel import INDEX_PUT, read_scatter

_COMPUTES = ("pointwise", "concat", "scalar")  # classes of the ops a joined function may hold


@dataclasses.dataclass
class FuseScatterValues(Pass):
    """Joins each scatter launch with the pointwise launch computing its values (module docstring)."""

    name = "fuse-scatter-values"
    summary = "a scatter kernel computes its values itself where one pointwise kernel made them for it alone"

    def run(self, module: ir.Module) -> None:
        block = plan_function(module).regions[0].blocks[0]
        with module.context:
            functions = fused_functions(module)
            for scatter in list(block.operations):
                put_fn = _scatter_function(scatter, functions)
                producer = None if put_fn is None else _producer(scatter, put_fn, functions)
                if producer is None or not _inputs_kept(block, producer, scatter):
                    continue
                target, index, values = list(scatter.args)[:3]
                with scatter.location:
                    joined = _join(module, functions[_callee(producer)], put_fn)
                with ir.InsertionPoint(scatter), scatter.location:
                    launch_kernel(joined.sym_name.value, [target, index, *_modes(producer)[0]], [target])
                record_transform(
                    module,
                    self.name,
                    f"the scatter kernel of @{_callee(scatter)} computes its values (@{_callee(producer)}) itself",
                    scatter.location,
                )
                scatter.operation.erase()
                producer.operation.erase()
                if not list(values.uses):
                    values.owner.erase()


def _callee(op: Any) -> str:
    return ir.FlatSymbolRefAttr(op.kernel).value


def _modes(op: Any) -> tuple[list[ir.Value], list[ir.Value]]:
    """A launch's inputs ("r") and outputs ("w"); ([], []) where any argument is both."""
    modes = [ir.StringAttr(m).value for m in op.access]
    if "rw" in modes:
        return [], []
    args = list(op.args)
    return [a for a, m in zip(args, modes, strict=True) if m == "r"], [
        a for a, m in zip(args, modes, strict=True) if m == "w"
    ]


def _scatter_function(op: Any, functions: dict[str, Any]) -> Any:
    """The function of a scatter launch (target, index and values in, the target out) computing one
    `index_put` of its inputs, or None."""
    if not isinstance(op, d.KernelOp):
        return None
    fn = functions.get(_callee(op))
    inputs, outputs = _modes(op)
    if fn is None or len(inputs) != 3 or outputs != inputs[:1]:
        return None
    computed = [o for o in fn.regions[0].blocks[0].operations if aten.aten_name(o) is not None]
    if len(computed) != 1 or aten.aten_name(computed[0]) != INDEX_PUT:
        return None
    values = computed[0].operands[2]
    return fn if isinstance(values, ir.BlockArgument) and values.arg_number == 2 else None


def _producer(scatter: Any, put_fn: Any, functions: dict[str, Any]) -> Any:
    """The pointwise launch writing the values of `scatter` (a launch of `put_fn`) for it alone (module
    docstring), or None."""
    values = list(scatter.args)[2]
    if not isinstance(values.owner, d.AllocOp) or views(values):
        return None
    touching = users(values)
    writers = [op for op in touching if isinstance(op, d.KernelOp) and _modes(op)[1] == [values]]
    if len(touching) != 2 or len(writers) != 1:
        return None
    (producer,) = writers
    fn = functions.get(_callee(producer))
    if fn is None or not _modes(producer)[0]:
        return None
    body = list(fn.regions[0].blocks[0].operations)[:-1]
    for op in body:
        name = aten.aten_name(op)
        if name is not None and (op_class(op) not in _COMPUTES or name.startswith("aten.arange")):
            return None
    put = next(o for o in put_fn.regions[0].blocks[0] if aten.aten_name(o))
    if tuple(tensor_info(fn.type.results[0])[0]) != read_scatter(put).indexed_shape():
        return None
    return producer


def _inputs_kept(block: Any, producer: Any, scatter: Any) -> bool:
    """Whether the nodes between the two launches only read (or leave alone) the producer's inputs."""
    roots = {buffer_root(v) for v in _modes(producer)[0]}
    ops = list(block.operations)
    first = next(i for i, op in enumerate(ops) if op.operation == producer.operation)
    last = next(i for i, op in enumerate(ops) if op.operation == scatter.operation)
    for op in ops[first + 1 : last]:
        if isinstance(op, d.ViewOp):
            continue
        reads = _modes(op)[0] if isinstance(op, d.KernelOp) else []
        if any(buffer_root(v) in roots and v not in reads for v in op.operands):
            return False
    return True


def _join(module: ir.Module, values_fn: Any, scatter_fn: Any) -> Any:
    """A scatter function taking the target, the index and `values_fn`'s inputs, computing the values with
    `values_fn`'s ops before its `index_put`."""
    source, put = values_fn.regions[0].blocks[0], scatter_fn.regions[0].blocks[0]
    inputs = [a.type for a in list(put.arguments)[:2]] + [a.type for a in source.arguments]
    fn = fused_function(module, "scatter", inputs, list(scatter_fn.type.results))
    block = fn.regions[0].blocks[0]
    args = list(block.arguments)
    mapping: dict[ir.Value, ir.Value] = dict(zip(source.arguments, args[2:], strict=True))
    with ir.InsertionPoint(block):
        for op in list(source.operations)[:-1]:
            clone_op(op, mapping)
        (values,) = list(source.operations)[-1].operands
        mapping = {put.arguments[0]: args[0], put.arguments[1]: args[1], put.arguments[2]: mapping[values]}
        for op in list(put.operations)[:-1]:
            clone_op(op, mapping)
        func.ReturnOp([mapping[v] for v in list(put.operations)[-1].operands])
    return fn
