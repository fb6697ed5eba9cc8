"""Facts about plan buffers read from the IR: layouts, and where a buffer's storage comes from."""

from __future__ import annotations

from typing import Any

from . import dialect as d
from ._mlir import ir
from .aten import VIEW_OPS
from .layout import Layout


def _arg_attrs(value: ir.BlockArgument) -> ir.DictAttr:
    fn = value.owner.owner
    arg_attrs = ir.ArrayAttr(fn.attributes["arg_attrs"]) if "arg_attrs" in fn.attributes else []
    if value.arg_number >= len(arg_attrs):
        return ir.DictAttr.get({})
    return ir.DictAttr(arg_attrs[value.arg_number])


def buffer_layout(value: ir.Value) -> Layout:
    """The layout of a plan buffer, as the op or function argument that defines it states it."""
    if isinstance(value, ir.BlockArgument):
        attrs = _arg_attrs(value)
        if d.LAYOUT not in attrs:
            raise ValueError(f"argument {value.arg_number} has no {d.LAYOUT}")
        return Layout.from_attr(attrs[d.LAYOUT])
    op = value.owner
    if isinstance(op, d.BUFFER_OPS):
        return Layout.from_attr(op.layout)
    if isinstance(op, (d.LibraryOp, d.HostOp)):
        return Layout.from_attr(op.layouts[value.result_number])
    if isinstance(op, d.SegmentOp):
        return buffer_layout(op.body.blocks[0].operations[-1].values[value.result_number])
    raise ValueError(f"'{op.operation.name}' does not define a plan buffer")


def buffer_root(value: ir.Value) -> ir.Value:
    """The value that owns the buffer's storage: views and segment results lead back to it."""
    while True:
        if isinstance(value, ir.BlockArgument):
            return value
        op = value.owner
        if isinstance(op, d.ViewOp):
            value = op.source
        elif isinstance(op, d.SegmentOp):
            value = op.body.blocks[0].operations[-1].values[value.result_number]
        else:
            return value


def _io(root: ir.Value) -> str:
    """How the runtime reaches an input or an output (`pygraph.io`); "" for other buffers."""
    if isinstance(root, ir.BlockArgument):
        attrs = _arg_attrs(root)
    elif isinstance(root.owner, (d.OutputOp, d.LibraryOp)):  # a vendor call's result may be returned
        fn = root.owner.operation.parent
        while "res_attrs" not in fn.attributes:
            fn = fn.parent
        results = ir.ArrayAttr(fn.attributes["res_attrs"])
        if isinstance(root.owner, d.OutputOp):
            index = ir.IntegerAttr(root.owner.index).value
        else:
            exits = ("func.return", "pygraph.yield")  # a result returned leaves through one of them
            if not any(getattr(u.owner, "operation", u.owner).name in exits for u in root.uses):
                return ""
            block = fn.regions[0].blocks[0]
            returned = block.operations[len(block.operations) - 1].operands
            index = next((i for i, v in enumerate(returned) if buffer_root(v) == root), None)
            if index is None:
                return ""
        attrs = ir.DictAttr(results[index])
    else:
        return ""
    return ir.StringAttr(attrs[d.IO]).value if d.IO in attrs else ""


def reached_through_table(value: ir.Value) -> bool:
    """True when the table holds the address of the buffer's storage: an input reached through it, an
    output, or a host op's result that graphs read through it."""
    root = buffer_root(value)
    if isinstance(root, ir.BlockArgument):
        return _io(root) in ("indirect", "copy")
    owner = root.owner
    if isinstance(owner, d.HostOp):
        return ir.IntegerAttr(owner.slots[root.result_number]).value >= 0
    return isinstance(owner, d.OutputOp) and _io(root) != "patch"


def patched(value: ir.Value) -> bool:
    """True when the runtime writes the buffer's address into the parameters of each graph node that
    touches it, every call (an input or output reached by "patch")."""
    return _io(buffer_root(value)) == "patch"


def indirection_offset(value: ir.Value) -> int:
    """Elements from the address in the table slot (the root tensor's first element) to this buffer's first."""
    return buffer_layout(value).offset - buffer_layout(buffer_root(value)).offset


def users(value: ir.Value) -> list[Any]:
    """Ops that touch the buffer: users of the value, of views of it, and of segment results forwarding it."""
    return [op for op in _reached(value) if not isinstance(op, d.ViewOp)]


def touching(value: ir.Value) -> list[Any]:
    """`users`, and those of the views host ops take of the buffer: a view whose arguments the data decide
    (`x[i.item()]`) runs between graphs and returns a tensor in the buffer's own bytes, which its readers
    then touch too."""
    found = users(value)
    for op in list(found):
        if isinstance(op, d.HostOp) and ir.StringAttr(op.op).value in VIEW_OPS:
            for result in op.results_:
                found += touching(result)
    return found


def views(value: ir.Value) -> list[Any]:
    """The view ops taken of the buffer, of those views, and of segment results forwarding it."""
    return [op for op in _reached(value) if isinstance(op, d.ViewOp)]


def _reached(value: ir.Value) -> list[Any]:
    """Ops using the value, its views or segment results forwarding it (views included, yields not)."""
    found, stack, seen = [], [value], set()
    while stack:
        v = stack.pop()
        for use in v.uses:
            owner = use.owner
            if (owner.operation, use.operand_number) in seen:
                continue
            seen.add((owner.operation, use.operand_number))
            if isinstance(owner, d.YieldOp):
                segment = owner.operation.parent.opview
                stack.append(segment.results_[use.operand_number])
                continue
            found.append(owner)
            if isinstance(owner, d.ViewOp):
                stack.append(owner.buf)
    return found


def written_operand(op: Any) -> ir.Value | None:
    """The operand an ATen call writes: an in-place form's first argument (`aten.index_put_.default`: its
    name ends in `_`), an out form's last (`aten.mm.out`: `out`, write-in-place and out-form make them);
    None for other calls."""
    _, name, overload = op.op.value.split(".")
    position = 0 if name.endswith("_") else -1 if overload == "out" else None
    return None if position is None or not len(op.args) else argument_operand(op, position)


def argument_operand(op: Any, position: int) -> ir.Value | None:
    """The operand an ATen call (library or host op) passes as its argument `position` (negative: counted
    from the end), if that argument is an operand (`N : index`)."""
    arg = list(op.args)[position]
    is_operand = isinstance(arg, ir.IntegerAttr) and isinstance(arg.type, ir.IndexType)
    return op.inputs[ir.IntegerAttr(arg).value] if is_operand else None


def view_of(source: ir.Value, layout: Layout) -> ir.Value:
    """A view of `source`'s storage with `layout`, created at the current insertion point."""
    return d.create(d.ViewOp, [source], {"layout": layout.to_attr()}, 1).buf
