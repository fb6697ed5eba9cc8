"""The libdevice functions generated kernels call, for Triton's interpreter (which has no libdevice).

Generated sources call `libdevice.NAME(x)`; on the GPU that name is `triton.language.extra.libdevice`
(CUDA's math library). The emulator binds it to this module instead, where each function computes
numpy's version of the same function, the one-operand ones in float64 rounded to the operand's dtype:
correctly rounded but for rare double roundings, as eager's CPU kernels nearly are and libdevice's within
an ulp or two. numpy's own float32 functions are an ulp off often enough to show where the program
cancels (fuzz seed 66011: a sum of two tanh values near -1 and 1, 1 ulp of np.tanh became 3e-4 of it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import triton.language as tl
from triton.runtime.interpreter import TensorHandle


def _elementwise(function: Callable[[np.ndarray], np.ndarray]) -> Callable[[tl.tensor], tl.tensor]:
    def apply(x: tl.tensor) -> tl.tensor:
        data = x.handle.data
        wide = data.astype(np.float64) if data.dtype in (np.float16, np.float32) else data
        with np.errstate(all="ignore"):  # inf and NaN results are values here, as on the GPU
            data = function(wide).astype(data.dtype)
        return tl.tensor(TensorHandle(data, x.handle.dtype.scalar), x.type)

    return apply


tanh = _elementwise(np.tanh)
expm1 = _elementwise(np.expm1)
log1p = _elementwise(np.log1p)
rsqrt = _elementwise(lambda x: 1 / np.sqrt(x))
rint = _elementwise(np.rint)


def fmod(x: tl.tensor, y: tl.tensor | float) -> tl.tensor:
    """C's fmod: the interpreter computes a float `%` with numpy's fmod, which is exact."""
    return x % y


def _binary(function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., tl.tensor]:
    """A function of two operands in the dtype of the tensor ones, broadcast together; a Python float
    operand is taken in that dtype, as Triton takes a literal."""

    def apply(x: tl.tensor | float, y: tl.tensor | float) -> tl.tensor:
        like = x if isinstance(x, tl.tensor) else y
        dtype = like.handle.data.dtype
        a, b = (np.asarray(v.handle.data if isinstance(v, tl.tensor) else v, dtype) for v in (x, y))
        with np.errstate(all="ignore"):
            data = function(a, b).astype(dtype)
        shape = [int(n) for n in data.shape]
        block = like.type if shape == list(like.shape) else tl.block_type(like.dtype, shape)
        return tl.tensor(TensorHandle(data, like.handle.dtype.scalar), block)

    return apply


pow = _binary(np.power)  # C's pow
mul_rn = _binary(np.multiply)  # a product never fused into an add (numpy fuses nothing)
atan2 = _binary(np.arctan2)
hypot = _binary(np.hypot)
