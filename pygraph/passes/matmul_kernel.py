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

Products of a few rows in half precision (class `matvec`, at most `matvec_kernel.FEW_HALF_ROWS` rows: a
decoding step of several sequences) are this kernel's too, grouped as products of one row are
(fuse-pointwise): the products that multiply one row operand in one launch, each in programs of its own
(q, k and v), or, where pointwise ops alone read them, every program computing the same block of each and
applying the ops (`silu(g) * u` after the gate and up projections, the residual add after the down
projection). Every row is in one block (16, 32 or 64, padded under a mask), so the weight streams once, in
blocks of BN of its rows, through a loop over K in steps of 256 with 4 pipeline stages (shorter steps
where the stages' tiles would pass `_SHARED_BYTES`); the dots take the half-precision tiles and accumulate
in float32, and each product is rounded to its dtype before the epilogue reads it, as eager's is. BN
(`few_row_blocks`), from `bench/probes/probe_matvec_batch.py` on an H100 with the weights streamed
(`probe-matvec-batch-s30-h100.log` at 4 rows, `-s30-many-h100.log` at 16, 32 and 64; the H200's in
`-s29b-h200.log`), against cuBLAS at 4 / 16 / 32 / 64 rows: 16 up to 2048 outputs (2048 x 2048: 6.2 / 6.1
/ 6.4 / 6.3 us against 6.3 / 6.0 / 6.4 / 6.5), else 32 (3072 x 2048: 7.4 / 7.3 / 7.9 / 7.9 against 7.4 /
7.5 / 7.4 / 7.6; 11264 x 2048: 19.2 / 19.5 / 21.8 / 22.1 against 18.5 / 19.1 / 19.5 / 19.6, where steps
of 128 with 3 stages measured 0.7 to 2.6 us faster alone but slower in the decoding step's gate and up
kernel); a long K over few outputs ties cuBLAS's split-K within a microsecond (2048 x 5632: 12.8 / 13.0 /
13.9 / 12.9 against 12.0 / 12.9 / 13.1 / 13.5; a split of K of our own measured no better,
`probe-matvec-batch-s31-split-h100.log`). Alone each ties cuBLAS or trails it a little; grouped and with their epilogues they
save launches and round trips. A decoding step (`bench/probes/probe_decode.py --batch B`, H100,
`probe-decode-s30*-h100.log`) of 4 sequences took 0.657 ms with cuBLAS's products (621 us of GPU time in
138 kernels, 58 of them cuBLAS calls) and takes 0.50 to 0.54 (527 us, 97 kernels); of 8, 0.682 and 0.519;
of 16, 0.756 and 0.622; of 32, 0.803 and 0.684; of 64, 0.896 and 0.739 (`probe-decode-s31a-64-rows-h100.log`).

Blocks of 64 rows run `tl.dot` on sm_90's warp-group (`wgmma`) instructions, where 16 and 32 rows run
`mma.sync`, and there Triton 3.6 miscompiles a program of two half-precision dots whose weights differ in
layout, the first [N, K] (K contiguous) and the second [K, N]: wrong values or an illegal memory access
(`bench/probes/probe_wgmma_narrow.py`, `probe-wgmma-narrow-s31-h100.log`: 10 of 144 cases, all of that
order; one layout, the other order, one dot, 32 rows and TF32 dots all right, `-tf32-s31-h100.log`). A
gated MLP whose up projection is a [K, N] parameter (`x @ up`) beside a linear gate is such a program, so
the products of one kernel whose weights differ in layout take blocks of 32 rows, two programs' rows where
there are more (also where each is computed in programs of its own, in branches of one kernel: not seen
to fail, not probed either).
"""

from __future__ import annotations

import dataclasses
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
from .matvec_kernel import FEW_HALF_ROWS, KERNEL_DTYPES
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
_SHARED_BYTES = 160 << 10  # shared memory the pipelined tiles may take (an A100's is 164 KB, an H100's 227)
_STAGES = 4  # pipeline stages of the loop over K for products of few rows
_MIXED_LAYOUT_ROWS = 32  # rows of a block whose products' weights differ in layout (module docstring)


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


@dataclasses.dataclass(frozen=True)
class _Part:
    """One product of a matmul kernel: its op's result, weight and bias (buffer indices), its output's
    buffer index (None when only the epilogue reads it) and the programs computing it (from `first`)."""

    product: Product
    value: ir.Value
    weight: int
    bias: int | None
    out: int | None
    first: int
    programs: int


def few_row_blocks(
    m: int, k: int, outputs: int, products: int, one_layout: bool = True
) -> tuple[int, int, int, int]:
    """(BM, BN, BK, stages) for `products` half-precision products of `m` rows (at most FEW_HALF_ROWS) and
    `outputs` columns in all, computed together in each program when there are more than one (module
    docstring): every row in one block, but at most 32 rows where the kernel's products read weights of
    different layouts (not `one_layout`: Triton's sm_90 miscompile); 32 columns past 2048
    outputs (else 16); K in steps of 256 with 4 stages, shorter steps where the stages' tiles would not fit
    `_SHARED_BYTES`."""
    block_m = max(_MIN_DOT, pow2(m))
    if not one_layout:
        block_m = min(block_m, _MIXED_LAYOUT_ROWS)
    block_n = 32 if outputs > 2048 else 16
    block_k = min(256, max(_MIN_DOT, pow2(k)))
    while _STAGES * (block_m + products * block_n) * block_k * 2 > _SHARED_BYTES and block_k > _MIN_DOT:
        block_k //= 2
    return block_m, block_n, block_k, _STAGES


class MatmulWriter(Writer):
    """Writes the kernel of a fused function holding one `matmul` op and its pointwise consumers, or the
    half-precision `matvec` ops of a few rows that multiply one row operand (`few_rows`): each product in
    programs of its own, or, when pointwise ops read them (the epilogue: a gated MLP's `silu(g) * u`),
    every program computing the same block of each."""

    num_warps = 4

    def __init__(self, fn: Any, layouts: list[Layout], indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        ops = [op for op in self.body_ops if _is_product(op)]
        products = [read_product(op, KERNEL_DTYPES) for op in ops]
        if not ops or None in products:
            raise ValueError("the matmul kernel cannot compute these products")
        if {ir.StringAttr(op.attributes[d.CLASS]).value for op in ops} == {"matmul"}:
            if len(ops) != 1:
                raise ValueError(f"a matmul kernel computes one product, not {len(ops)}")
            precision = (
                ir.StringAttr(ops[0].attributes[d.MATMUL_KERNEL]).value
                if d.MATMUL_KERNEL in ops[0].attributes
                else ""
            )
            if precision not in PRECISIONS:
                raise ValueError(f"{d.MATMUL_KERNEL} is {precision!r}, not one of {', '.join(PRECISIONS)}")
        elif any(
            p.m > FEW_HALF_ROWS or tensor_info(op.results[0].type)[1].itemsize != 2
            for op, p in zip(ops, products, strict=True)
        ):
            raise ValueError(
                f"the matmul kernel takes matvec ops of at most {FEW_HALF_ROWS} half-precision rows"
            )
        else:
            precision = ""  # (half-precision dots: the tensor cores' own, no choice to make)
        first, rows = products[0], {op.operands[p.rows] for op, p in zip(ops, products, strict=True)}
        if len(rows) != 1 or any((p.m, p.k) != (first.m, first.k) for p in products):
            raise ValueError("the products of a matmul kernel multiply one row operand")
        row_value = rows.pop()
        self.precision, self.dtype = precision, tensor_info(ops[0].results[0].type)[1]
        computing = [o for o in self.body_ops if aten.aten_name(o) not in (None, *aten.RESHAPES)]
        self.epilogue_ops = len(computing) - len(ops)
        if self.epilogue_ops and len({p.n for p in products}) != 1:
            raise ValueError("the products that an epilogue reads must have one shape")
        if not isinstance(row_value, ir.BlockArgument):
            raise ValueError("the rows of a matmul kernel must be its input")
        self.rows = row_value.arg_number
        self.shape = tuple(tensor_info(self.results[0].type)[0])
        if self.epilogue_ops or len(ops) == 1:
            if any(tuple(tensor_info(v.type)[0]) != self.shape for v in self.results) or math.prod(
                self.shape
            ) != (first.m * first.n):
                raise ValueError(
                    "the outputs of a matmul kernel must have one shape, the product's or a reshape of it"
                )
        elif set(self.results) != {op.results[0] for op in ops}:
            raise ValueError("a matmul kernel of several products without an epilogue returns each product")
        total_n = first.n if self.epilogue_ops else sum(p.n for p in products)
        if precision == "":
            together = len(ops) if self.epilogue_ops else 1
            k_contiguous = {
                _weight_strides(layouts[op.operands[p.weight].arg_number], p)[1] == 1
                for op, p in zip(ops, products, strict=True)
            }
            blocks = few_row_blocks(first.m, first.k, total_n, together, len(k_contiguous) == 1)
            self.block_m, self.block_n, self.block_k, self.num_stages = blocks
        else:
            self.block_m, self.block_n, self.block_k = matmul_blocks(first.m, first.n, first.k)
            self.num_stages = 3
        self.parts, start = [], 0
        for op, product in zip(ops, products, strict=True):
            operands = list(op.operands)
            if not all(isinstance(operands[i], ir.BlockArgument) for i in product.weight_and_bias):
                raise ValueError("the weights and biases of a matmul kernel must be its inputs")
            value = op.results[0]
            out = len(self.args) + self.results.index(value) if value in self.results else None
            programs = -(-product.m // self.block_m) * -(-product.n // self.block_n)
            bias = operands[product.bias].arg_number if product.bias is not None else None
            self.parts.append(
                _Part(product, value, operands[product.weight].arg_number, bias, out, start, programs)
            )
            start += 0 if self.epilogue_ops else programs
        self.product = first
        self.grid = self.parts[0].programs if self.epilogue_ops else start
        self.numel = first.m * first.n
        self.wide = self.numel > INT32_MAX or spans_overflow(layouts)
        self.index = pointwise.Value("i", dtypes.BY_NAME["int64" if self.wide else "int32"], 1)
        self.products: set[ir.Value] = set()  # the products' values, and reshapes of them

    def _emit(self, op: Any, name: str) -> None:
        if _is_product(op):
            i = next(i for i, part in enumerate(self.parts) if part.value == op.results[0])
            # (the product rounded to its dtype, as eager stores it)
            value = pointwise.convert(f"acc{i}", pointwise.FLOAT32, self.dtype)
            expr = value if value.isidentifier() else self._let(value, "p")
            self.values[op.results[0]] = pointwise.Value(expr, self.dtype, len(self.shape))
            self.products.add(op.results[0])
            return
        if name in aten.RESHAPES and op.operands[0] in self.products:
            self.values[op.results[0]] = self.values[op.operands[0]]
            self.products.add(op.results[0])  # (a reshape keeps the row-major order the epilogue uses)
            return
        super()._emit(op, name)

    def _block_shape(self) -> str:
        return f"{self.block_m}, {self.block_n}"

    def _render(self, stores: list[tuple[int, str]]) -> str:
        p, bm, bn, bk = self.product, self.block_m, self.block_n, self.block_k
        pid = "tl.program_id(0).to(tl.int64)" if self.wide else "tl.program_id(0)"
        ops = self.epilogue_ops
        epilogue = f"then an epilogue of {ops} op{'s' if ops > 1 else ''}" if ops else "no epilogue"
        weights = " and ".join(
            f"[{p.k}, {part.product.n}]{' plus a bias' if part.bias is not None else ''}"
            for part in self.parts
        )
        dots = f"{self.precision} dots" if self.precision else f"{self.dtype.name} dots"
        lines = [
            f"# [{p.m}, {p.k}] x {weights}, {epilogue}: {self.grid} programs of {bm} x {bn}, K in steps of {bk}, {dots}",
            *self._dereference(),
            f"pid = {pid}",
        ]
        row_lines, row_offset = self._row_offset(self.rows, "xrow")
        if -(-p.m // bm) == 1:  # (one block of rows: every program's, ahead of any branch)
            lines += [f"rm = tl.arange(0, {bm})", *row_lines]
            row_lines = []
        if self.epilogue_ops or len(self.parts) == 1:
            lines += self._block(self.parts[0]) + row_lines
            for i, part in enumerate(self.parts):
                lines += self._dot(part, str(i), row_offset)
            return self._epilogue(lines, stores)
        for i, part in enumerate(self.parts):  # (no epilogue: each product's programs store its own output)
            out_lines, out_offset = self._row_offset(part.out, "orow")
            mask = self._mask(part.product)
            body = [*self._block(part), *row_lines, *self._dot(part, "0", row_offset), *out_lines]
            value = pointwise.convert("acc0", pointwise.FLOAT32, self.dtype)
            column = term("rn[None, :]", self.layouts[part.out].strides[-1])
            body.append(
                f"tl.store(out{part.out - len(self.args)} + {out_offset}[:, None] + {column}, {value}"
                f"{f', mask={mask}' if mask else ''})"
            )
            last = i == len(self.parts) - 1
            lines.append(
                "else:" if last else f"{'if' if i == 0 else 'elif'} pid < {part.first + part.programs}:"
            )
            lines += [f"    {line}" for line in body]
        return "".join(f"    {line}\n" for line in lines)

    def _block(self, part: _Part) -> list[str]:
        """The lines computing `rm` (unless one block holds every row) and `rn`, the rows and columns of
        `part`'s block in this program."""
        local = f"pid - {part.first}" if part.first else "pid"
        grid_n = -(-part.product.n // self.block_n)
        columns = f"tl.arange(0, {self.block_n})"
        if -(-part.product.m // self.block_m) == 1:
            return [f"rn = {_scaled(local, self.block_n) + ' + ' if grid_n > 1 else ''}{columns}"]
        local = f"({local})" if part.first else local
        return [
            f"rm = {_scaled(f'{local} // {grid_n}' if grid_n > 1 else local, self.block_m)} + tl.arange(0, {self.block_m})",
            f"rn = {_scaled(f'{local} % {grid_n}', self.block_n) + ' + ' if grid_n > 1 else ''}{columns}",
        ]

    def _mask(self, product: Product) -> str:
        """The mask of the block's elements within the product's [m, n]."""
        return conjunction(
            product.m % self.block_m != 0 and f"rm[:, None] < {product.m}",
            product.n % self.block_n != 0 and f"rn[None, :] < {product.n}",
        )

    def _dot(self, part: _Part, suffix: str, row_offset: str) -> list[str]:
        """The lines computing `part`'s block (`acc` and the suffix, float32): its dots over K, then its bias."""
        p, bm, bn, bk = part.product, self.block_m, self.block_n, self.block_k
        m_tail, n_tail, k_tail = p.m % bm != 0, p.n % bn != 0, p.k % bk != 0
        weight_n, weight_k = _weight_strides(self.layouts[part.weight], p)
        a_mask = conjunction(m_tail and f"rm[:, None] < {p.m}", k_tail and f"k[None, :] < {p.k}")
        b_mask = conjunction(k_tail and f"k[:, None] < {p.k}", n_tail and f"rn[None, :] < {p.n}")
        precision = f', input_precision="{self.precision}"' if self.precision else ""
        acc = f"acc{suffix}"
        lines = [
            f"{acc} = tl.full([{bm}, {bn}], 0.0, tl.float32)",
            f"for k0 in range(0, {p.k}, {bk}):",
            f"    k = k0 + tl.arange(0, {bk})",
            f"    a = tl.load(in{self.rows} + {row_offset}[:, None] + {term('k[None, :]', self.layouts[self.rows].strides[-1])}"
            f"{zero_masked(a_mask)})",
            f"    b = tl.load(in{part.weight} + {term('k[:, None]', weight_k)} + {term('rn[None, :]', weight_n)}"
            f"{zero_masked(b_mask)})",
            f"    {acc} = tl.dot(a, b, {acc}{precision})",
        ]
        if part.bias is not None:
            bias = f"in{part.bias} + {term('rn', self.layouts[part.bias].strides[-1])}"
            load = f"tl.load({bias}{zero_masked(n_tail and f'rn < {p.n}')})"
            lines.append(f"{acc} = {acc} + {pointwise.convert(load, self.dtype, pointwise.FLOAT32)}[None, :]")
        return lines

    def _epilogue(self, lines: list[str], stores: list[tuple[int, str]]) -> str:
        """The rest of a kernel whose programs compute one block of each product: the epilogue's loads and
        lines at the block's elements (in the row-major order of the result), then the stores."""
        p, bm, bn = self.product, self.block_m, self.block_n
        lines.append(f"i = rm[:, None] * {p.n} + rn[None, :]")
        mask = self._mask(p)
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

    def _row_offset(self, buffer: int, name: str) -> tuple[list[str], str]:
        """Lines computing `name`, each row's offset in `buffer` (the rows operand or an output: any leading
        dims, any strides)."""
        layout = self.layouts[buffer]
        dims, strides = merge_dims(list(layout.shape[:-1]), {"x": tuple(layout.strides[:-1])})
        lines, offset = indices("rm", f"{name[0]}m", dims, strides)
        row = offset("x")
        return [*lines, f"{name} = {row if row != '0' else 'rm * 0'}"], name


def _weight_strides(layout: Layout, product: Product) -> tuple[int, int]:
    """The strides of `product`'s weight (laid out as `layout`) along its outputs and along K."""
    n, k = layout.strides[:: -1 if product.transposed else 1]
    return n, k


def _is_product(op: Any) -> bool:
    return d.CLASS in op.attributes and ir.StringAttr(op.attributes[d.CLASS]).value in ("matmul", "matvec")


def _scaled(index: str, block: int) -> str:
    return f"({index}) * {block}" if " " in index else f"{index} * {block}"
