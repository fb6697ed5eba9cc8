"""Layouts of tensor-level values, as lower-to-plan will give them, for passes that move what reads what.

A value's layout is the one the frontend annotated (`pygraph.layouts` on its op, `pygraph.layout` on an
argument); without one, a view's follows from its source by the view algebra and anything else is
contiguous (hand-written IR), as in lower-to-plan. `relayout_views` recomputes the views reading a value
for another layout of it, which passes need when they give a view another source.
"""

from __future__ import annotations

from typing import Any

from ..ir import aten
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout, view_layouts
from ..ir.torch_types import contiguous_layout, is_tensor
from .pointwise import NO_VALUE, constant_value


def op_class(op: Any) -> str | None:
    return ir.StringAttr(op.attributes[d.CLASS]).value if d.CLASS in op.attributes else None


def eager_layout(value: ir.Value) -> Layout | None:
    """The layout of a static tensor value (see the module docstring); None when it is not known."""
    if isinstance(value, ir.BlockArgument):
        fn = value.owner.owner
        arg_attrs = ir.ArrayAttr(fn.attributes["arg_attrs"]) if "arg_attrs" in fn.attributes else []
        if value.arg_number < len(arg_attrs) and d.LAYOUT in ir.DictAttr(arg_attrs[value.arg_number]):
            return Layout.from_attr(ir.DictAttr(arg_attrs[value.arg_number])[d.LAYOUT])
        return contiguous_layout(value.type)
    op = value.owner
    if d.LAYOUTS in op.attributes:
        layout = Layout.from_attr(ir.ArrayAttr(op.attributes[d.LAYOUTS])[value.result_number])
        return None if layout.is_dynamic else layout
    if op_class(op) == "view":
        source = eager_layout(op.operands[0])
        layouts = None if source is None else view_of(op, source)
        return None if layouts is None else layouts[value.result_number]
    return contiguous_layout(value.type)


def view_of(op: Any, source: Layout) -> list[Layout] | None:
    """The layouts of view op `op`'s results when its source has layout `source`; None when the view
    cannot be expressed so (a `view` needing a copy, a reshape that would copy) or needs other tensors."""
    args = [constant_value(v) for v in list(op.operands)[1:]]
    if any(a is NO_VALUE for a in args):
        return None
    try:
        return view_layouts(aten.aten_name(op), source, args, [])
    except ValueError:
        return None


def relayout_views(
    value: ir.Value, layout: Layout
) -> tuple[list[tuple[Any, list[Layout]]], list[tuple[Any, Layout]]] | None:
    """For `value` given `layout`: the views reading it, transitively, with their new layouts, and every
    other use of it or of them (an `ir.OpOperand`) with the layout it would read; None when a view could
    not be expressed on the new layout, or returns a list of tensors."""
    views, reads, pending = [], [], [(value, layout)]
    while pending:
        current, source = pending.pop()
        for use in current.uses:
            user = use.owner
            if op_class(user) != "view" or use.operand_number != 0:
                reads.append((use, source))
                continue
            layouts = view_of(user, source)
            if layouts is None or len(user.results) != 1 or not is_tensor(user.results[0].type):
                return None
            views.append((user, layouts))
            pending.append((user.results[0], layouts[0]))
    return views, reads


def set_layouts(op: Any, layouts: list[Layout]) -> None:
    op.attributes[d.LAYOUTS] = ir.ArrayAttr.get([layout.to_attr() for layout in layouts])
