"""The generated matmul kernel: a linear layer (or mm, addmm, matmul) with its pointwise consumers fused.

A vendor matmul cannot take the ops that follow it (GELU, a residual add), so they cost a kernel of their
own that reads the product back. This kernel computes a [BM, BN] block of the product with `tl.dot`,
adds the bias, then applies the consumers to the block in registers (the epilogue) and stores only what
leaves the group. Every operand is read at its own strides: rows with any leading dims, a weight of
[N, K] (linear) or [K, N] (mm, addmm, matmul), transposed views included; the epilogue's inputs and
outputs are addressed from the row-major index of the result, as in any pointwise kernel.

Where it runs, measured on an H200 with TF32 dots. In isolation (`bench/probes/probe_matmul_template.py`,
`bench/results/probe-matmul-template-h200.log`: vendor call plus epilogue kernel against this kernel, per
shape of the benchmark's transformers, replayed with operands hot in L2) it wins where the work is small
and K short, at most 2^30 multiply-adds and K <= 1024 (ViT's projections 6.0 -> 3.2 us with the residual
add, its MLP 6.5 -> 4.3 us with GELU, MobileBERT's 34.8 -> 27.4 and 25.7 -> 16.0, MT5's 15.5 -> 13.6), and
loses past it (DistilGPT-2's [2048, 768] x [768, 3072]: 49.5 against 43.0; K = 3072 with few rows: 20.0
against 13.6, which would need split-K). Inside the models (`bench/results/bench-matmul-rule-h200.log`,
`kernels-matmul-rule-h200.json`), where a layer's weights come from memory rather than L2, few rows by a large
weight lose too: BERT's [128, 768] x [768, 3072] with GELU 12.1 us against 7.6 + 1.8, XLNet's [128, 1024]
x [1024, 4096] 17.0 against 11.0 + 2.0 (cuBLAS splits K across more multiprocessors), while ViT's MLP
(3.9 us against about 6) and GPT-2's (8.6 against 9, with 12 split-K reductions fewer: the model 0.624 ->
0.597 ms) still win; so the weight is bounded too, at `MAX_WEIGHT` values (ViT's and MobileBERT's are far
below it, GPT-2's and BERT's 2.4M above), unless the rows are at most `FEW_ROWS` (GPT-2's 32: blocks of
16 rows make twice as many programs as columns of 64, each streaming its slice of the weight once). With IEEE
float32 dots (TF32 off) cuBLAS's SGEMM wins everywhere, by about 2x. So with `matmul=auto` classify-ops
gives the class `matmul` to products within `MAX_WORK`, `MAX_K` and `MAX_WEIGHT`, or of at most `FEW_ROWS`
rows and `MAX_K` at any width, when the dots may use TF32, and fuse-pointwise fuses one only when the
kernel reading its result is pointwise (a consumer kernel would otherwise remain: a reduction, as layer
norm after a residual add, keeps the vendor call); `matmul=all` takes every product the kernel can
compute, in either precision (tests, and users who measured).

One product computes alone, with no epilogue (`computes_alone`): few rows by a width whose rows cuBLAS's
fast kernels cannot write (not a multiple of 16 bytes: GPT-2's logits, 32 rows by 50257 words). cuBLAS
then runs its unaligned kernels, or the aligned prefix and a cat (`frontend/align_matmuls.py`), both slower
(`bench/probes/probe_wide_product.py`, `probe-wide-product-h200.log`, [32, 768] x [768, 50257] with TF32:
65.2 and 58.3 us against 43.3 for this kernel, which streams the weight once as cuBLAS does); and the
split's prefix would hold its 6.1 MB in the arena until the cat. With many rows the split wins (2048 rows:
704 against 821 us), so align_matmuls leaves only these products unsplit.

Blocks (`matmul_blocks`, same probe): BM = 128, else 64, rows when that still makes 90 programs (most
of a wave of 132 multiprocessors), else 16 rows with BK = 64 (the best configuration on every shape of
fewer than 256 rows but BERT's [128, 3072] output); BN = 64, 4 warps, 3 pipeline stages. A block is never
taller than the rows (rounded up to a power of two), and rows of at most 32 fill one block where that
makes 90 programs: a wide product then reads each slice of its weight once (GPT-2's logits: 32 x 64
blocks; 16-row blocks would read the 154 MB weight twice).
"""

from __future__ import annotations

import math
from typing import Any

from ..ir import aten, dtypes
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.layout import Layout
from ..ir.torch_types import tensor_info
from . import pointwise
from .codegen_triton import (
    INT32_MAX,
    Writer,
    conjunction,
    indices,
    load_lines,
    merge_dims,
    pow2,
    spans_overflow,
    term,
    zero_masked,
)
from .products import Product, read_product

PRECISIONS = ("ieee", "tf32")  # values of `pygraph.matmul_kernel`: tl.dot's input precision
ROUTES = ("auto", "all", "off")  # classify-ops' `matmul` option (module docstring)
MAX_K = 1024
MAX_WORK = 1 << 30  # M * N * K
MAX_WEIGHT = 1 << 19  # N * K
FEW_ROWS = 32
_MIN_DOT = 16  # the smallest block along each dim of tl.dot
_ALIGNED_COLUMNS = 4  # float32 values in 16 bytes: rows of a multiple of this many cuBLAS writes fast
_MIN_PROGRAMS = 90


def read_matmul(op: Any, route: str, precision: str) -> Product | None:
    """The product `op` computes if it should be a `matmul` kernel under `route` and `precision`: more than
    one row (one row is the matrix-vector kernel's), and with `auto` TF32 dots and a size where the kernel
    measured faster."""
    product = read_product(op)
    if product is None or not routed(product.m, product.n, product.k, route, precision):
        return None
    return product


def routed(m: int, n: int, k: int, route: str, precision: str) -> bool:
    """Whether `route` gives a product of [m, k] by [k, n] to the kernel (module docstring)."""
    if route == "off" or m == 1:
        return False
    small = k <= MAX_K and (m <= FEW_ROWS or (m * n * k <= MAX_WORK and n * k <= MAX_WEIGHT))
    return route == "all" or (precision == "tf32" and small)


def computes_alone(m: int, n: int) -> bool:
    """Whether the kernel should compute a float32 product of `m` rows and `n` columns that no pointwise op
    reads (module docstring): few rows whose `n` values cuBLAS's fast kernels cannot write (rows not a
    multiple of 16 bytes, `frontend/align_matmuls.py`)."""
    return m <= FEW_ROWS and n % _ALIGNED_COLUMNS != 0


def matmul_blocks(m: int, n: int, k: int) -> tuple[int, int, int]:
    """(BM, BN, BK) for a product of [m, k] by [k, n] (module docstring)."""
    block_n = min(64, max(_MIN_DOT, pow2(n)))
    columns = -(-n // block_n)
    rows = max(_MIN_DOT, pow2(m))
    block_m = next(
        (b for b in (128, 64, rows) if b <= rows and -(-m // b) * columns >= _MIN_PROGRAMS), _MIN_DOT
    )
    block_k = 64 if block_m == _MIN_DOT else 32
    return block_m, block_n, min(block_k, max(_MIN_DOT, pow2(k)))


class MatmulWriter(Writer):
    """Writes the kernel of a fused function holding one `matmul` op and its pointwise consumers."""

    num_warps = 4
    num_stages = 3

    def __init__(self, fn: Any, layouts: list[Layout], indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        products = [op for op in self.body_ops if _is_product(op)]
        if len(products) != 1:
            raise ValueError(f"a matmul kernel computes one product, not {len(products)}")
        op = products[0]
        product = read_product(op)
        if product is None:
            raise ValueError(f"the matmul kernel cannot compute this {aten.aten_name(op)}")
        precision = (
            ir.StringAttr(op.attributes[d.MATMUL_KERNEL]).value if d.MATMUL_KERNEL in op.attributes else ""
        )
        if precision not in PRECISIONS:
            raise ValueError(f"{d.MATMUL_KERNEL} is {precision!r}, not one of {', '.join(PRECISIONS)}")
        self.product, self.precision = product, precision
        operands = list(op.operands)
        roles = [product.rows, product.weight] + ([product.bias] if product.bias is not None else [])
        if not all(isinstance(operands[i], ir.BlockArgument) for i in roles):
            raise ValueError("the rows, weight and bias of a matmul kernel must be its inputs")
        self.rows, self.weight = (operands[i].arg_number for i in roles[:2])
        self.bias = operands[product.bias].arg_number if product.bias is not None else None
        self.shape = tuple(tensor_info(self.results[0].type)[0])
        if any(tuple(tensor_info(v.type)[0]) != self.shape for v in self.results) or math.prod(
            self.shape
        ) != (product.m * product.n):
            raise ValueError(
                "the outputs of a matmul kernel must have one shape, the product's or a reshape of it"
            )
        self.numel = product.m * product.n
        self.block_m, self.block_n, self.block_k = matmul_blocks(product.m, product.n, product.k)
        self.grid_n = -(-product.n // self.block_n)
        self.grid = -(-product.m // self.block_m) * self.grid_n
        self.wide = self.numel > INT32_MAX or spans_overflow(layouts)
        self.index = pointwise.Value("i", dtypes.BY_NAME["int64" if self.wide else "int32"], 1)
        self.acc = pointwise.Value("acc", dtypes.BY_NAME["float32"], len(self.shape))
        self.epilogue_ops = sum(aten.aten_name(o) not in (None, *aten.RESHAPES) for o in self.body_ops) - 1

    def _emit(self, op: Any, name: str) -> None:
        if _is_product(op) or (name in aten.RESHAPES and self.values.get(op.operands[0]) == self.acc):
            self.values[op.results[0]] = self.acc  # (a reshape keeps the row-major order the epilogue uses)
            return
        super()._emit(op, name)

    def _block_shape(self) -> str:
        return f"{self.block_m}, {self.block_n}"

    def _render(self, stores: list[tuple[int, str]]) -> str:
        p, bm, bn, bk = self.product, self.block_m, self.block_n, self.block_k
        m_tail, n_tail, k_tail = p.m % bm != 0, p.n % bn != 0, p.k % bk != 0
        pid = "tl.program_id(0).to(tl.int64)" if self.wide else "tl.program_id(0)"
        ops = self.epilogue_ops
        epilogue = f"then an epilogue of {ops} op{'s' if ops > 1 else ''}" if ops else "no epilogue"
        lines = [
            f"# [{p.m}, {p.k}] x [{p.k}, {p.n}]{' plus a bias' if p.bias is not None else ''}, {epilogue}: "
            f"{self.grid} programs of {bm} x {bn}, K in steps of {bk}, {self.precision} dots",
            *self._dereference(),
            f"pid = {pid}",
            f"rm = {_scaled(f'pid // {self.grid_n}' if self.grid_n > 1 else 'pid', bm)} + tl.arange(0, {bm})",
            f"rn = {_scaled(f'pid % {self.grid_n}', bn) + ' + ' if self.grid_n > 1 else ''}tl.arange(0, {bn})",
        ]
        row_lines, row_offset = self._row_offset()
        lines += row_lines
        weight_n, weight_k = self.layouts[self.weight].strides[:: -1 if p.transposed else 1]
        a_mask = conjunction(m_tail and f"rm[:, None] < {p.m}", k_tail and f"k[None, :] < {p.k}")
        b_mask = conjunction(k_tail and f"k[:, None] < {p.k}", n_tail and f"rn[None, :] < {p.n}")
        lines += [
            f"acc = tl.full([{bm}, {bn}], 0.0, tl.float32)",
            f"for k0 in range(0, {p.k}, {bk}):",
            f"    k = k0 + tl.arange(0, {bk})",
            f"    a = tl.load(in{self.rows} + {row_offset}[:, None] + {term('k[None, :]', self.layouts[self.rows].strides[-1])}"
            f"{zero_masked(a_mask)})",
            f"    b = tl.load(in{self.weight} + {term('k[:, None]', weight_k)} + {term('rn[None, :]', weight_n)}"
            f"{zero_masked(b_mask)})",
            f'    acc += tl.dot(a, b, input_precision="{self.precision}")',
        ]
        if self.bias is not None:
            bias = f"in{self.bias} + {term('rn', self.layouts[self.bias].strides[-1])}"
            lines.append(f"acc = acc + tl.load({bias}{zero_masked(n_tail and f'rn < {p.n}')})[None, :]")
        lines.append(f"i = rm[:, None] * {p.n} + rn[None, :]")
        mask = conjunction(m_tail and f"rm[:, None] < {p.m}", n_tail and f"rn[None, :] < {p.n}")
        if mask:
            lines.append(f"mask = {mask}")
        masked = ", mask=mask" if mask else ""
        used = sorted(self.loaded) + [a for a, _ in stores]
        dims, strides = merge_dims(list(self.shape), {a: self._strides(a) for a in used} | self.named)
        index_lines, offset = indices("i", "d", dims, strides)
        lines += index_lines
        for line in self.lines:  # (lines and loads: the epilogue has no concatenation)
            if isinstance(line, str):
                lines.append(line)
            else:
                lines += load_lines(
                    line, offset, "mask" if mask else "", f"{bm}, {bn}", self.wide, "mask" if mask else ""
                )
        n_in = len(self.args)
        for a, value in stores:
            lines.append(f"tl.store(out{a - n_in} + {offset(a)}, {value}{masked})")
        return "".join(f"    {line}\n" for line in lines)

    def _row_offset(self) -> tuple[list[str], str]:
        """Lines computing `xrow`, each row's offset in the rows operand (any leading dims, any strides)."""
        layout = self.layouts[self.rows]
        dims, strides = merge_dims(list(layout.shape[:-1]), {"x": tuple(layout.strides[:-1])})
        lines, offset = indices("rm", "xm", dims, strides)
        row = offset("x")
        return [*lines, f"xrow = {row if row != '0' else 'rm * 0'}"], "xrow"


def _is_product(op: Any) -> bool:
    return d.CLASS in op.attributes and ir.StringAttr(op.attributes[d.CLASS]).value == "matmul"


def _scaled(index: str, block: int) -> str:
    return f"({index}) * {block}" if " " in index else f"{index} * {block}"
