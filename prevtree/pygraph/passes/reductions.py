"""The ATen reductions pygraph generates kernels for, and how each one is written in Triton.

`REDUCTIONS` maps an ATen overload name to a `Reduction`: which dims of its input (operand 0) it reduces,
and how to compute its results from the reduced rows. classify-ops calls an op a reduction exactly when
its name is a key; fuse-pointwise asks `reduced_dims` whether and over what a kernel can compute it;
codegen-triton asks `emit` for code. Like `pointwise`, this is a table, not a pass.

A reduction kernel sees its iteration space as rows (the dims kept) by columns (the dims reduced). An
entry's `emit` gets a `ReductionEmitter`: operands as for a pointwise op (a value per element, or per row),
plus `sum`/`max`/`min`, which reduce a per-element expression to one value per row, and `count`, the
number of columns. Numerics follow eager CUDA: floating-point results only, accumulated in the opmath
dtype (float32 for float16 and bfloat16); mean is the sum divided by the count; variance is two-pass
(the mean first, then the squares of the centered values), which is at least as accurate as eager's
Welford; norms use CUDA's `rsqrtf` like the pointwise `rsqrt` and eager's norm kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..ir.dtypes import DType
from .pointwise import NO_VALUE, OpEmitter, Value, convert, div, opmath, rsqrt, sqrt, tl_type

# torch.finfo(dtype).eps: rms_norm's epsilon when none is given.
_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16}  # fmt: skip


class ReductionEmitter(OpEmitter):
    """An `OpEmitter` that can also reduce over the columns; `count` is the number of columns."""

    def __init__(
        self,
        operands: Sequence[Callable[[], Any]],
        out: DType,
        index: Value,
        block: str,
        let: Callable[[str], str],
        reduce: Callable[[str, str], str],
        count: int,
    ) -> None:
        super().__init__(operands, out, index, block, let)
        self.reduce = reduce  # (kind "sum" | "max" | "min", expression) -> the name of the row's value
        self.count = count

    def sum(self, expr: str) -> str:
        return self.reduce("sum", expr)

    def mean(self, expr: str) -> str:
        return self.let(div(self, self.sum(expr), self.lit(self.count)))


@dataclass(frozen=True)
class Reduction:
    """How to emit one ATen reduction. `dims` says how operand `at` names the dims of operand 0 it reduces:
    "all" (no operand), "list" (a list, all when empty or None), "dim" (one dim) or "trailing" (a
    normalized shape: that many last dims). `emit` returns one expression per result, in the compute
    dtype (opmath of result 0's dtype)."""

    emit: Callable[[ReductionEmitter], list[str]]
    dims: str = "list"
    at: int = 1


def reduced_dims(name: str, args: list[Any], rank: int) -> tuple[int, ...] | None:
    """The sorted dims op `name` reduces, given its constant arguments (`NO_VALUE` for tensors), or None
    when they are not known at compile time."""
    entry = REDUCTIONS[name]
    given = None if entry.dims == "all" else args[entry.at]
    if given is NO_VALUE:
        return None
    if entry.dims == "dim":
        dims: Sequence[int] = [given]
    elif entry.dims == "trailing":
        dims = range(rank - len(given), rank)
    else:
        dims = given or range(rank)
    return tuple(sorted({d % rank for d in dims})) if rank else ()


def emit(name: str, k: ReductionEmitter) -> list[str]:
    """The expressions of op `name`'s results, in the compute dtype `k.dtype`."""
    k.dtype = opmath(k.out)
    return REDUCTIONS[name].emit(k)


# ----------------------------------------------------------------------------------------- entries


def _sum(k: ReductionEmitter) -> list[str]:
    return [k.sum(k.x(0))]


def _mean(k: ReductionEmitter) -> list[str]:
    return [k.mean(k.x(0))]


def _extreme(kind: str) -> Callable[[ReductionEmitter], list[str]]:
    """amax/amin/max/min; a NaN in the row makes the result NaN, as in eager."""

    def emit_(k: ReductionEmitter) -> list[str]:
        x = k.x(0)
        found = k.reduce(kind, x)
        nans = k.sum(f"({x} != {x}).to({tl_type(k.dtype)})")
        return [f'tl.where({nans} > 0.0, float("nan"), {found})']

    return emit_


def _moments(k: ReductionEmitter, correction: float) -> tuple[str, str, str]:
    """(variance, mean, operand 0 less the mean), two-pass."""
    x = k.x(0)
    mean = k.mean(x)
    centered = k.let(f"{x} - {mean}")
    squares = k.sum(f"{centered} * {centered}")
    return k.let(div(k, squares, k.lit(max(k.count - correction, 0)))), mean, centered


def _variance(position: int, results: str) -> Callable[[ReductionEmitter], list[str]]:
    """var/std/var_mean: the correction is operand `position`, a number (`.correction`, default 1) or
    the `unbiased` flag (`.dim`); `results` names what the op returns."""

    def emit_(k: ReductionEmitter) -> list[str]:
        given = k.param(position)
        correction = 1 if given is None else int(given) if isinstance(given, bool) else given
        var, mean, _ = _moments(k, correction)
        return {"var": [var], "std": [sqrt(k, var)], "var_mean": [var, mean]}[results]

    return emit_


def _softmax(log: bool) -> Callable[[ReductionEmitter], list[str]]:
    def emit_(k: ReductionEmitter) -> list[str]:
        x = k.x(0)
        shifted = k.let(f"{x} - {k.reduce('max', x)}")
        exp = k.let(f"tl.exp({shifted})")
        total = k.sum(exp)
        return [f"{shifted} - tl.log({total})" if log else div(k, exp, total)]

    return emit_


def _layer_norm(statistics: bool) -> Callable[[ReductionEmitter], list[str]]:
    """layer_norm(x, shape, weight, bias, eps) (`statistics`: native_layer_norm, which also returns the
    mean and 1 / std per row)."""

    def emit_(k: ReductionEmitter) -> list[str]:
        var, mean, centered = _moments(k, 0)
        rstd = k.let(rsqrt(k, f"{var} + {k.lit(k.param(4))}"))
        y = f"({centered} * {rstd})"
        if k.value(2) is not None:
            y = f"{y} * {k.x(2)}"
        if k.value(3) is not None:
            y = f"{y} + {k.x(3)}"
        return [y, mean, rstd] if statistics else [y]

    return emit_


def _rms_norm(k: ReductionEmitter) -> list[str]:
    """x / sqrt(mean(x^2) + eps), rounded to x's dtype before the weight multiplies it (as eager)."""
    x = k.x(0)
    given = k.param(3)
    source = k.value(0).dtype
    eps = _EPS[source.name] if given is None else given
    rstd = k.let(rsqrt(k, f"{k.mean(f'{x} * {x}')} + {k.lit(eps)}"))
    y = k.let(convert(convert(f"{x} * {rstd}", k.dtype, source), source, k.dtype))
    return [y if k.value(2) is None else f"{y} * {k.x(2)}"]


REDUCTIONS: dict[str, Reduction] = {
    "aten.sum.default": Reduction(_sum, "all"),
    "aten.sum.dim_IntList": Reduction(_sum),
    "aten.mean.default": Reduction(_mean, "all"),
    "aten.mean.dim": Reduction(_mean),
    "aten.amax.default": Reduction(_extreme("max")),
    "aten.amin.default": Reduction(_extreme("min")),
    "aten.max.default": Reduction(_extreme("max"), "all"),
    "aten.min.default": Reduction(_extreme("min"), "all"),
    "aten.var.correction": Reduction(_variance(2, "var")),
    "aten.var.dim": Reduction(_variance(2, "var")),
    "aten.std.correction": Reduction(_variance(2, "std")),
    "aten.std.dim": Reduction(_variance(2, "std")),
    "aten.var_mean.correction": Reduction(_variance(2, "var_mean")),
    "aten.var_mean.dim": Reduction(_variance(2, "var_mean")),
    "aten._softmax.default": Reduction(_softmax(log=False), "dim"),
    "aten.softmax.int": Reduction(_softmax(log=False), "dim"),
    "aten._log_softmax.default": Reduction(_softmax(log=True), "dim"),
    "aten.log_softmax.int": Reduction(_softmax(log=True), "dim"),
    "aten.layer_norm.default": Reduction(_layer_norm(statistics=False), "trailing"),
    "aten.native_layer_norm.default": Reduction(_layer_norm(statistics=True), "trailing"),
    "aten.rms_norm.default": Reduction(_rms_norm, "trailing"),
}
