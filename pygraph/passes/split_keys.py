"""split-keys: an attention of few query rows per key head (a decoding step) runs as two kernels, its keys
split across programs.

The attention kernel gives each program one head and block of queries and loops over all the keys: a
decoding step's one query per head makes as many programs as query heads, each reading its key head's
whole cache, and most multiprocessors idle. Where `attention_kernel.split_size` says so, the launch of the
attention's fused function becomes two launches of it: the first (`pygraph.split_keys = "parts"`) reads
q, k, v and the mask and writes, per key head, split of keys and query row, the row's maximum, sum of
exponentials and weighted values into a new float32 buffer of parts [key heads, splits, rows, Ev + 2];
the second (`"combine"`) reads the parts and writes the attention's result where the one launch wrote it.
codegen-triton writes each (`attention_kernel.SplitAttentionWriter`); plan-memory places the parts like
any buffer, live between the two.

`keys` is PYGRAPH_SPLIT_KEYS: "auto" (the measured rule), "off", or keys per program forced wherever the
rows fit one program (tests: the interpreter's sizes are small). The frontend routes the half-precision
attentions this pass splits to the generated kernel (ATen's otherwise: `frontend/attention.py`), by the
same rule.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import attrs, dtypes
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout
from .attention_kernel import read_attention, split_size
from .base import Pass, PassError, fused_functions, plan_function
from .copies import launch_kernel

FLOAT32 = dtypes.BY_NAME["float32"]


@dataclasses.dataclass
class SplitKeys(Pass):
    """Splits the keys of attentions of few query rows per key head across programs (module docstring)."""

    name = "split-keys"
    summary = "attentions of few query rows per key head split their keys across programs, a second kernel combining"
    keys: str = "auto"  # PYGRAPH_SPLIT_KEYS: auto, off, or keys per program (a power of two, at least 16)

    def run(self, module: ir.Module) -> None:
        split_size(1, 1, 1, 1, self.keys)  # (a bad setting fails here, whatever the plan holds)
        functions = fused_functions(module)
        block = plan_function(module).regions[0].blocks[0]
        errors: list[tuple[ir.Location, str]] = []
        with module.context:
            for op in [o for o in block.operations if isinstance(o, d.KernelOp)]:
                callee = ir.FlatSymbolRefAttr(op.kernel).value
                attention = _attention(functions.get(callee))
                if attention is None or d.SPLIT_KEYS in op.attributes:
                    continue
                try:
                    a = read_attention(attention)
                except ValueError as exc:
                    errors.append((op.location, f"cannot split @{callee}: {exc}"))
                    continue
                heads, rows = math.prod(a.batch) // a.group, a.group * a.queries
                size = split_size(heads, a.group, a.queries, a.keys, self.keys, a.dtype.itemsize == 2)
                if size is None:
                    continue
                parts_layout = Layout.contiguous([heads, -(-a.keys // size), rows, a.value_dim + 2], FLOAT32)
                *inputs, out = op.args
                if [ir.StringAttr(m).value for m in op.access] != ["r"] * len(inputs) + ["w"]:
                    errors.append(
                        (
                            op.location,
                            f"cannot split @{callee}: its launch does not read its inputs and write one result",
                        )
                    )
                    continue
                with ir.InsertionPoint(op), op.location:
                    parts = d.create(
                        d.AllocOp, [], {"layout": parts_layout.to_attr(), "arena_offset": attrs.i64(-1)}, 1
                    ).buf
                    for stage, reads, writes in (("parts", inputs, parts), ("combine", [parts], out)):
                        launch = launch_kernel(callee, list(reads), [writes])
                        launch.attributes[d.SPLIT_KEYS] = ir.StringAttr.get(stage)
                op.operation.erase()
        if errors:
            raise PassError(errors)


def _attention(fn: Any) -> Any:
    """The attention op of a fused function of class "attention", or None."""
    if fn is None:
        return None
    for op in fn.regions[0].blocks[0].operations:
        if d.CLASS in op.attributes and ir.StringAttr(op.attributes[d.CLASS]).value == "attention":
            return op
    return None
