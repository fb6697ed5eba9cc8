"""write-in-place: update a mutated buffer or input where the model writes it, instead of copying it.

The frontend keeps a mutation visible as `pygraph.overwrite(new, target)`, and lower-to-plan performs it
at the end of the call as a copy of the new value into the target: always correct, but a KV-cache
update at a position given by a tensor (`cache.index_copy_(1, pos, x)`, i.e. `index_put`) then computes
a whole new cache and copies all of it back. When nothing after the op that makes the new value reads the
target's old contents, the op can write the target itself, in the graph, as eager does:

- an ATen op with an in-place form (`index_put`, `scatter`, ...) becomes that form on the target
  (`index_put_`): only the indexed elements move; an `index_put` of one index tensor becomes the
  generated scatter kernel instead, writing the target (`scatter_kernel.py`);
- `select_scatter` / `slice_scatter` (`cache[:, pos] = x`) become a copy of the source into that view of
  the target;
- a generated kernel that computes the new value (`x.add_(1)`, batch-norm running statistics) writes it
  into the target instead of a temporary, when it reads the target, if at all, element for element at
  the same place it writes (a kernel without reductions, same layout, no gather reading the target at
  its indices): each element is read before it is written, by the same program.

The copy into the target goes away; readers of the new value read the target. Each rewrite is recorded.
A copy that comes after a check of the data (isolate-data-dependent puts writes there) while the new value
is made before it stays: written in place, the target would change even in a call that fails the check.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import aten, attrs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import argument_operand, buffer_layout, buffer_root
from ..ir.layout import Layout
from ..ir.plan import attr_value
from .base import Pass, plan_function, record_transform
from .copies import emit_copy
from .gathers import gathered_arguments
from .scatter_kernel import INDEX_PUT, emit_scatter

# Functional ATen ops whose first argument an in-place form writes, with that form.
IN_PLACE = {
    "aten.index_put.default": "aten.index_put_.default",
    "aten.scatter.src": "aten.scatter_.src",
    "aten.scatter.value": "aten.scatter_.value",
    "aten.scatter_add.default": "aten.scatter_add_.default",
    "aten.masked_scatter.default": "aten.masked_scatter_.default",
}
# View scatters: the view of the target their source fills.
SCATTERS = {"aten.select_scatter.default", "aten.slice_scatter.default"}


@dataclasses.dataclass
class WriteInPlace(Pass):
    """Performs overwrites of buffers and inputs where the new value is made, when that is equivalent."""

    name = "write-in-place"
    summary = "write a mutated buffer or input in place (in-place ATen ops, kernels) instead of copying it"

    def run(self, module: ir.Module) -> None:
        main = plan_function(module)
        block = main.regions[0].blocks[0]
        with module.context:
            for copy in [op for op in block.operations if _overwrite(op) is not None]:
                source, target = _overwrite(copy)
                if not isinstance(target, ir.BlockArgument) or not isinstance(source, ir.OpResult):
                    continue
                maker = _maker(source)
                if maker is None:
                    continue
                ops = list(block.operations)
                later = ops[_index(ops, maker) + 1 :]
                if any(_reads(op, target) for op in later if op.operation != copy.operation):
                    continue  # the target's old contents are still needed
                if any(_is_check(op) for op in later[: _index(later, copy)]):
                    continue  # written after the checks of the data: a call failing one has written nothing
                location = maker.location
                what = _rewrite(module, maker, copy, source, target)
                if what is not None:
                    record_transform(module, self.name, what, location)


def _is_check(op: Any) -> bool:
    """A check of numbers read from the data (isolate-data-dependent schedules writes after them)."""
    return isinstance(op, d.HostOp) and op.op.value == aten.CHECK


def _overwrite(op: Any) -> tuple[ir.Value, ir.Value] | None:
    """(new value, target) of a copy lower-to-plan emitted for an overwrite: a memcpy or a copy kernel."""
    if isinstance(op, d.CopyOp):
        return op.source, op.target
    if isinstance(op, d.KernelOp) and ir.FlatSymbolRefAttr(op.kernel).value.startswith("copy_"):
        return op.args[0], op.args[1]
    return None


def _maker(value: ir.OpResult) -> Any:
    """The node that computes `value`: the op it is a result of, or the one node writing the arena buffer."""
    if not isinstance(value.owner, d.AllocOp):
        return value.owner
    writers = [use.owner for use in value.uses if _writes(use.owner, value)]
    return writers[0] if len(writers) == 1 else None


def _rewrite(module: ir.Module, maker: Any, copy: Any, source: ir.Value, target: ir.Value) -> str | None:
    """Makes `maker` write `target`; returns what changed, or None when it cannot."""
    name = _arg_name(target)
    if isinstance(maker, d.LibraryOp) and argument_operand(maker, 0) == target:
        if sum(buffer_root(v) == target for v in maker.inputs) != 1:
            return None  # another operand aliases the target: writing it would change what is read
        op = maker.op.value
        if op in IN_PLACE:
            with ir.InsertionPoint(maker), maker.location:
                scatter = emit_scatter(module, maker) if op == INDEX_PUT else None
                if not isinstance(scatter, d.KernelOp):
                    fields = {
                        "op": attrs.string(IN_PLACE[op]),
                        "args": maker.args,
                        "layouts": ir.ArrayAttr.get([]),
                    }
                    d.create(d.LibraryOp, [list(maker.inputs)], fields, 0)
            _replace(copy, source, target)
            if isinstance(scatter, d.KernelOp):
                return f"{op} of '{name}' becomes a scatter kernel writing it in place: only the written elements move"
            why = f" (no scatter kernel: {scatter})" if scatter else ""
            return f"{op} of '{name}' becomes {IN_PLACE[op]}: only the written elements move{why}"
        if op in SCATTERS:
            args = [attr_value(a) for a in list(maker.args)[2:]]
            view = _scatter_view(op, buffer_layout(target), args)
            with ir.InsertionPoint(maker), maker.location:
                window = d.create(d.ViewOp, [target], {"layout": view.to_attr()}, 1)
                emit_copy(module, argument_operand(maker, 1), window.buf)
            _replace(copy, source, target)
            return (
                f"{op} of '{name}' becomes a copy into the view it replaces: only {view.numel} elements move"
            )
        return None
    if isinstance(maker, d.KernelOp) and _elementwise_into(module, maker, source, target):
        _replace(copy, source, target)
        return f"kernel @{ir.FlatSymbolRefAttr(maker.kernel).value} writes '{name}' in place"
    return None


def _replace(copy: Any, source: ir.Value, target: ir.Value) -> None:
    """Readers of the new value read the target; the copy and the op (or alloc) that made it go away."""
    copy.operation.erase()
    owner = source.owner
    source.replace_all_uses_with(target)
    owner.operation.erase()


def _elementwise_into(module: ir.Module, kernel: Any, source: ir.Value, target: ir.Value) -> bool:
    """Whether `kernel` may write `target` in place of `source`: a pointwise kernel (no reductions, no
    attention) whose temporary has the target's layout, which it writes alone, reading the target (if at
    all) in the same layout, and not as the source of a gather (read at its indices)."""
    layout = buffer_layout(target)
    if not isinstance(source.owner, d.AllocOp) or not buffer_layout(source).addresses_like(layout):
        return False
    modes = [ir.StringAttr(m).value for m in kernel.access]
    if [a == source and "w" in m for a, m in zip(kernel.args, modes, strict=True)].count(True) != 1:
        return False
    reads = [a for a in kernel.args if buffer_root(a) == target]
    if any(not buffer_layout(a).addresses_like(layout) for a in reads):
        return False
    callee = ir.FlatSymbolRefAttr(kernel.kernel).value
    fused = next(
        (op for op in module.body.operations if isinstance(op, func.FuncOp) and op.sym_name.value == callee),
        None,
    )
    if fused is None or d.FUSED not in fused.attributes:
        return False
    body = fused.regions[0].blocks[0].operations
    gathered = gathered_arguments(body)
    if any(buffer_root(a) == target for k, a in enumerate(kernel.args) if k in gathered):
        return False
    if any(
        d.CLASS in op.attributes
        and ir.StringAttr(op.attributes[d.CLASS]).value in ("reduction", *d.KERNEL_TEMPLATES)
        for op in body
    ):
        return False
    for i, a in enumerate(kernel.args):
        if a == source:
            kernel.operands[i] = target
    return True


def _writes(op: Any, value: ir.Value) -> bool:
    if isinstance(op, d.KernelOp):
        modes = [ir.StringAttr(m).value for m in op.access]
        return any(a == value and "w" in m for a, m in zip(op.args, modes, strict=True))
    return isinstance(op, (d.CopyOp, d.FillOp)) and op.target == value


def _reads(op: Any, target: ir.Value) -> bool:
    """Whether `op` touches `target`'s storage (through any view)."""
    return any(buffer_root(v) == target for v in op.operands)


def _scatter_view(op: str, base: Layout, args: list[Any]) -> Layout:
    """The view of `base` that `select_scatter(base, src, dim, index)` or `slice_scatter(base, src, dim,
    start, end, step)` fills."""
    if op == "aten.select_scatter.default":
        return base.select(args[0], args[1])
    return base.slice(*args)


def _index(ops: list[Any], op: Any) -> int:
    return next(i for i, o in enumerate(ops) if o.operation == op.operation)


def _arg_name(value: ir.BlockArgument) -> str:
    fn = value.owner.owner
    attrs_ = ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[value.arg_number])
    return ir.StringAttr(attrs_[d.NAME]).value if d.NAME in attrs_ else f"arg{value.arg_number}"
