"""Matrix products as the generated product kernels see them (`matvec_kernel.py`, `matmul_kernel.py`).

A linear layer, `mm`, `addmm` or `matmul` by a 2-D matrix computes out[m, n] = sum_k row_m[k] * weight[n, k]
(+ bias[n]) for the rows m of its first operand (its leading dims, flattened); `read_product` says which
operand plays which role, and the sizes, when a generated kernel can compute it: float32 throughout, static
shapes, a bias of N values, addmm's beta and alpha 1.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..ir import aten
from ..ir.torch_types import tensor_info
from .pointwise import constant_value

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


def read_product(op: Any) -> Product | None:
    """The product `op` computes if a generated kernel can compute it (module docstring), else None."""
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
    if any(info[1].name != "float32" for info in (rows, weight, out)):
        return None
    bias = infos[bias_at] if bias_at is not None else None
    if bias_at is not None and bias is None:
        if constant_value(operands[bias_at]) is not None:  # linear's bias: None or a tensor
            return None
        bias_at = None
    elif bias is not None and (bias[1].name != "float32" or math.prod(bias[0]) != n or bias[0][-1] != n):
        return None
    if aten.aten_name(op) == "aten.addmm.default" and any(
        constant_value(v) not in (1, 1.0) for v in operands[3:5]
    ):
        return None
    return Product(rows_at, weight_at, bias_at, transposed, math.prod(rows[0][:-1]), k, n)
