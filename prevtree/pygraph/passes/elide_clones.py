"""elide-clones: let vendor products read a copy's source where they take its strides as they are.

Hugging Face's `transpose_for_scores` (DeBERTa's queries, keys and values) is
`x.view(B, S, H, D).permute(0, 2, 1, 3).contiguous().view(-1, S, D)` before `torch.bmm`: the copy is a
kernel of its own, which fusion cannot save, since its only reader is the vendor product. cuBLAS's strided
batched GEMM reads matrices at any batch stride as long as their rows (or columns) are contiguous with a
leading stride of at least their length, and ATen hands such an operand to cuBLAS as it is
(`products.vendor_reads_as_is`); the permuted heads of one sequence are such an operand. So where every
reader of a copy (`aten.clone`) is a chain of views ending in a vendor `bmm`, `mm` or `matmul` (class
`library`) that takes what those views make of the copy's source (`products.vendor_operand`), the copy
goes: the views read the source (their layouts recomputed by the view algebra) and the product reads the
source where it is. Export's metadata checks (class `nop`) may read the copy too.

A copy stays when a view of the chain cannot be expressed on the source's strides (`view(-1, S, D)` of the
heads of more than one sequence: eager's `view` would fail there), when the product would get an operand
ATen copies inside the call, when nothing reads it, or when anything else does: a kernel, another library
op, an overwrite of an input or buffer, the program's results (a result is a tensor of its own).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import aten
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout
from .base import Pass, PassError, main_function
from .layouts import eager_layout, op_class, relayout_views, set_layouts
from .products import VENDOR_PRODUCTS, vendor_operand, vendor_reads_as_is

_CLONE = "aten.clone.default"


@dataclasses.dataclass
class ElideClones(Pass):
    """Removes copies whose readers are views ending in vendor products that read the source as it is."""

    name = "elide-clones"
    summary = "let vendor products read a copy's source where they take its strides as they are"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        with module.context:
            for op in list(main.regions[0].blocks[0].operations):
                if aten.aten_name(op) != _CLONE:
                    continue
                if op_class(op) is None:
                    raise PassError.at(op, f"the copy has no {d.CLASS}: run classify-ops first")
                source = op.operands[0]
                layout = eager_layout(source)
                views = None if layout is None else _views_to_products(op.results[0], layout)
                if views is None:
                    continue
                for view, layouts in views:
                    set_layouts(view, layouts)
                op.results[0].replace_all_uses_with(source)
                op.operation.erase()


def _views_to_products(value: ir.Value, layout: Layout) -> list[tuple[Any, list[Layout]]] | None:
    """The views reading `value` with their layouts once `value` has `layout`, when every other reader
    is a vendor product taking the operand as it is (or a no-op) and there is one; else None."""
    relaid = relayout_views(value, layout)
    if relaid is None:
        return None
    views, reads = relaid
    products = 0
    for use, read in reads:
        user = use.owner
        cls = op_class(user)
        if cls is None and aten.aten_name(user) is not None:
            raise PassError.at(user, f"'{user.operation.name}' has no {d.CLASS}: run classify-ops first")
        if cls == "nop":
            continue
        if not (
            cls == "library"
            and aten.aten_name(user) in VENDOR_PRODUCTS
            and use.operand_number in (0, 1)
            and vendor_reads_as_is(vendor_operand(user, use.operand_number, read))
        ):
            return None
        products += 1
    return views if products else None
