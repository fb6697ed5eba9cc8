"""The pointwise ATen ops pygraph generates kernels for, and how each one is written in Triton.

`POINTWISE` maps an ATen overload name (`"aten.add.Tensor"`) to a `Pointwise` entry; classify-ops calls an
op pointwise exactly when its name is a key. An entry's `emit` builds one Triton expression from an
`OpEmitter`, which hands out the op's operands converted to the entry's compute dtype. This is a table,
not a pass: fuse-pointwise asks it what it may fuse, codegen-triton asks it for code.

Semantics are eager PyTorch's on CUDA, so that a generated kernel computes what eager computes:
- arithmetic runs in the "opmath" dtype of the op's result dtype (float32 for float16 and bfloat16) and
  the result is rounded to the result dtype the IR states, so a chain of ops rounds where eager does
  (Inductor keeps float32 between ops; pygraph matches eager instead);
- numbers (Python scalars, `NumToTensor`) convert straight to the compute dtype, as CUDA kernels read
  CPU scalars; comparisons compute in the promoted dtype of their operands (`result_type`);
- except where CUDA's kernel reads its operands in the common dtype (`scalar_t`), not opmath: remainder,
  fmod, pow, atan2, hypot, comparisons and threshold round a number or a wider 0-d operand to float16 or bfloat16 first
  (`Pointwise.reads`): `x % 0.7` in bfloat16 divides by 0.69921875, and `x < 0.7` compares with it;
- tanh, expm1, log1p, rsqrt and rint (round) call CUDA's libdevice (`libdevice.NAME`: the functions eager's kernels call, at a
  fraction of the cost of formulas built from exp and log), and so do a float fmod (remainder and floor
  division too), as Triton's own `%` of floats is not C's fmod on the GPU, pow past ATen's special
  exponents (2, 3, 0.5, -1, ...), atan2 and hypot (complex angles and magnitudes); Triton's interpreter has no libdevice, so the emulator binds that name
  to numpy's (`backend/interpreted_libdevice.py`); true division and sqrt use the correctly rounded `div_rn`/`sqrt_rn` where eager's
  CUDA code does, but a division by a number multiplies by the number's reciprocal, as CUDA's kernel does
  (`_true_div`; a division by a literal power of two inside a formula is the exact multiplication by its
  reciprocal);
- a float32 subnormal number a function takes (`div_rn`, libdevice, `tl.maximum`) is made a float32 tensor
  first: Triton would make it a float64 constant (`_subnormal`).
"""

from __future__ import annotations

import ast
import math
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..ir import dtypes
from ..ir._mlir import ir
from ..ir.dtypes import DType

# Concatenation: not an entry of the table (its pieces are loads at shifted offsets, the kernel writer's
# business), but fused like one, so a `cat` costs no kernel of its own (DenseNet's growing feature lists).
CONCAT = "aten.cat.default"
BOOL, INT8, INT64, FLOAT32, FLOAT64 = (
    dtypes.BY_NAME[n] for n in ("bool", "int8", "int64", "float32", "float64")
)
INF = 'float("inf")'
_NAN = ", propagate_nan=tl.PropagateNan.ALL"
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}


# ------------------------------------------------------------------------------------- values and types


@dataclass(frozen=True)
class Value:
    """A tensor operand inside a kernel: a Triton expression of `dtype`, one element per lane.

    `rank` is the tensor's rank (0-dim tensors promote like numbers of their category); `const` is the
    value when it is known at compile time (`NumToTensor` of a constant)."""

    expr: str
    dtype: DType
    rank: int
    const: bool | int | float | None = None


def tl_type(dtype: DType) -> str:
    return "tl.int1" if dtype.name == "bool" else f"tl.{dtype.name}"


def opmath(dtype: DType) -> DType:
    """The dtype eager computes in for `dtype` results (bool arithmetic in int8: Triton's i1 add is xor)."""
    if dtype.name in ("float16", "bfloat16"):
        return FLOAT32
    return INT8 if dtype == BOOL else dtype


def literal(value: bool | int | float, dtype: DType) -> str:
    """`value` converted to `dtype` (C++ casts: truncation, wrap-around) as Triton source."""
    if dtype == BOOL:
        return str(bool(value))
    if not dtype.is_float:
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"cannot convert {value} to {dtype.name}")
        bits = dtype.itemsize * 8
        low = -(1 << (bits - 1)) if dtype.is_signed else 0
        return str((int(value) - low) % (1 << bits) + low)
    value = float(value)
    if dtype == FLOAT32 and math.isfinite(value):
        try:
            struct.pack("f", value)
        except OverflowError:
            value = math.copysign(math.inf, value)
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return INF if value > 0 else f"-{INF}"
    if value == 0 and math.copysign(1.0, value) < 0:
        # Triton makes every constant equal to 0 its type's null value, +0.0: -0.0 is built from its bits
        bits = dtype.itemsize * 8
        return f"tl.full([], {1 << (bits - 1)}, tl.uint{bits}).to({tl_type(dtype)}, bitcast=True)"
    return repr(value)


def _subnormal(value: bool | int | float) -> bool:
    """Whether `value` is a float32 subnormal, which Triton makes a float64 constant where a function
    (`div_rn`, libdevice, `tl.maximum`) takes it as a Python float: the GPU compiler then refuses the call
    (`div_rn` of float32 by 2.0**-130) or computes it in float64."""
    return 0 < abs(float(value)) < 2**-126


def _float32_rounds(value: float) -> bool:
    """Whether Triton rounds `value` as a Python float in a kernel: it makes a float32 constant of any value
    in float32's normal range, in a float64 kernel's arithmetic too."""
    try:
        return abs(value) >= 2**-126 and struct.unpack("f", struct.pack("f", value))[0] != value
    except OverflowError:  # beyond float32: Triton makes it a float64 constant
        return False


def _float32(value: float) -> float:
    """`value` rounded to float32 (infinite beyond its range)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def as_stored(value: bool | int | float, dtype: DType) -> float:
    """`value` stored in the 2-byte float `dtype` and read back, as c10 does: through float32, rounding to
    nearest even each time."""
    single = _float32(float(value))
    if dtype.name == "float16":
        try:
            return struct.unpack("e", struct.pack("e", single))[0]
        except OverflowError:
            return math.copysign(math.inf, single)
    if math.isnan(single):
        return single
    bits = struct.unpack("I", struct.pack("f", single))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("f", struct.pack("I", bits))[0]


def convert(expr: str, source: DType, target: DType) -> str:
    """`expr` of dtype `source` as `target`. Conversions to and from float16 or bfloat16 go through float32,
    as in eager (c10's Half and BFloat16 are made from and read as a float): from float64 or a wide integer
    that can differ from rounding once, and Triton's interpreter makes garbage of any direct bfloat16
    conversion but float32's (it keeps bfloat16 as 16-bit integers)."""
    if source == target:
        return expr
    if FLOAT32 not in (source, target) and any(d.is_float and d.itemsize == 2 for d in (source, target)):
        return convert(convert(expr, source, FLOAT32), FLOAT32, target)
    return f"{expr if expr.isidentifier() else f'({expr})'}.to({tl_type(target)})"


def _category(dtype: DType) -> int:
    return 2 if dtype.is_float else 0 if dtype == BOOL else 1


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """ATen's combine_categories: `lower` (0-dim tensors, numbers) counts only from a higher category."""
    if higher is None:
        return lower
    if lower is None or higher.is_float:
        return higher
    if higher == BOOL or lower.is_float:
        return dtypes.promote(higher, lower)
    return higher


def result_type(operands: Sequence[Value | bool | int | float]) -> DType:
    """`torch.result_type` of tensors and numbers (Python floats count as the default dtype, float32)."""
    dim = zero = number = None
    for v in operands:
        if isinstance(v, Value) and v.rank > 0:
            dim = v.dtype if dim is None else dtypes.promote(dim, v.dtype)
        elif isinstance(v, Value):
            zero = v.dtype if zero is None else dtypes.promote(zero, v.dtype)
        else:
            kind = BOOL if isinstance(v, bool) else INT64 if isinstance(v, int) else FLOAT32
            number = kind if number is None or _category(kind) > _category(number) else number
    result = _combine(dim, _combine(zero, number))
    if result is None:
        raise ValueError("no operands to promote")
    return result


# ------------------------------------------------------------------------------------------- emitting


class OpEmitter:
    """One op as its entry sees it: operands by position, the result dtype `out`, the compute dtype
    `dtype` (set from the entry's `compute`), the linear index, the block size and `let` for temporaries."""

    def __init__(
        self,
        operands: Sequence[Callable[[], Any]],
        out: DType,
        index: Value,
        block: int,
        let: Callable[[str], str],
    ) -> None:
        self._operands = operands
        self._converted: dict[tuple[int, DType], str] = {}
        self.out = out
        self.dtype = out
        # the 2-byte float its numbers and wider 0-d operands pass through (`Pointwise.reads`)
        self.reads: DType | None = None
        self.index = index
        self.block = block
        self.let = let

    def value(self, i: int) -> Any:
        """Operand `i`: a `Value` for a tensor, else its Python value (number, str, None, list)."""
        return self._operands[i]()

    def param(self, i: int) -> Any:
        v = self.value(i)
        if isinstance(v, Value):
            raise ValueError(f"operand {i} must be known at compile time")
        return v

    def x(self, i: int, dtype: DType | None = None) -> str:
        """Operand `i` converted to `dtype` (default: the compute dtype), as a name or a literal."""
        dtype = dtype or self.dtype
        if (i, dtype) not in self._converted:
            v = self.value(i)
            if isinstance(v, Value) and v.const is None:
                expr, source = v.expr, v.dtype
                if self.reads not in (None, source, dtype):
                    expr, source = convert(expr, source, self.reads), self.reads
                expr = convert(expr, source, dtype)
                self._converted[i, dtype] = expr if expr.isidentifier() else self.let(expr)
            elif isinstance(v, (Value, bool, int, float)):
                self._converted[i, dtype] = self._constant(
                    self.number(v.const if isinstance(v, Value) else v), dtype
                )
            else:
                raise ValueError(f"operand {i} is {v!r}, not a tensor or a number")
        return self._converted[i, dtype]

    def number(self, value: bool | int | float) -> bool | int | float:
        """A number as the kernel reads it: stored in `reads` first where that is set."""
        return value if self.reads is None else as_stored(value, self.reads)

    def cond(self, i: int) -> str:
        return self.x(i, BOOL)

    def lit(self, value: bool | int | float) -> str:
        return self._constant(value, self.dtype)

    def _constant(self, number: bool | int | float, dtype: DType) -> str:
        """`number` in `dtype`: a literal, or a block of it where Triton would make the literal a float32
        constant of another value (a float64 kernel's 1/6 or 0.1) or a float64 one (a float32 subnormal)."""
        text = literal(number, dtype)
        widened = dtype == FLOAT32 and _subnormal(number)
        if widened or (dtype == FLOAT64 and _float32_rounds(float(number))):
            text = self.let(self.block_of(text, dtype))
        return text

    def block_of(self, literal_text: str, dtype: DType) -> str:
        """A block of the literal `literal_text` in `dtype`, which Triton takes as that dtype's value."""
        return f"tl.full([{self.block}], {literal_text}, {tl_type(dtype)})"

    @property
    def is_float(self) -> bool:
        return self.dtype.is_float


@dataclass(frozen=True)
class Pointwise:
    """How to emit one ATen op.

    `emit` returns an expression in the compute dtype (in bool when `predicate`), which `compute` picks
    (default: opmath of the result dtype). `device` is the position of the op's device argument, which
    must name the model's device; `check` rejects other argument values the kernel cannot honour;
    `integer` False leaves integer results to ATen (an integer to a tensor power: wrapping products over
    every bit of the exponent, which a kernel would unroll); `reads`, where CUDA's kernel takes its
    operands as the common dtype (`scalar_t`) rather than opmath, gives that dtype: a float16 or bfloat16
    one rounds numbers and wider 0-d operands before they are computed with (measured on an H100:
    remainder, fmod, pow, comparisons, threshold; add, mul, div, lerp and the activations' parameters
    read numbers in float32)."""

    emit: Callable[[OpEmitter], str]
    compute: Callable[[OpEmitter], DType] = lambda k: opmath(k.out)
    predicate: bool = False
    device: int | None = None
    check: Callable[[list[Any]], str | None] | None = None
    integer: bool = True
    reads: Callable[[OpEmitter], DType] | None = None


def emit(name: str, k: OpEmitter) -> str:
    """The expression of op `name`'s result in its result dtype `k.out`."""
    entry = POINTWISE[name]
    k.dtype = entry.compute(k)
    if entry.reads is not None and (read := entry.reads(k)).is_float and read.itemsize == 2:
        k.reads = read
    expr = entry.emit(k)
    dtype = BOOL if entry.predicate else k.dtype
    if _is_literal(expr):  # a number: make it a block (the interpreter mishandles 0-d tensors)
        if dtype.name == "bfloat16":  # made in float32: the interpreter has no bfloat16 constants
            dtype = FLOAT32
        expr = k.block_of(expr, dtype)
    return convert(expr, dtype, k.out)


_LITERAL = re.compile(r'True|False|-?(?:[0-9][0-9.e+-]*|float\("(?:inf|nan)"\))')


def _is_literal(expr: str) -> bool:
    return _LITERAL.fullmatch(expr) is not None


# ------------------------------------------------------------------------------------ shared formulas


def _operand(expr: str) -> str:
    """`expr` as an operand of an infix operator: parenthesized unless a name or a literal."""
    return expr if expr.isidentifier() or _is_literal(expr) else f"({expr})"


def rounded_product(expr: str, dtype: DType) -> str | None:
    """`expr`, if its last op is a multiplication of floats in `dtype`, as one that no add can absorb
    (`libdevice.mul_rn`, correctly rounded and never contracted into a fused multiply-add); else None.
    A literal operand of a float64 product is a float64 block: libdevice has no double-by-float form."""
    tree = ast.parse(expr, mode="eval").body
    if not dtype.is_float or not isinstance(tree, ast.BinOp) or not isinstance(tree.op, ast.Mult):
        return None

    def operand(node: ast.expr) -> str:
        text = ast.unparse(node)
        return f"tl.full([1, 1], {text}, tl.float64)" if dtype == FLOAT64 and _is_literal(text) else text

    return f"libdevice.mul_rn({operand(tree.left)}, {operand(tree.right)})"


def div(k: OpEmitter, a: str, b: str) -> str:
    if k.dtype != FLOAT32:
        return f"({_operand(a)} / {_operand(b)})"
    reciprocal = _power_of_two_reciprocal(b)
    return f"({_operand(a)} * {reciprocal})" if reciprocal else f"tl.math.div_rn({a}, {b})"


def _true_div(k: OpEmitter, a: str, b: str) -> str:
    """`a / b`. By a number (a CPU scalar to eager), CUDA's kernel multiplies by the number's reciprocal,
    computed once on the host in the compute dtype (`div_true_kernel_cuda`: one rounding more than a
    division, and infinite where the reciprocal overflows), and so does pygraph."""
    divisor = k.value(1)
    if isinstance(divisor, Value) or not k.is_float:
        return div(k, a, b)
    return f"({_operand(a)} * {k.lit(_reciprocal(float(k.number(divisor)), k.dtype))})"


def _reciprocal(value: float, dtype: DType) -> float:
    """1 / `value` in `dtype` (float32: the number read as float32; rounding float64's quotient to float32
    is the correctly rounded float32 quotient, float64 holding more than twice float32's digits)."""
    if dtype == FLOAT32:
        value = _float32(value)
    quotient = math.copysign(math.inf, value) if value == 0 else 1.0 / value
    return _float32(quotient) if dtype == FLOAT32 else quotient


def _power_of_two_reciprocal(expr: str) -> str | None:
    """1/b as a literal when `expr` is a literal power of two whose reciprocal is a normal float32: then
    a * (1/b) is exactly the correctly rounded a / b, at a fraction of div_rn's cost (means over 512)."""
    if not _is_literal(expr) or expr in ("True", "False") or expr.startswith("float("):
        return None
    mantissa, exponent = math.frexp(float(expr))
    return repr(1 / float(expr)) if abs(mantissa) == 0.5 and -126 <= 1 - exponent <= 127 else None


def sqrt(k: OpEmitter, x: str) -> str:
    return f"tl.math.sqrt_rn({x})" if k.dtype == FLOAT32 else f"tl.sqrt({x})"


def rsqrt(k: OpEmitter, x: str) -> str:
    """CUDA's rsqrtf (`libdevice.rsqrt`, 2 ulp), which eager's rsqrt and its norm kernels call."""
    return f"libdevice.rsqrt({x})" if k.dtype == FLOAT32 else f"(1.0 / tl.sqrt({x}))"


def _max(k: OpEmitter, a: str, b: str) -> str:
    return f"tl.maximum({a}, {b}{_NAN if k.is_float else ''})"


def _min(k: OpEmitter, a: str, b: str) -> str:
    return f"tl.minimum({a}, {b}{_NAN if k.is_float else ''})"


def _expm1(k: OpEmitter, x: str) -> str:
    return f"libdevice.expm1({x})"


def _log1p(k: OpEmitter, x: str) -> str:
    return f"libdevice.log1p({x})"


def _tanh(k: OpEmitter, x: str) -> str:
    return f"libdevice.tanh({x})"


def _round_half_even(k: OpEmitter, x: str) -> str:
    """CUDA's rint (eager's nearbyint): halves to even, and a negative rounded to zero is -0.0."""
    return f"libdevice.rint({x})"


def _trunc(x: str) -> str:
    return f"tl.where({x} < 0.0, tl.ceil({x}), tl.floor({x}))"


def negate(x: str) -> str:
    """-x for a float: Triton's unary minus computes 0 - x, which is +0.0 for x = +0.0 (eager: -0.0)."""
    return f"{x} * -1.0"


def _pow(k: OpEmitter, x: str, y: str) -> str:
    """C's pow of floats, float32 ones computed in float64 and rounded once: correctly rounded, as eager's
    CUDA powf is in 94% of the elements and within an ulp in the rest, where libdevice's float32 pow was
    up to 3 ulp off eager's (38% misrounded, powers of two among them) and `exp(y * log|x|)` up to 93
    (`bench/results/pow-s41-h100.log`). The price, a float64 pow per element, is paid by non-special
    exponents only (`x ** 2`, `x ** 0.5`, ... are ATen's special cases)."""
    return _libdevice_binary(k, "pow", x, y, FLOAT64)


def _libdevice_binary(k: OpEmitter, name: str, a: str, b: str, compute: DType | None = None) -> str:
    """`libdevice.NAME(a, b)` of floats, computed in `compute` (default: the kernel's dtype) and rounded to
    the kernel's. A literal is made a float64 tensor there: Triton takes a Python float as float32, and
    libdevice has no function of a double and a float."""
    compute = compute or k.dtype

    def operand(v: str) -> str:
        if _is_literal(v):
            return k.let(k.block_of(v, FLOAT64)) if compute == FLOAT64 else v
        return v if compute == k.dtype else f"{v}.to({tl_type(compute)})"

    call = f"libdevice.{name}({operand(a)}, {operand(b)})"
    return call if compute == k.dtype else f"{call}.to({tl_type(k.dtype)})"


# ----------------------------------------------------------------------------------------- the entries


def _unary(float_formula: Callable[[OpEmitter, str], str], integer: str | None = "{x}") -> Pointwise:
    """An op on one operand; `integer` is its form for integer compute dtypes (None: unsupported)."""

    def emit_(k: OpEmitter) -> str:
        x = k.x(0)
        if k.is_float:
            return float_formula(k, x)
        if integer is None:
            raise ValueError(f"not defined for {k.dtype.name}")
        return integer.format(x=x)

    return Pointwise(emit_)


def _add(sign: str, swap: bool = False) -> Pointwise:
    """add/sub/rsub: `self ± alpha * other` (rsub: `other - alpha * self`)."""

    def emit_(k: OpEmitter) -> str:
        a, b = (k.x(1), k.x(0)) if swap else (k.x(0), k.x(1))
        alpha = k.param(2)
        return f"{a} {sign} {b}" if alpha == 1 else f"{a} {sign} {k.lit(alpha)} * {b}"

    return Pointwise(emit_)


def _binary(formula: Callable[[OpEmitter, str, str], str], **options: Any) -> Pointwise:
    return Pointwise(lambda k: formula(k, k.x(0), k.x(1)), **options)


def _floor_div(k: OpEmitter, a: str, b: str) -> str:
    """Python's floor division, as ATen's div_floor computes it (fmod-based for floats)."""
    if not k.is_float:
        q, r = k.let(f"{a} // {b}"), k.let(f"{a} % {b}")
        return f"tl.where(({r} != 0) & (({r} < 0) != ({b} < 0)), {q} - 1, {q})"
    m = k.let(_fmod(k, a, b))
    q = k.let(div(k, f"{a} - {m}", b))
    q = k.let(f"tl.where(({m} != 0.0) & (({b} < 0.0) != ({m} < 0.0)), {q} - 1.0, {q})")
    f = k.let(f"tl.floor({q})")
    f = k.let(f"tl.where({q} - {f} > 0.5, {f} + 1.0, {f})")
    exact = k.let(div(k, a, b))
    return f"tl.where({b} == 0.0, {exact}, tl.where({q} == 0.0, {exact} * 0.0, {f}))"


def _trunc_div(k: OpEmitter, a: str, b: str) -> str:
    return _trunc(k.let(div(k, a, b))) if k.is_float else f"{a} // {b}"


def _div_mode(k: OpEmitter) -> str:
    mode = k.param(2)
    formula = {None: _true_div, "trunc": _trunc_div, "floor": _floor_div}.get(mode)
    if formula is None:
        raise ValueError(f"unknown rounding mode {mode!r}")
    return formula(k, k.x(0), k.x(1))


def _fmod(k: OpEmitter, a: str, b: str) -> str:
    """C's fmod (integers: Triton's `%`). Floats call libdevice's, which is exact: on the GPU, Triton's `%`
    of floats computes `a - b * trunc(a / b)`, which loses the sign of a zero result (`fmod(-1.5, 0.5)`
    is -0.0) and is off by `b` or worse where the quotient passes about 2**20
    (`bench/results/fmod-s37-h100.log`)."""
    return _libdevice_binary(k, "fmod", a, b) if k.is_float else f"{a} % {b}"


def _remainder(k: OpEmitter, a: str, b: str) -> str:
    m = k.let(_fmod(k, a, b))
    return f"tl.where(({m} != 0) & (({b} < 0) != ({m} < 0)), {m} + {b}, {m})"


def _pow_tensor_scalar(k: OpEmitter) -> str:
    """ATen's special cases (0.5, 2, 3, -0.5, -1, -2), then C's pow; integers by repeated squaring."""
    x, e = k.x(0), k.param(1)
    if not k.is_float:
        if not isinstance(e, int) or e < 0:
            raise ValueError(f"integer tensors to the power {e} are not supported")
        factors, base = [], x
        while e:
            if e & 1:
                factors.append(base)
            e >>= 1
            base = k.let(f"{base} * {base}") if e else base
        return " * ".join(factors) or k.lit(1)
    special = {
        0: k.lit(1),
        1: x,
        2: f"{x} * {x}",
        3: f"{x} * {x} * {x}",
        0.5: sqrt(k, x),
        -0.5: div(k, "1.0", sqrt(k, x)),
        -1: div(k, "1.0", x),
        -2: div(k, "1.0", f"{x} * {x}"),
    }
    if e in special:
        return special[e]
    return _pow(k, x, k.lit(k.number(e)))


def _pow_tensor_tensor(k: OpEmitter) -> str:
    return _pow(k, k.x(0), k.x(1))


def _pow_scalar(k: OpEmitter) -> str:
    """number ** tensor: 1 ** y is 1 (ATen's special case, NaN exponents included)."""
    base = k.number(k.param(0))
    return k.lit(1) if base == 1 else _pow(k, k.lit(base), k.x(1))


def _clamp(low: int | None, high: int | None) -> Pointwise:
    """min(max(x, low), high), NaN-propagating; absent (None) bounds are skipped."""

    def emit_(k: OpEmitter) -> str:
        result = k.x(0)
        if low is not None and k.value(low) is not None:
            result = _max(k, result, k.x(low))
        if high is not None and k.value(high) is not None:
            result = _min(k, result, k.x(high))
        return result

    return Pointwise(emit_)


def _gelu(k: OpEmitter) -> str:
    x = k.x(0)
    approximate = k.param(1)
    if approximate == "tanh":
        inner = k.let(f"{k.lit(math.sqrt(2 / math.pi))} * ({x} + {k.lit(0.044715)} * ({x} * {x} * {x}))")
        return f"0.5 * {x} * (1.0 + {_tanh(k, inner)})"
    if approximate != "none":
        raise ValueError(f"unknown gelu approximation {approximate!r}")
    return f"{x} * 0.5 * (1.0 + tl.math.erf({x} * {k.lit(math.sqrt(0.5))}))"


def _hardsigmoid_core(k: OpEmitter, x: str) -> str:
    return f"{_min(k, _max(k, f'{x} + 3.0', '0.0'), '6.0')} * {k.lit(1 / 6)}"


def _elu(k: OpEmitter) -> str:
    x = k.x(0)
    alpha, scale, input_scale = k.param(1), k.param(2), k.param(3)
    inner = k.let(f"{x} * {k.lit(input_scale)}") if input_scale != 1 else x
    negative = f"{_expm1(k, inner)} * {k.lit(alpha * scale)}"
    positive = f"{x} * {k.lit(scale)}" if scale != 1 else x
    return f"tl.where({x} > 0.0, {positive}, {negative})"


def _softplus(k: OpEmitter) -> str:
    x, beta, threshold = k.x(0), k.param(1), k.param(2)
    scaled = k.let(f"{x} * {k.lit(beta)}")
    soft = div(k, _log1p(k, k.let(f"tl.exp({scaled})")), k.lit(beta))
    return f"tl.where({scaled} > {k.lit(threshold)}, {x}, {soft})"


def _mish(k: OpEmitter) -> str:
    x = k.x(0)
    return f"{x} * {_tanh(k, k.let(_log1p(k, k.let(f'tl.exp({x})'))))}"


def _round_decimals(k: OpEmitter) -> str:
    x, decimals = k.x(0), k.param(1)
    if not k.is_float:
        return x
    scale = k.lit(10.0 ** abs(decimals))
    if decimals < 0:
        return f"{_round_half_even(k, k.let(div(k, x, scale)))} * {scale}"
    return div(k, _round_half_even(k, k.let(f"{x} * {scale}")), scale)


def _nan_to_num(k: OpEmitter) -> str:
    x = k.x(0)
    if not k.is_float:
        return x
    big = _FLOAT_MAX.get(k.out.name, 1.7976931348623157e308)
    nan, posinf, neginf = (k.param(i) for i in (1, 2, 3))
    nan, posinf, neginf = (
        k.lit(0.0 if nan is None else nan),
        k.lit(big if posinf is None else posinf),
        k.lit(-big if neginf is None else neginf),
    )
    return f"tl.where({x} != {x}, {nan}, tl.where({x} == {INF}, {posinf}, tl.where({x} == -{INF}, {neginf}, {x})))"


def _addc(formula: Callable[[OpEmitter, str, str], str]) -> Pointwise:
    """addcmul/addcdiv: `self + value * (t1 op t2)`."""

    def emit_(k: OpEmitter) -> str:
        product = formula(k, k.x(1), k.x(2))
        value = k.param(3)
        return f"{k.x(0)} + {product}" if value == 1 else f"{k.x(0)} + {k.lit(value)} * {product}"

    return Pointwise(emit_)


def _lerp(k: OpEmitter) -> str:
    start, end, weight = k.x(0), k.x(1), k.x(2)
    diff = k.let(f"{end} - {start}")
    return f"tl.where({weight} < 0.5, {start} + {weight} * {diff}, {end} - {diff} * (1.0 - {weight}))"


def _arange(start: int | None, step: int | None, device: int) -> Pointwise:
    """`start + index * step` over the (1-D) iteration space; `start`, `step`: operand positions."""

    def emit_(k: OpEmitter) -> str:
        first = 0 if start is None else k.param(start)
        stride = 1 if step is None else k.param(step)
        index = k.let(convert(k.index.expr, k.index.dtype, k.dtype))
        scaled = index if stride == 1 else f"{index} * {k.lit(stride)}"
        return scaled if first == 0 else f"{k.lit(first)} + {scaled}"

    return Pointwise(emit_, device=device)


def _same_as_result(k: OpEmitter) -> DType:
    return k.out


def _copy(
    operand: int, device: int | None = None, check: Callable[[list[Any]], str | None] | None = None
) -> Pointwise:
    """The value of operand `operand` in the result dtype (clone, dtype conversion, copy)."""
    return Pointwise(lambda k: k.x(operand), compute=_same_as_result, device=device, check=check)


def _bitcast(k: OpEmitter) -> str:
    """`view(dtype)` to a dtype of the same size (classify-ops refuses other sizes and bool): the bits as
    they are, so the view's values are a kernel's."""
    source = k.value(0)
    return f"{_operand(k.x(0, source.dtype))}.to({tl_type(k.out)}, bitcast=True)"


def _fill(value: Callable[[OpEmitter], str], device: int | None = None) -> Pointwise:
    return Pointwise(value, compute=_same_as_result, device=device)


def _compare(op: str) -> Pointwise:
    return Pointwise(
        lambda k: f"{k.x(0)} {op} {k.x(1)}",
        compute=lambda k: opmath(_promoted(k)),
        predicate=True,
        reads=_promoted,
    )


def _promoted(k: OpEmitter) -> DType:
    return result_type([k.value(0), k.value(1)])


def _logical(op: str) -> Pointwise:
    return Pointwise(lambda k: f"{k.x(0)} {op} {k.x(1)}", compute=lambda k: BOOL)


def _bitwise(op: str) -> Pointwise:
    def emit_(k: OpEmitter) -> str:
        if k.is_float:
            raise ValueError(f"bitwise operations are not defined for {k.dtype.name}")
        return f"{k.x(0)} {op} {k.x(1)}"

    return Pointwise(emit_, compute=_same_as_result)


def _sign(k: OpEmitter) -> str:
    x, t = k.x(0), tl_type(k.dtype)
    return x if k.dtype == BOOL else f"({x} > 0).to({t}) - ({x} < 0).to({t})"


def _operand_dtype(k: OpEmitter) -> DType:
    return k.value(0).dtype


def _train_false(args: list[Any]) -> str | None:
    return None if args[2] is False else "dropout in training mode draws random numbers"


_WHERE = Pointwise(lambda k: f"tl.where({k.cond(0)}, {k.x(1)}, {k.x(2)})")
_MASKED_FILL = Pointwise(lambda k: f"tl.where({k.cond(1)}, {k.x(2)}, {k.x(0)})")

POINTWISE: dict[str, Pointwise] = {
    # arithmetic
    "aten.add.Tensor": _add("+"),
    "aten.add.Scalar": _add("+"),
    "aten.sub.Tensor": _add("-"),
    "aten.sub.Scalar": _add("-"),
    "aten.rsub.Tensor": _add("-", swap=True),
    "aten.rsub.Scalar": _add("-", swap=True),
    "aten.mul.Tensor": _binary(lambda k, a, b: f"{a} * {b}"),
    "aten.mul.Scalar": _binary(lambda k, a, b: f"{a} * {b}"),
    "aten.div.Tensor": _binary(_true_div),
    "aten.div.Scalar": _binary(_true_div),
    "aten.div.Tensor_mode": Pointwise(_div_mode),
    "aten.div.Scalar_mode": Pointwise(_div_mode),
    "aten.floor_divide.default": _binary(_floor_div),
    "aten.floor_divide.Scalar": _binary(_floor_div),
    "aten.remainder.Tensor": _binary(_remainder, reads=_same_as_result),
    "aten.remainder.Scalar": _binary(_remainder, reads=_same_as_result),
    "aten.fmod.Tensor": _binary(_fmod, reads=_same_as_result),
    "aten.fmod.Scalar": _binary(_fmod, reads=_same_as_result),
    "aten.atan2.default": _binary(lambda k, a, b: _libdevice_binary(k, "atan2", a, b), reads=_same_as_result),
    "aten.hypot.default": _binary(lambda k, a, b: _libdevice_binary(k, "hypot", a, b), reads=_same_as_result),
    "aten.pow.Tensor_Scalar": Pointwise(_pow_tensor_scalar, reads=_same_as_result),
    "aten.pow.Tensor_Tensor": Pointwise(_pow_tensor_tensor, integer=False, reads=_same_as_result),
    "aten.pow.Scalar": Pointwise(_pow_scalar, integer=False, reads=_same_as_result),
    "aten.neg.default": _unary(lambda k, x: negate(x), "-{x}"),
    "aten.abs.default": _unary(lambda k, x: f"tl.abs({x})", "tl.abs({x})"),
    "aten.reciprocal.default": _unary(lambda k, x: div(k, "1.0", x), None),
    "aten.maximum.default": _binary(_max),
    "aten.minimum.default": _binary(_min),
    "aten.max.other": _binary(_max),
    "aten.min.other": _binary(_min),
    "aten.addcmul.default": _addc(lambda k, a, b: f"({a} * {b})"),
    "aten.addcdiv.default": _addc(div),
    "aten.lerp.Scalar": Pointwise(_lerp),
    "aten.lerp.Tensor": Pointwise(_lerp),
    # math
    "aten.exp.default": _unary(lambda k, x: f"tl.exp({x})"),
    "aten.log.default": _unary(lambda k, x: f"tl.log({x})"),
    "aten.log1p.default": _unary(_log1p),
    "aten.expm1.default": _unary(_expm1),
    "aten.sqrt.default": _unary(sqrt),
    "aten.rsqrt.default": _unary(rsqrt),
    "aten.sin.default": _unary(lambda k, x: f"tl.sin({x})"),
    "aten.cos.default": _unary(lambda k, x: f"tl.cos({x})"),
    "aten.tanh.default": _unary(_tanh),
    "aten.erf.default": _unary(lambda k, x: f"tl.math.erf({x})"),
    "aten.floor.default": _unary(lambda k, x: f"tl.floor({x})"),
    "aten.ceil.default": _unary(lambda k, x: f"tl.ceil({x})"),
    "aten.round.default": _unary(_round_half_even),
    "aten.round.decimals": Pointwise(_round_decimals),
    "aten.trunc.default": _unary(lambda k, x: _trunc(x)),
    "aten.sign.default": Pointwise(_sign),
    # activations
    "aten.relu.default": Pointwise(lambda k: _max(k, k.x(0), k.lit(0))),
    "aten.relu6.default": Pointwise(lambda k: _min(k, _max(k, k.x(0), k.lit(0)), k.lit(6))),
    "aten.gelu.default": Pointwise(_gelu),
    "aten.silu.default": _unary(lambda k, x: div(k, x, f"1.0 + tl.exp(-{x})")),
    "aten.sigmoid.default": _unary(lambda k, x: div(k, "1.0", f"1.0 + tl.exp(-{x})")),
    "aten.hardswish.default": _unary(lambda k, x: f"{x} * {_hardsigmoid_core(k, x)}"),
    "aten.hardsigmoid.default": _unary(_hardsigmoid_core),
    "aten.elu.default": Pointwise(_elu),
    "aten.leaky_relu.default": Pointwise(lambda k: f"tl.where({k.x(0)} > 0, {k.x(0)}, {k.x(0)} * {k.x(1)})"),
    "aten.softplus.default": Pointwise(_softplus),
    "aten.mish.default": Pointwise(_mish),
    "aten.threshold.default": Pointwise(
        lambda k: f"tl.where({k.x(0)} <= {k.x(1)}, {k.x(2)}, {k.x(0)})", reads=_same_as_result
    ),
    "aten.hardtanh.default": _clamp(1, 2),
    "aten.clamp.default": _clamp(1, 2),
    "aten.clamp.Tensor": _clamp(1, 2),
    "aten.clamp_min.default": _clamp(1, None),
    "aten.clamp_min.Tensor": _clamp(1, None),
    "aten.clamp_max.default": _clamp(None, 1),
    "aten.clamp_max.Tensor": _clamp(None, 1),
    "aten.nan_to_num.default": Pointwise(_nan_to_num),
    # predicates and logic
    "aten.isnan.default": Pointwise(  # (in float32 for 2-byte floats: the interpreter's bfloat16 is an int16)
        lambda k: f"{k.x(0)} != {k.x(0)}", compute=lambda k: opmath(_operand_dtype(k)), predicate=True
    ),
    "aten.isinf.default": Pointwise(
        lambda k: f"tl.abs({k.x(0)}) == {INF}" if k.is_float else f"{k.x(0)} != {k.x(0)}",
        compute=_operand_dtype,
        predicate=True,
    ),
    **{
        f"aten.{name}.{overload}": _compare(op)
        for name, op in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="))
        for overload in ("Tensor", "Scalar")
    },
    "aten.logical_not.default": Pointwise(lambda k: f"~{k.x(0)}", compute=lambda k: BOOL),
    "aten.logical_and.default": _logical("&"),
    "aten.logical_or.default": _logical("|"),
    "aten.logical_xor.default": _logical("^"),
    "aten.bitwise_not.default": Pointwise(lambda k: f"~{k.x(0)}", compute=_same_as_result),
    **{
        f"aten.{name}.{overload}": _bitwise(op)
        for names, op in (
            (("bitwise_and", "__and__"), "&"),
            (("bitwise_or", "__or__"), "|"),
            (("bitwise_xor", "__xor__"), "^"),
        )
        for name in names
        for overload in ("Tensor", "Scalar")
    },
    # selection
    "aten.where.self": _WHERE,
    "aten.where.ScalarSelf": _WHERE,
    "aten.where.ScalarOther": _WHERE,
    "aten.where.Scalar": _WHERE,
    "aten.masked_fill.Scalar": _MASKED_FILL,
    "aten.masked_fill.Tensor": _MASKED_FILL,
    # copies and conversions
    "aten.clone.default": _copy(0),
    "aten.lift_fresh_copy.default": _copy(0),
    "aten._to_copy.default": _copy(0, device=3),
    "aten.to.dtype": _copy(0),
    "aten.to.dtype_layout": _copy(0, device=3),
    "aten.copy.default": _copy(1),
    "aten.view.dtype": Pointwise(_bitcast, compute=_same_as_result),
    "aten.dropout.default": _copy(0, check=_train_false),
    # fills
    "aten.fill.Scalar": _fill(lambda k: k.x(1)),
    "aten.fill.Tensor": _fill(lambda k: k.x(1)),
    "aten.full_like.default": _fill(lambda k: k.x(1), device=4),
    "aten.zeros_like.default": _fill(lambda k: k.lit(0), device=3),
    "aten.ones_like.default": _fill(lambda k: k.lit(1), device=3),
    "aten.full.default": _fill(lambda k: k.x(1), device=4),
    "aten.zeros.default": _fill(lambda k: k.lit(0), device=3),
    "aten.ones.default": _fill(lambda k: k.lit(1), device=3),
    "aten.new_full.default": _fill(lambda k: k.x(2), device=5),
    "aten.new_zeros.default": _fill(lambda k: k.lit(0), device=4),
    "aten.new_ones.default": _fill(lambda k: k.lit(1), device=4),
    "aten.scalar_tensor.default": _fill(lambda k: k.x(0), device=3),
    "aten.arange.default": _arange(None, None, device=3),
    "aten.arange.start": _arange(0, None, device=4),
    "aten.arange.start_step": _arange(0, 2, device=5),
}


# ------------------------------------------------------------------------------------ reading constants


NO_VALUE = object()  # constant_value of an operand that is not known at compile time


def constant_value(value: ir.Value) -> Any:
    """The Python value of a scalar operand made by `torch.constant.*` / `torch.prim.ListConstruct`
    (a device is its string), or `NO_VALUE` when it is not known at compile time."""
    if isinstance(value, ir.BlockArgument):
        return NO_VALUE
    op = value.owner
    name = op.operation.name
    if name == "torch.constant.none":
        return None
    if name in ("torch.constant.int", "torch.constant.float", "torch.constant.bool", "torch.constant.number"):
        return op.attributes["value"].value
    if name in ("torch.constant.str", "torch.constant.device"):
        return ir.StringAttr(op.attributes["value"]).value
    if name == "torch.prim.ListConstruct":
        items = [constant_value(v) for v in op.operands]
        return NO_VALUE if any(i is NO_VALUE for i in items) else items
    return NO_VALUE


def unsupported(name: str, args: list[Any], out: DType, device: str | None) -> str | None:
    """Why a kernel cannot compute op `name` with these constant arguments (`NO_VALUE` where an operand
    is a tensor) and result dtype `out`, or None. `device` is the model's device type ("cuda", "cpu"),
    None if unknown."""
    entry = POINTWISE[name]
    if not entry.integer and not out.is_float:
        return f"its {out.name} result is left to ATen"
    if entry.device is not None and device is not None:
        wanted = args[entry.device] if entry.device < len(args) else None
        if isinstance(wanted, str) and wanted.split(":")[0] != device:
            return f"it makes a tensor on {wanted}, not on the model's device ({device})"
    return entry.check(args) if entry.check else None
