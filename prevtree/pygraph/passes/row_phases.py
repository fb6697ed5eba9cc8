"""row-phases: a vendor product whose output rows start at unaligned addresses is written by aligned
products, one per phase of rows, where the weight read once per phase costs less than the copy it saves.

cuBLAS's fast TF32 kernels need every matrix's rows 16-byte aligned. A product of N outputs per row where
N * itemsize is not a multiple of 16 (GPT-2's 50257 words) writes rows that start at P different
alignments (P = 4 for odd N in float32, 2 for N = 2 mod 4): rows r = j (mod P) form phase j, and within
a phase every row starts at the same alignment, P * N values apart. So the phase's columns from its
first aligned address on, in a multiple of 4 values, are an aligned matrix of leading dimension P * N,
which cuBLAS writes where eager puts it with its fast kernels; the few columns before and after (at most
3 each) are small products of their own, written in place the same way. No copy, no extra buffer: the
output is written once.

The cost is the weight, read once per phase (P times) instead of once: this pays where the product is
compute bound, many rows against K. `frontend/align_matmuls.py` otherwise computes the aligned prefix of
columns into a buffer and copies it with the rest into eager's layout (a cat kernel: the output written
twice and read once more). Measured (`bench/results/probe-row-phases-h200.log`, H200, TF32, K = 768):
[2048, 50257] in 593 us against 706 for the prefix and cat (1245 unaligned), [2048, 30522] 305 against
422, [512, 30522] 111 against 118; [512, 50257] 254 against 183 and [128, 30522] 81 against 53 (the
weight read 4 or 2 times is what loses). Hence `phases_pay`: (P - 1) * K < 2 * M, the weight's extra
reads against the copy's traffic, per output column.

Only `mm.out` (no bias: an LM head's tied embedding) whose operands are aligned for cuBLAS: the input's
rows and the weight's columns (K values each, contiguous) at 16-byte aligned addresses. In IEEE float32
the unaligned kernels are as fast (`align_matmuls.py`), so the pass runs with `matmul-precision=tf32`
only (torch's TF32 setting for matmuls at compile time, as classify-ops reads it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.buffers import buffer_layout, view_of
from ..ir.layout import Layout
from . import matmul_kernel
from .base import Pass, plan_function

ALIGNMENT_BYTES = 16
MIN_ELEMENTS = 1 << 20  # smaller outputs: an unaligned kernel costs a few microseconds at most


def phase_count(row_stride: int, itemsize: int) -> int:
    """How many alignments rows `row_stride` elements apart start at: the least P whose P rows span a
    multiple of the alignment."""
    p = 1
    while (p * row_stride * itemsize) % ALIGNMENT_BYTES:
        p += 1
    return p


def phases_pay(rows: int, width: int, k: int, itemsize: int, row_stride: int | None = None) -> bool:
    """Whether rows in phases beat an aligned prefix and a copy: the weight's P - 1 extra reads (K values
    per column) against the copy's reading and writing of every row (2 * rows per column); and whether
    the output is large enough for either to beat the unaligned kernel ([1024, 3]: 7 us unaligned, 35 in
    phases). The phases follow the rows' stride (`width` where the output is contiguous)."""
    p = phase_count(width if row_stride is None else row_stride, itemsize)
    large = rows * width >= MIN_ELEMENTS and width * itemsize >= ALIGNMENT_BYTES
    return p > 1 and large and (p - 1) * k < 2 * rows


def runs(rows: int, row_stride: int, offset: int, width: int, itemsize: int) -> list[tuple[int, int, int]]:
    """(phase, first column, end column) of each product writing `rows` rows of `width` values,
    `row_stride` apart from element `offset` on: per phase, the aligned middle and the columns before and
    after it."""
    per_row = ALIGNMENT_BYTES // itemsize
    p = phase_count(row_stride, itemsize)
    found = []
    for j in range(min(p, rows)):
        first = min(width, (-(offset + j * row_stride)) % per_row)
        end = first + (width - first) // per_row * per_row
        found += [(j, a, b) for a, b in ((0, first), (first, end), (end, width)) if b > a]
    return found


@dataclasses.dataclass
class RowPhases(Pass):
    """Splits vendor products that write unaligned rows into aligned products per phase of rows."""

    name = "row-phases"
    summary = "products writing unaligned rows become aligned products, one per phase of rows (TF32 only)"
    matmul_precision: str = "ieee"  # torch's matmul precision at compile time: tf32 enables the pass

    def run(self, module: ir.Module) -> None:
        if self.matmul_precision not in matmul_kernel.PRECISIONS:
            raise ValueError(
                f"matmul-precision must be one of {', '.join(matmul_kernel.PRECISIONS)}, not {self.matmul_precision!r}"
            )
        if self.matmul_precision != "tf32":
            return
        block = plan_function(module).regions[0].blocks[0]
        with module.context:
            for op in [o for o in block.operations if isinstance(o, d.LibraryOp)]:
                layouts = _phased_operands(op)
                if layouts is None:
                    continue
                with ir.InsertionPoint(op), op.location:
                    for operands in layouts:
                        fields = {
                            "op": op.attributes["op"],
                            "args": op.attributes["args"],
                            "layouts": ir.ArrayAttr.get([]),
                        }
                        views = [view_of(v, layout) for v, layout in zip(op.inputs, operands, strict=True)]
                        d.create(d.LibraryOp, [views], fields, 0)
                op.operation.erase()


def _phased_operands(op: Any) -> list[tuple[Layout, Layout, Layout]] | None:
    """The (input rows, weight columns, output) layouts of each phase's product, or None where `op` is
    not an aligned-operand `mm.out` writing unaligned rows, or phases do not pay."""
    if ir.StringAttr(op.attributes["op"]).value != "aten.mm.out" or len(op.inputs) != 3:
        return None
    if [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["args"])] != [0, 1, 2]:
        return None
    x, w, out = (buffer_layout(v) for v in op.inputs)
    if any(layout.rank != 2 or layout.is_dynamic or not layout.dtype.is_float for layout in (x, w, out)):
        return None
    itemsize = out.dtype.itemsize
    per_row = ALIGNMENT_BYTES // itemsize
    (rows, width), k = out.shape, x.shape[1]
    aligned = (
        x.strides[1] == 1
        and w.strides[0] == 1
        and out.strides[1] == 1
        and all(value % per_row == 0 for value in (x.strides[0], x.offset, w.strides[1], w.offset))
    )
    unaligned_rows = (out.strides[0] % per_row) != 0
    if not aligned or not unaligned_rows or x.dtype != out.dtype or w.dtype != out.dtype:
        return None
    if not phases_pay(rows, width, k, itemsize, row_stride=out.strides[0]):
        return None
    p = phase_count(out.strides[0], itemsize)
    return [
        (x.slice(0, j, rows, p), w.slice(1, a, b, 1), out.slice(0, j, rows, p).slice(1, a, b, 1))
        for j, a, b in runs(rows, out.strides[0], out.offset, width, itemsize)
    ]
