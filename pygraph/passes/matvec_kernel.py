"""The generated matrix-vector kernel: a linear layer (or mm, addmm, matmul) of one row as one Triton kernel.

A model fed one sample (an MLP, a CNN's classifier at batch 1) multiplies one row by a weight matrix.
cuBLAS runs that as its gemv kernel; measured on an H200 (`bench/probes/probe_gemv.py`,
`bench/results/probe-gemv-h200.log`), a generated kernel computing two outputs per program with one warp
takes 1.66 us for a 512 x 512 float32 weight against cuBLAS's 3.14 us, with the bias added in the same
kernel. Each program loads the whole row (K values) and a [BN, K] tile of the weight, multiplies and sums
each of its BN rows in float32 and stores BN outputs: the weight is read once, by many programs. Rows are
read whole, so K is at most `MAX_K`; every operand is read at its own strides (a transposed weight, as
`mm`, `addmm` and `matmul` take it, included). Which ops are products, and of what: `products.py`.

`read_matvec` says whether an op is such a product: classify-ops gives the class `matvec` to the ops it
accepts (unless told not to), fuse-pointwise makes each a kernel of its own, and `MatvecWriter` writes it.
"""

from __future__ import annotations

from typing import Any

from ..ir import aten
from ..ir._mlir import ir
from ..ir.layout import Layout
from .codegen_triton import COMBINE, Kernel, Writer, pow2, spans_overflow, term, zero_masked
from .products import Product, read_product

MAX_K = 1024  # the row is loaded whole: with BN = 2 rows of the weight, 2K values per program
_OUTPUTS_PER_PROGRAM = 2  # BN: the probe's best (more rows per program leave multiprocessors idle)
_VALUES_PER_WARP = 1024  # weight values a warp loads per program (the probe's best at K = 512: one warp)


def read_matvec(op: Any) -> Product | None:
    """The product `op` computes if this kernel can: one row (`products.read_product`) of at most MAX_K values."""
    product = read_product(op)
    return product if product is not None and product.m == 1 and product.k <= MAX_K else None


def matvec_blocks(k: int) -> tuple[int, int]:
    """(BN, num_warps): two outputs per program, a warp per `_VALUES_PER_WARP` weight values it loads."""
    per_program = _OUTPUTS_PER_PROGRAM * pow2(k)
    return _OUTPUTS_PER_PROGRAM, max(1, min(8, per_program // _VALUES_PER_WARP))


class MatvecWriter(Writer):
    """Writes the kernel of a fused function holding one `matvec` op (module docstring)."""

    def __init__(self, fn: Any, layouts: list[Layout], indirect: list[int | None]) -> None:
        self._read(fn, layouts, indirect)
        compute = [op for op in self.body_ops if not op.operation.name.startswith("torch.constant.")]
        if len(compute) != 1 or len(self.results) != 1 or self.results[0] != compute[0].results[0]:
            raise ValueError("a matvec kernel computes one product and returns it")
        op = compute[0]
        product = read_matvec(op)
        if product is None:
            raise ValueError(f"the matvec kernel cannot compute this {aten.aten_name(op)}")
        self.product = product
        operands = list(op.operands)
        roles = [product.rows, product.weight] + ([product.bias] if product.bias is not None else [])
        if not all(isinstance(operands[i], ir.BlockArgument) for i in roles):
            raise ValueError("the row, weight and bias of a matvec kernel must be its inputs")
        self.row, self.weight = (operands[i].arg_number for i in roles[:2])
        self.bias = operands[product.bias].arg_number if product.bias is not None else None
        self.out = len(self.args)

    def write(self) -> Kernel:
        p = self.product
        block_n, warps = matvec_blocks(p.k)
        width = pow2(p.k)
        grid = -(-p.n // block_n)
        wide = spans_overflow(self.layouts)
        pid = "tl.program_id(0).to(tl.int64)" if wide else "tl.program_id(0)"
        strides = self.layouts[self.weight].strides
        weight_n, weight_k = reversed(strides) if p.transposed else strides
        k_tail = f"k < {p.k}" if width != p.k else ""
        n_tail = f"n < {p.n}" if p.n % block_n else ""
        bounds = [b for b in (n_tail and f"n[:, None] < {p.n}", k_tail and f"k[None, :] < {p.k}") if b]
        both = " & ".join(f"({b})" for b in bounds) if len(bounds) > 1 else "".join(bounds)
        lines = [
            f"# one row of {p.k} times a {'transposed ' if p.transposed else ''}{p.n} x {p.k} weight"
            f"{' plus a bias' if p.bias is not None else ''}: {grid} programs of {block_n} outputs",
            *self._dereference(),
            f"n = {pid} * {block_n} + tl.arange(0, {block_n})",
            f"k = tl.arange(0, {width})",
            f"x = tl.load({self._at(self.row, 'k')}{zero_masked(k_tail)})",
            f"w = tl.load(in{self.weight} + {term('n[:, None]', weight_n)} + {term('k[None, :]', weight_k)}"
            f"{zero_masked(both)})",
            f"acc = tl.reduce(w * x[None, :], 1, {COMBINE['sum']})",
        ]
        if self.bias is not None:
            lines.append(f"acc = acc + tl.load({self._at(self.bias, 'n')}{zero_masked(n_tail)})")
        lines.append(f"tl.store({self._at(self.out, 'n')}, acc{f', mask={n_tail}' if n_tail else ''})")
        return self._template_kernel(lines, grid, warps, "matvec")

    def _at(self, b: int, index: str) -> str:
        """Buffer `b` (a row, a bias or the result: one dim of more than one element) at `index`."""
        name = "out0" if b == self.out else f"in{b}"
        return f"{name} + {term(index, self.layouts[b].strides[-1])}"
