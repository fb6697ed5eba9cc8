"""Matrix products as the generated product kernels see them (`matvec_kernel.py`, `matmul_kernel.py`),
and which operands the vendor's products read as they are.

A linear layer, `mm`, `addmm` or `matmul` by a 2-D matrix computes out[m, n] = sum_k row_m[k] * weight[n, k]
(+ bias[n]) for the rows m of its first operand (its leading dims, flattened); `read_product` says which
operand plays which role, and the sizes, when a generated kernel can compute it: one floating dtype
throughout (float32 unless the kernel takes others), static shapes, a bias of N values, addmm's beta and
alpha 1.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten
from ..ir.layout import Layout
from ..ir.torch_types import tensor_info
from .pointwise import constant_value

# Vendor products whose operands `vendor_operand` follows to the GEMM.
VENDOR_PRODUCTS = frozenset({"aten.bmm.default", "aten.mm.default", "aten.matmul.default"})

# op -> (operand of the rows, of the weight, of the bias or None, whether the weight is [K, N] (transposed))
_PRODUCTS = {
    "aten.linear.default": (0, 1, 2, False),
    "aten.mm.default": (0, 1, None, True),
    "aten.matmul.default": (0, 1, None, True),  # rows (any leading dims) times a 2-D matrix
    "aten.addmm.default": (1, 2, 0, True),
}


@dataclasses.dataclass(frozen=True)
class Product:
    """What one op computes: out[m, n] = sum_k rows[m, k] * weight[n, k] (+ bias[n])."""

    rows: int  # operand index of the rows, of the weight, of the bias (None: no bias)
    weight: int
    bias: int | None
    transposed: bool  # the weight operand is [K, N]
    m: int  # rows: the product of the leading dims of the rows operand (and of the result)
    k: int
    n: int

    @property
    def weight_and_bias(self) -> list[int]:
        """The operand indices of the weight and, if any, the bias: what a generated kernel reads as inputs."""
        return [self.weight] + ([self.bias] if self.bias is not None else [])


def read_product(op: Any, dtypes: tuple[str, ...] = ("float32",)) -> Product | None:
    """The product `op` computes if a generated kernel taking operands of one of `dtypes` can compute it
    (module docstring), else None."""
    roles = _PRODUCTS.get(aten.aten_name(op) or "")
    if roles is None or len(op.results) != 1:
        return None
    rows_at, weight_at, bias_at, transposed = roles
    operands = list(op.operands)
    infos = [tensor_info(v.type) for v in operands[: max(rows_at, weight_at, bias_at or 0) + 1]]
    rows, weight, out = infos[rows_at], infos[weight_at], tensor_info(op.results[0].type)
    if rows is None or weight is None or out is None or len(weight[0]) != 2 or not rows[0]:
        return None
    k, n = reversed(weight[0]) if not transposed else weight[0]
    sizes = [*rows[0], *weight[0], *out[0]]
    if min(sizes, default=0) < 1 or rows[0][-1] != k or list(out[0]) != [*rows[0][:-1], n]:
        return None
    dtype = out[1].name
    if dtype not in dtypes or any(info[1].name != dtype for info in (rows, weight)):
        return None
    bias = infos[bias_at] if bias_at is not None else None
    if bias_at is not None and bias is None:
        if constant_value(operands[bias_at]) is not None:  # linear's bias: None or a tensor
            return None
        bias_at = None
    elif bias is not None and (bias[1].name != dtype or math.prod(bias[0]) != n or bias[0][-1] != n):
        return None
    if aten.aten_name(op) == "aten.addmm.default" and any(
        constant_value(v) not in (1, 1.0) for v in operands[3:5]
    ):
        return None
    return Product(rows_at, weight_at, bias_at, transposed, math.prod(rows[0][:-1]), k, n)


def vendor_operand(op: Any, index: int, layout: Layout) -> Layout | None:
    """The layout in which vendor product `op` (`VENDOR_PRODUCTS`) hands its operand `index`, of `layout`,
    to the GEMM: the operand itself for bmm and mm (and matmul of two matrices, which is mm); for a matmul
    of two batches, what ATen's `matmul` makes of it (`expand` to the broadcast batch, then `reshape` to
    one batch dim). None where ATen copies it on the way (a reshape that cannot be a view) or takes another
    path (vectors, a batch by a matrix: matmul folds those, copying where it must)."""
    name = aten.aten_name(op)
    if name != "aten.matmul.default":
        return layout
    shapes = [tensor_info(v.type) for v in list(op.operands)[:2]]
    if any(info is None or -1 in info[0] for info in shapes):
        return None
    ranks = [len(info[0]) for info in shapes]
    if ranks == [2, 2]:
        return layout
    if min(ranks) < 3:
        return None
    try:
        batch = _broadcast(*(info[0][:-2] for info in shapes))
        expanded = layout.expand([*batch, *layout.shape[-2:]])
    except ValueError:
        return None
    return expanded.view([math.prod(batch), *layout.shape[-2:]])


def _broadcast(a: list[int], b: list[int]) -> list[int]:
    """The broadcast of two shapes (ATen's `infer_size`)."""
    a, b = [1] * (len(b) - len(a)) + list(a), [1] * (len(a) - len(b)) + list(b)
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b, strict=True)):
        raise ValueError(f"shapes {a} and {b} do not broadcast")
    return [max(x, y) if 0 not in (x, y) else 0 for x, y in zip(a, b, strict=True)]


def vendor_reads_as_is(layout: Layout | None) -> bool:
    """Whether ATen hands an operand of `bmm` (3-D) or `mm` (2-D) in this layout to cuBLAS as it is, rather
    than copying it first (`prepare_batch_matrix_for_cublas` and `prepare_matrix_for_cublas`, ATen's
    cuda/Blas.cpp): its [R, C] matrices are row-major with a row stride of at least C, or column-major with
    a column stride of at least R, at any batch stride (strided batched GEMM); or the operand is
    contiguous (3-D, no zero stride in a matrix) or non-overlapping and dense (2-D)."""
    if layout is None or layout.rank not in (2, 3) or layout.is_dynamic:
        return False
    (rows, cols), (row_stride, col_stride) = layout.shape[-2:], layout.strides[-2:]
    if (col_stride == 1 and row_stride >= max(1, cols)) or (row_stride == 1 and col_stride >= max(1, rows)):
        return True
    if layout.rank == 2:
        return layout.is_dense()
    return layout.is_contiguous() and row_stride != 0 and col_stride != 0
