"""The decomposition table pygraph passes to `ExportedProgram.run_decompositions`.

pygraph keeps the high-level ops it lowers better itself (linear, convolution, layer_norm, gelu, silu,
hardswish, softmax, scaled_dot_product_attention, batch norm, embedding, addmm, ...): each has a
torch-dialect op, so none is in the table. An op is decomposed only when torch-mlir has no op for it
(it would import as an opaque `torch.operator`, a library call at best) and it breaks down into ops
pygraph handles. Whatever the table, `run_decompositions` functionalizes the graph: in-place ops become
functional ops, and their effect on inputs and buffers becomes mutation outputs of the graph signature.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch._decomp import decomposition_table

from ..ir.context import make_context

aten = torch.ops.aten

# Ops that are not composite and have no torch-dialect op, with why decomposing them is right.
EXPLICIT: dict[torch._ops.OpOverload, str] = {
    aten.index_copy.default: "becomes index_put (KV-cache writes)",
    aten.index_copy_.default: "becomes index_put; functionalization keeps the write as a mutation",
    aten.index_add.default: "becomes index_put with accumulate",
    aten.index_fill.int_Scalar: "becomes a where over a broadcast index mask",
    aten.index_fill.int_Tensor: "becomes a where over a broadcast index mask",
    aten.take.default: "becomes index on the flattened input",
    aten.rsub.Tensor: "a subtraction with swapped operands",
    aten.sinc.default: "pointwise: sin, div and where, fusible",
    aten.nansum.default: "a where and a sum",
    aten.std_mean.correction: "var_mean and a sqrt",
    aten.xlogy.Scalar_Other: "pointwise: log, mul and where, fusible",
    aten.xlogy.Scalar_Self: "pointwise: log, mul and where, fusible",
    aten.addr.default: "an outer product: broadcast mul and add, fusible",
    aten._native_batch_norm_legit_functional.default: "training-mode batch norm: var_mean and pointwise ops",
    aten._native_batch_norm_legit.no_stats: "batch norm without running statistics: var_mean and pointwise ops",
}

# Every CompositeImplicitAutograd op that export keeps and torch-mlir has no op for (aliases such as
# aten.multiply, aten.greater, aten.concat, aten.divide, and composites such as aten.diff, aten.kron,
# aten.tensordot) is decomposed into the ops that define it.
COMPOSITE_REASON = "composite with no torch-dialect op: decomposed into the ops that define it"


def _is_composite(op: torch._ops.OpOverload) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")


def _torch_dialect_name(op: torch._ops.OpOverload) -> str:
    """The op torch-mlir's importer emits for `op` (it uses `torch.operator` when none is registered)."""
    schema = op._schema
    name = f"torch.{schema.name.replace('::', '.')}"
    return f"{name}.{schema.overload_name}" if schema.overload_name else name


def _build() -> dict[torch._ops.OperatorBase, Callable]:
    context = make_context()
    table: dict[torch._ops.OperatorBase, Callable] = {op: decomposition_table[op] for op in EXPLICIT}
    for op, decomposition in torch.export.default_decompositions().items():
        if not isinstance(op, torch._ops.OpOverload) or not _is_composite(op):
            continue
        if not context.is_registered_operation(_torch_dialect_name(op)):
            table[op] = decomposition
    return table


TABLE = _build()
