"""The generated matrix-vector kernel: a linear layer (or mm, addmm, matmul) of one row as one Triton kernel.

A model fed one sample (an MLP, a CNN's classifier at batch 1) multiplies one row by a weight matrix.
cuBLAS runs that as its gemv kernel; measured on an H200 (`bench/probes/probe_gemv.py`,
`bench/results/probe-gemv-h200.log`), a generated kernel computing two outputs per program with one warp
takes 1.66 us for a 512 x 512 float32 weight against cuBLAS's 3.14 us, with the bias added in the same
kernel. Each program loads the whole row (K values) and a [BN, K] tile of the weight, multiplies and sums
each of its BN rows in float32 and stores BN outputs: the weight is read once, by many programs. Rows are
read whole (`MAX_ROW_BYTES`, below); every operand is read at its own strides (a transposed weight, as
`mm`, `addmm` and `matmul` take it, included). Which ops are products, and of what: `products.py`.
Half-precision operands (float16, bfloat16) are multiplied and summed in float32 and the result rounded
once, as cuBLAS does. Measured on the H200 in bfloat16: with the weight in L2 (`probe-gemv-half-s24-h200.log`,
a small model's layers) the kernel takes 1.46 us for a 512 x 512 weight against cuBLAS's 3.14 and 1.96
against 7.56 at 1024 x 1024 (the mlp workload in bfloat16: 0.042 -> 0.021 ms); with weights streamed from
memory, as a decoding step's layers are (`probe-gemv-decoding-s24-h200.log`), 4.11 against 6.23 us at 2048
x 2048, 9.88 against 13.71 at 4096 x 4096, 18.1 against 22.3 at 4096 x 8192, 24.2 against 26.8 at 11008 x
4096. It loses where many programs each take a short row: 32768 x 512 takes 11.5 against cuBLAS's 6.8 us
in L2 (11.9 against 11.1 streamed), so half-precision weights of more than `MAX_HALF_N` rows need rows of
at least `WIDE_K` values (in float32 the kernel wins there too: 17.3 against 21.2 us). Rows are loaded
whole, at most `MAX_ROW_BYTES`: 4096 float32 values (2048 x 2048 3.81 against cuBLAS's 5.17 us, 4096 x
4096 17.5 against 22.5, in L2) or 8192 half-precision ones.

`read_matvec` says whether an op is such a product: classify-ops gives the class `matvec` to the ops it
accepts (unless told not to), fuse-pointwise makes each a kernel of its own, or one kernel of the products
that multiply one row (a decoding step's q, k and v projections, its MLP's gate and up projections: each
product in programs of its own, one launch), and `MatvecWriter` writes it.

The ops that compute the row join it when nothing else reads their values (fuse-pointwise): an MLP's GELU
and layer norm before its next linear. Each program then computes the whole row first, as one row of a
persistent reduction kernel (`RowWriter`), and multiplies it: the row's K values are recomputed by every
program, which costs less than a launch (`probe-gemv-h200.log`: GELU, layer norm and a 512 x 512 product
2.30 us as one kernel against 1.66 + 1.45 us as two) while the row is short: each program recomputes K
values for the 2K weight values it reads, and past `MAX_PROLOGUE_K` the row is a kernel of its own.
Measured on the H200 with the weights streamed, layers one after another (`probe-prologue-s25-h200.log`,
GPU time per layer, prologue against the row apart): 2048 x 2048 bfloat16 with Llama's `silu(g) * u` 5.2
against 5.9 us, 768 x 3072 GELU 5.0 against 4.8 (bfloat16) and 5.5 against 5.6 (float32), 512 x 512
float32 2.8 against 3.3; 2048 x 5632 gated 12.4 against 10.2 and 4096 x 8192 33.3 against 20.1. Values of
the prologue that other kernels read too (the residual sum before a decoder's RMS norm) are stored by the
first program (under a mask: no branch), so the norm is no kernel of its own.

The pointwise ops that alone read the products join them as their epilogue (fuse-pointwise) when the
products share one shape: every program then computes the same outputs of each product (one weight row of
each of two products: two rows a program, as before) and applies the ops to them, rounded to the products'
dtype as eager stores them; other inputs of those ops (a residual) are loaded at the outputs. A gated MLP's
`silu(g) * u` is so computed in the gate and up kernel, and neither product is stored. On the decoding
step of `probe_decode.py` (H200, bfloat16; `probe-decode-s28a-epilogue-h200.log`) epilogues and stored
prologue values took 113 kernels to 89 and 398 to 377 us of GPU time per step, 0.371 to 0.354 ms; four or
eight rows a program for kernels with a prologue (`probe_matvec_rows.py`) measured no better.

Half-precision products of a few rows (up to `FEW_HALF_ROWS`: a decoding step of several sequences) are
`matvec` ops too (`read_matvec`), grouped the same way but for the prologue (their dots loop over K, so
no program holds a row whole); the matmul kernel computes them with tensor-core dots (`few_rows`,
`matmul_kernel.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import aten, dtypes
from ..ir._mlir import ir
from ..ir.layout import Layout
from ..ir.torch_types import tensor_info
from .codegen_triton import COMBINE, Kernel, RowWriter, conjunction, pow2, spans_overflow, term, zero_masked
from .layouts import op_class
from .pointwise import FLOAT32, Value, constant_value, convert
from .products import Product, read_product
from .reductions import REDUCTIONS, reduced_dims

KERNEL_DTYPES = ("float32", "float16", "bfloat16")  # (half operands are multiplied and summed in float32)
MAX_ROW_BYTES = 16384  # the row is loaded whole: with BN = 2 rows of the weight, 2K values per program
MAX_HALF_N, WIDE_K = 4096, 2048  # more half-precision weight rows than this need rows of at least WIDE_K
FEW_HALF_ROWS = 64  # half-precision products of up to this many rows are matvec ops too (`few_rows`)
MAX_PROLOGUE_K = 4096  # longest row a matvec kernel computes in its prologue (module docstring)
_OUTPUTS_PER_PROGRAM = 2  # BN: the probe's best (more rows per program leave multiprocessors idle)
_VALUES_PER_WARP = 1024  # weight values a warp loads per program (the probe's best at K = 512: one warp)


def read_matvec(op: Any) -> Product | None:
    """The product `op` computes if this kernel can and should (module docstring): one row
    (`products.read_product`) of at most MAX_ROW_BYTES, in float32, float16 or bfloat16; or at most
    FEW_HALF_ROWS rows in half precision (`few_rows`: the matmul kernel's tensor-core dots compute them)."""
    product = read_product(op, KERNEL_DTYPES)
    if product is None:
        return None
    itemsize = tensor_info(op.results[0].type)[1].itemsize
    if product.m > 1:
        return product if product.m <= FEW_HALF_ROWS and itemsize == 2 else None
    if product.k * itemsize > MAX_ROW_BYTES or (
        itemsize == 2 and product.n > MAX_HALF_N and product.k < WIDE_K
    ):
        return None
    return product


def few_rows(fn: Any) -> bool:
    """Whether the fused function `fn` holds matvec ops of more than one row, which the matmul kernel's
    dots compute (`matmul_kernel.py`), not this kernel's."""
    body = fn.regions[0].blocks[0]
    return any(op_class(op) == "matvec" and read_matvec(op).m > 1 for op in body)


def matvec_blocks(k: int, products: int = 1) -> tuple[int, int]:
    """(BN, num_warps): two weight rows per program (BN outputs of each of `products` products computed
    together), a warp per `_VALUES_PER_WARP` weight values it loads."""
    block_n = max(1, _OUTPUTS_PER_PROGRAM // products)
    per_program = products * block_n * pow2(k)
    return block_n, max(1, min(8, per_program // _VALUES_PER_WARP))


@dataclasses.dataclass(frozen=True)
class _Part:
    """One product of a matvec kernel: its weight, its bias (buffer indices), the value it computes, its
    output's buffer index (None when only the epilogue reads it) and the programs computing it (from
    `first`)."""

    product: Product
    weight: int
    bias: int | None
    value: ir.Value
    out: int | None
    first: int
    programs: int


class MatvecWriter(RowWriter):
    """Writes the kernel of a fused function holding `matvec` ops that multiply one row (the q, k and v
    projections), after the ops that compute the row when fuse-pointwise put them there (the prologue:
    every program computes the whole row, as one row of a persistent reduction kernel, then multiplies
    it). Each product has programs of its own, after the previous product's; unless pointwise ops read
    the products (the epilogue: a gated MLP's `silu(g) * u`), when every program computes the same outputs
    of each product and applies those ops to them."""

    def __init__(self, fn: Any, layouts: list[Layout], indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        compute = [op for op in self.body_ops if aten.aten_name(op) is not None]
        self.product_ops = [op for op in compute if op_class(op) == "matvec"]
        products = [read_matvec(op) for op in self.product_ops]
        if not self.product_ops or None in products:
            raise ValueError("a matvec kernel computes products of one row")
        rows = {op.operands[p.rows] for op, p in zip(self.product_ops, products, strict=True)}
        if len(rows) != 1:
            raise ValueError("the products of a matvec kernel multiply one row")
        self.row_value = rows.pop()
        # The epilogue: the ops reading the products and those computing their other operands (over the
        # products' outputs); the prologue: the rest (over the row: the ops computing it and those computing
        # other values of its group, stored where others read them).
        self.epilogue_ops = _epilogue(self.product_ops, _computing(self.row_value, compute), compute)
        taken = {op.operation for op in self.epilogue_ops + self.product_ops}
        self.prologue_ops = [op for op in compute if op.operation not in taken]
        self.row_values = {r for op in self.prologue_ops for r in op.results}  # (others may read them too)
        if self.epilogue_ops and len({p.n for p in products}) != 1:
            raise ValueError("the products that an epilogue reads must have one shape")
        for op in self.epilogue_ops:
            if aten.aten_name(op) in REDUCTIONS or any(v in self.row_values for v in op.operands):
                raise ValueError("a matvec kernel's epilogue is pointwise over the products' outputs")
        k = products[0].k
        self.block_n, self.num_warps = matvec_blocks(k, len(products) if self.epilogue_ops else 1)
        self.parts, first = [], 0
        for op, product in zip(self.product_ops, products, strict=True):
            operands = list(op.operands)
            if not all(isinstance(operands[i], ir.BlockArgument) for i in product.weight_and_bias):
                raise ValueError("the weights and biases of a matvec kernel must be its inputs")
            programs = -(-product.n // self.block_n)
            bias = operands[product.bias].arg_number if product.bias is not None else None
            value = op.results[0]
            out = len(self.args) + self.results.index(value) if value in self.results else None
            if out is None and not self.epilogue_ops:
                raise ValueError("a matvec kernel without an epilogue returns its products")
            self.parts.append(
                _Part(product, operands[product.weight].arg_number, bias, value, out, first, programs)
            )
            first += 0 if self.epilogue_ops else programs
        computed = self.row_values | {r for op in self.epilogue_ops + self.product_ops for r in op.results}
        if not all(r in computed for r in self.results):
            raise ValueError("a matvec kernel returns values of its prologue, products or epilogue")
        self.grid = self.parts[0].programs if self.epilogue_ops else first
        self.out_shape = tuple(tensor_info(self.parts[0].value.type)[0])
        self.prologue = bool(self.prologue_ops)
        if not self.prologue and not isinstance(self.row_value, ir.BlockArgument):
            raise ValueError("the row of a matvec kernel must be its input or computed by its prologue")
        # The prologue's iteration space: the row, one row of `k` columns kept whole.
        self.shape = tuple(tensor_info(self.row_value.type)[0])
        self.reduced = (len(self.shape) - 1,)
        self.row_shape, self.rows, self.cols = (*self.shape[:-1], 1), 1, k
        self.xblock, self.rblock, self.persistent = 1, pow2(k), True
        for prologue_op in self.prologue_ops:
            name = aten.aten_name(prologue_op)
            if name in REDUCTIONS:
                args = [constant_value(v) for v in prologue_op.operands]
                rank = len(tensor_info(prologue_op.operands[0].type)[0])
                if reduced_dims(name, args, rank) != (rank - 1,):
                    raise ValueError(f"the prologue's {name} does not reduce the row")
        self.wide = spans_overflow(layouts)
        self.index = Value("lin", dtypes.BY_NAME["int64" if self.wide else "int32"], 1)
        self.defined, self.per_element, self.level = set(), set(), "element"
        self.epilogue_lines: list[str] | None = None  # while the epilogue is emitted: its source lines

    def write(self) -> Kernel:
        k = self.parts[0].product.k
        block_n, width = self.block_n, pow2(k)
        pid = "tl.program_id(0).to(tl.int64)" if self.wide else "tl.program_id(0)"
        k_tail = f"k < {k}" if width != k else ""
        names = []
        shapes = ", ".join(
            f"{'a transposed ' if p.product.transposed else 'a '}{p.product.n} x {k} weight"
            f"{' plus a bias' if p.bias is not None else ''}"
            for p in self.parts
        )
        together = " of each product, then the epilogue" if self.epilogue_ops else ""
        lines = [
            f"# one row of {k}{', computed,' if self.prologue else ''} times {shapes}: {self.grid} programs"
            f" of {block_n} outputs{together}",
            *self._dereference(),
            f"pid = {pid}",
        ]
        for op in self.body_ops:
            self._constant(op)  # (records the constants the ops read)
        if self.prologue:
            for op in self.prologue_ops:
                name = aten.aten_name(op)
                self._emit(op, name)
                names.append(name.split(".")[1].strip("_"))
            row = self._operand(self.row_value)
            side = [
                (len(self.args) + j, self._operand(r).expr)
                for j, r in enumerate(self.results)
                if r in self.row_values
            ]
            self._index([a for a, _ in side])
            # The one row, a [1, 1] block: its offsets are the column's, and a broadcast input read at it
            # is a block too (Triton's interpreter cannot combine a scalar bool with a block: seed 48534).
            lines += ["row = tl.full([1, 1], 0, tl.int32)", *self._whole_rows()]
            for a, v in side:  # (values others read too: the first program stores them, under a mask, as a
                # store in an `if` beside a gather's checked index fails Triton's layout passes for sm90)
                per_element = self.layouts[a].shape == self.shape
                mask = conjunction("pid == 0", self._mask_name(per_element))
                pointer = f"out{a - len(self.args)} + {self._offset(a)}"
                if width == 1 or not per_element:  # (no column in the offset: the row's one address, as
                    pointer = f"tl.broadcast_to({pointer}, [1, 1])"  # a block for the [1, 1] it stores)
                lines.append(f"tl.store({pointer}, {v}, mask={mask})")
            value = convert(row.expr, row.dtype, FLOAT32)
            if row.expr not in self.per_element:  # (one value for the whole row: a broadcast input's)
                value = f"tl.broadcast_to({value}, [1, {width}])"
            value = f"tl.where(cmask, {value}, 0.0)" if self.col_mask else value
            # The [1, width] row as a vector: a sum over its one row, since a reshape of a gather's row read
            # in several products' branches fails Triton's layout passes for sm90 ("does not dominate").
            lines.append(f"x = tl.reduce({value}, 0, {COMBINE['sum']})")
        lines.append(f"k = tl.arange(0, {width})")
        dtype = tensor_info(self.parts[0].value.type)[1]  # (of every operand: `read_product`)
        if not self.prologue:
            x = f"tl.load({self._at(self.row_value.arg_number, 'k')}{zero_masked(k_tail)})"
            lines.append(f"x = {convert(x, dtype, FLOAT32)}")
        if self.epilogue_ops:
            return self._with_epilogue(lines, [*names, "matvec"], dtype, k_tail)
        for i, part in enumerate(self.parts):
            body = [self._outputs(part), *self._part(part, dtype, k_tail)]
            body.append(self._store(part.out, convert("acc", FLOAT32, dtype), part.product.n))
            if len(self.parts) == 1:
                lines += body
                continue
            last = i == len(self.parts) - 1
            lines.append(
                "else:" if last else f"{'if' if i == 0 else 'elif'} pid < {part.first + part.programs}:"
            )
            lines += [f"    {line}" for line in body]
        return self._template_kernel(lines, self.grid, self.num_warps, "_".join([*names, "matvec"]))

    def _with_epilogue(self, lines: list[str], names: list[str], dtype: Any, k_tail: str) -> Kernel:
        """The rest of a kernel with an epilogue: every product's outputs in this program, then the ops
        (their names added to `names`, the kernel's)."""
        n = self.parts[0].product.n
        lines.append(self._outputs(self.parts[0]))
        for i, part in enumerate(self.parts):
            lines += self._part(part, dtype, k_tail, str(i))
        self.epilogue_lines, self.known = [], {}  # (no expression of the prologue's space is reused)
        self.index = Value("n", self.index.dtype, 1)  # (the epilogue's space: its leading dims are 1)
        for i, part in enumerate(self.parts):  # (the products' values, rounded to their dtype as eager's are)
            self.values[part.value] = Value(
                self._let(convert(f"acc{i}", FLOAT32, dtype), "p"), dtype, len(self.out_shape)
            )
        for op in self.epilogue_ops:
            name = aten.aten_name(op)
            self._emit(op, name)
            names.append(name.split(".")[1].strip("_"))
        lines += self.epilogue_lines
        for j, result in enumerate(self.results):
            if result in self.row_values:
                continue  # (stored by the prologue)
            if tuple(tensor_info(result.type)[0]) != self.out_shape:
                raise ValueError("the outputs of a matvec kernel's epilogue must have its products' shape")
            lines.append(self._store(len(self.args) + j, self._operand(result).expr, n))
        return self._template_kernel(lines, self.grid, self.num_warps, "_".join(names))

    def _outputs(self, part: _Part) -> str:
        """The line computing `n`, the outputs of `part` that this program computes."""
        start = f"(pid - {part.first})" if part.first else "pid"
        return f"n = {start} * {self.block_n} + tl.arange(0, {self.block_n})"

    def _part(self, part: _Part, dtype: Any, k_tail: str, suffix: str = "") -> list[str]:
        """The lines computing `part`'s outputs at `n` (`acc` and the suffix, float32)."""
        p = part.product
        strides = self.layouts[part.weight].strides
        weight_n, weight_k = reversed(strides) if p.transposed else strides
        n_tail = f"n < {p.n}" if p.n % self.block_n else ""
        both = conjunction(n_tail and f"n[:, None] < {p.n}", k_tail and f"k[None, :] < {p.k}")
        w = f"tl.load(in{part.weight} + {term('n[:, None]', weight_n)} + {term('k[None, :]', weight_k)}{zero_masked(both)})"
        acc = f"acc{suffix}"
        lines = [
            f"w{suffix} = {convert(w, dtype, FLOAT32)}",
            f"{acc} = tl.reduce(w{suffix} * x[None, :], 1, {COMBINE['sum']})",
        ]
        if part.bias is not None:
            bias = f"tl.load({self._at(part.bias, 'n')}{zero_masked(n_tail)})"
            lines.append(f"{acc} = {acc} + {convert(bias, dtype, FLOAT32)}")
        return lines

    def _store(self, b: int, value: str, n: int) -> str:
        """The store of `value` (n outputs) into buffer `b` at `n`."""
        n_tail = f"n < {n}" if n % self.block_n else ""
        return f"tl.store({self._at(b, 'n')}, {value}{f', mask={n_tail}' if n_tail else ''})"

    def _at(self, b: int, index: str) -> str:
        """Buffer `b` (a row, a bias or a result: one dim of more than one element) at `index`."""
        name = f"out{b - len(self.args)}" if b >= len(self.args) else f"in{b}"
        return f"{name} + {term(index, self.layouts[b].strides[-1])}"

    # ---------------------------------------------------------------- the epilogue's space: one value per n

    def _operand(self, value: ir.Value) -> Any:
        if self.epilogue_lines is None or value in self.values:
            return super()._operand(value)
        a = value.arg_number  # an input read at each output (a residual), broadcast along the others
        name = f"e{a}"
        if name not in self.known:
            self.known[name] = name
            stride = self.layouts[a].expand(self.out_shape).strides[-1]
            n = self.parts[0].product.n
            mask = f"n < {n}" if n % self.block_n else ""
            self.epilogue_lines.append(f"{name} = tl.load(in{a} + {term('n', stride)}{zero_masked(mask)})")
        shape, dtype = tensor_info(value.type)
        return Value(name, dtype, len(shape))

    def _let(self, expr: str, prefix: str = "t") -> str:
        if self.epilogue_lines is None:
            return super()._let(expr, prefix)
        if expr.isidentifier():
            return expr
        if expr not in self.known:
            self.known[expr] = name = f"{prefix}{next(self.counter)}"
            self.epilogue_lines.append(f"{name} = {expr}")
        return self.known[expr]

    def _block_shape(self) -> str:
        return str(self.block_n) if self.epilogue_lines is not None else super()._block_shape()


def _epilogue(products: list[Any], row: list[Any], ops: list[Any]) -> list[Any]:
    """The ops among `ops` that read the `products`' results, directly or not, and those computing their
    other operands that are neither products nor among the ops computing the `row`."""
    reached = {op.results[0] for op in products}
    reading = []
    for op in ops:
        if any(v in reached for v in op.operands):
            reading.append(op)
            reached.update(op.results)
    kept = {op.operation for op in products + row}
    needed = {v for op in reading for v in op.operands}
    chosen = {op.operation for op in reading}
    for op in reversed(ops):
        if op.operation not in kept and op.operation not in chosen and any(r in needed for r in op.results):
            chosen.add(op.operation)
            needed.update(op.operands)
    return [op for op in ops if op.operation in chosen]


def _computing(value: ir.Value, ops: list[Any]) -> list[Any]:
    """The ops among `ops` that `value` depends on (those computing a matvec kernel's row)."""
    needed, chosen = {value}, []
    for op in reversed(ops):
        if any(r in needed for r in op.results):
            chosen.append(op)
            needed.update(op.operands)
    return chosen[::-1]
