"""Generated pointwise kernels, run by Triton's interpreter on CPU tensors and compared with eager PyTorch.

Each case exports a tiny function with torch.export and torch-mlir (so the ops are spelled as the
importer spells them), runs fuse-pointwise, lowers the calls to `pygraph.kernel` launches on buffers
whose layouts are those of the test's (possibly strided) tensors, runs codegen-triton and executes the
kernels. Ops that export never produces (decomposed before import) are written in MLIR by hand.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from gpu_marks import needs_gpu
from torch_mlir import fx
from torch_mlir.extras.fx_importer import FxImporter

import pygraph
from pygraph.backend.cuda.compile import triton_options
from pygraph.backend.triton_source import load_interpreted, load_kernel
from pygraph.ir import aten
from pygraph.ir import dialect as d
from pygraph.ir.attrs import string
from pygraph.ir.context import make_context, parse
from pygraph.ir.dtypes import from_name
from pygraph.ir.layout import Layout
from pygraph.ir.plan import triton_kernels
from pygraph.ir.torch_types import is_tensor
from pygraph.passes import pointwise
from pygraph.passes.base import main_function
from pygraph.passes.gathers import GATHERS
from pygraph.passes.pipeline import parse_pipeline, run_pipeline
from pygraph.passes.pointwise import POINTWISE
from pygraph.passes.reductions import REDUCTIONS

# The interpreter computes masked-off lanes too (on zeros): numpy warns about their divisions and logs.
pytestmark = [
    pytest.mark.usefixtures("kernel_cache"),
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),  # torch.export's own
]

# ------------------------------------------------------------------------------------------- inputs


def nz(*shape: int, dtype: torch.dtype = torch.float32, device: str = "cpu") -> torch.Tensor:
    """Random values with magnitude in [0.1, 2] and either sign: never zero."""
    magnitude = torch.rand(shape) * 1.9 + 0.1
    return torch.where(torch.rand(shape) < 0.5, -magnitude, magnitude).to(device, dtype)


def pos(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return (torch.rand(shape) * 1.9 + 0.1).to(dtype)


def ints(*shape: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    magnitude = torch.randint(1, 10, shape)
    return torch.where(torch.rand(shape) < 0.5, -magnitude, magnitude).to(dtype)


def bools(*shape: int) -> torch.Tensor:
    return torch.rand(shape) < 0.5


def near_point_seven(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    """Values of `dtype` around ±0.7 and its multiples, 0.7 as `dtype` stores it among them."""
    x = (nz(*shape) * 3).to(dtype).flatten()
    x[::4] = torch.tensor(0.7).to(dtype) * torch.arange(-3, 3).repeat(len(x))[: len(x[::4])]
    return x.view(shape)


def read_as_half(x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Ops whose kernels (CUDA's and CPU's) read a number, and a float32 0-d tensor `s`, as `x`'s 2-byte
    dtype (`threshold` too on CUDA, not on the CPU: `test_half_precision.py` checks it on the GPU)."""
    return x % 0.7, torch.fmod(x, -0.7), x % s, x < 0.7, x == s, x >= 0.7


def transposed(make: Callable[..., torch.Tensor], rows: int, cols: int, **kw: Any) -> torch.Tensor:
    return make(cols, rows, **kw).t()


def sliced(make: Callable[..., torch.Tensor], rows: int, cols: int, **kw: Any) -> torch.Tensor:
    """A [rows, cols] window of a bigger tensor: strided, and its first element is not aligned."""
    return make(rows + 2, cols + 3, **kw)[1 : rows + 1, 1 : cols + 1]


def special(*shape: int) -> torch.Tensor:
    """Non-zero values mixed with nan and ±inf."""
    x = nz(*shape).flatten()
    x[::5], x[1::5], x[2::7] = math.nan, math.inf, -math.inf
    return x.view(shape)


def transpose_output(layout: Layout) -> Layout:
    """A column-major output buffer (eager would write contiguously)."""
    rows = layout.shape[0]
    return Layout(layout.shape, (1, rows), 0, layout.dtype)


def channels_last_output(layout: Layout) -> Layout:
    """An NHWC output buffer of a 4-D result (a convolution's input or weight converted)."""
    _, c, h, w = layout.shape
    return Layout(layout.shape, (h * w * c, 1, w * c, c), 0, layout.dtype)


def channels_last(make: Callable[..., torch.Tensor], *shape: int, **kw: Any) -> torch.Tensor:
    """An NCHW-shaped tensor laid out NHWC."""
    return make(*shape, **kw).contiguous(memory_format=torch.channels_last)


def offset_output(layout: Layout) -> Layout:
    """An output buffer starting 3 elements into its storage (not 16-byte aligned)."""
    return Layout.contiguous(layout.shape, layout.dtype, offset=3)


# ---------------------------------------------------------------------------------------- the harness


@dataclass
class Case:
    fn: Callable[..., Any]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    mlir: str | None = None  # a hand-written @main (torch level) instead of exporting `fn`
    output: Callable[[Layout], Layout] | None = None  # the layout of the output buffers
    tolerance: dict[str, float] = field(default_factory=dict)


class _Module(torch.nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> Any:
        return self.fn(*args)


def import_case(case: Case, inputs: tuple[torch.Tensor, ...]) -> Any:
    """The torch-level module of a case, each op classified as classify-ops would."""
    if case.mlir is not None:
        module = parse(case.mlir)
    else:
        program = torch.export.export(_Module(case.fn), inputs, strict=False).run_decompositions({})
        module = fx.export_and_import(
            program, decomposition_table={}, fx_importer=FxImporter(context=make_context())
        )
    with module.context:
        for op in main_function(module).regions[0].blocks[0].operations:
            name = aten.aten_name(op)
            if name in POINTWISE:
                op.attributes[d.CLASS] = string("pointwise")
            elif name in REDUCTIONS:
                op.attributes[d.CLASS] = string("reduction")
            elif name in GATHERS:
                op.attributes[d.CLASS] = string("gather")
            elif name in aten.NOP_OPS:
                op.attributes[d.CLASS] = string("nop")
            elif op.operation.name != "func.return" and any(is_tensor(r.type) for r in op.results):
                raise AssertionError(
                    f"a kernel test case may only use pointwise ops, gathers and reductions, not {op.operation.name}"
                )
    return module


def layout_of(t: torch.Tensor) -> Layout:
    return Layout(tuple(t.shape), tuple(t.stride()), t.storage_offset(), from_name(str(t.dtype)))


def lower(
    module: Any, inputs: tuple[torch.Tensor, ...], output: Callable[[Layout], Layout] | None
) -> tuple[Any, list[int]]:
    """Plan-level IR for a fused @main: arguments with the inputs' layouts, one alloc per call result;
    also which allocs (by position) @main returns."""
    main = main_function(module)
    block = main.regions[0].blocks[0]
    with module.context:
        names: dict[Any, str] = {}
        allocs: list[str] = []
        args = []
        for k, (arg, t) in enumerate(zip(block.arguments, inputs, strict=True)):
            names[arg] = f"%a{k}"
            args.append(f"%a{k}: !pygraph.buf {{pygraph.layout = {layout_of(t).to_attr()}}}")
        lines, returned = [], []
        for op in block.operations:
            if op.operation.name == "func.call":
                outs = []
                for r, attr in zip(op.results, op.attributes[d.LAYOUTS], strict=True):
                    layout = Layout.from_attr(attr)
                    layout = output(layout) if output else layout
                    names[r] = f"%b{len(allocs)}"
                    allocs.append(names[r])
                    outs.append(names[r])
                    lines.append(
                        f'{names[r]} = "pygraph.alloc"() {{layout = {layout.to_attr()}, arena_offset = -1 : i64}} : () -> !pygraph.buf'
                    )
                operands = [names[v] for v in op.operands] + outs
                access = ", ".join(['"r"'] * len(op.operands) + ['"w"'] * len(outs))
                lines.append(
                    f'"pygraph.kernel"({", ".join(operands)}) {{kernel = {op.attributes["callee"]}, access = [{access}], '
                    f"grid = [1, 1, 1], operandSegmentSizes = array<i32: {len(operands)}>}} : "
                    f"({', '.join(['!pygraph.buf'] * len(operands))}) -> ()"
                )
            elif op.operation.name == "func.return":
                returned = [allocs.index(names[v]) for v in op.operands]
        fused = [str(op) for op in module.body.operations if d.FUSED in op.attributes]
    plan = "\n".join(
        [
            *fused,
            f"func.func @main({', '.join(args)}) {{",
            *lines,
            "return",
            "}",
        ]
    )
    return parse(plan), returned


def launcher(plan: Any, inputs: tuple[torch.Tensor, ...]) -> tuple[Callable[[], None], list[torch.Tensor]]:
    """A function that executes the plan's kernel launches in order, where the inputs are (Triton's
    interpreter on the CPU, compiled on a GPU), and the allocated buffers it writes, in order."""
    kernels = triton_kernels(plan)
    main = main_function(plan)
    block = main.regions[0].blocks[0]
    buffers: dict[Any, torch.Tensor] = dict(zip(block.arguments, inputs, strict=True))
    device = inputs[0].device if inputs else torch.device("cpu")
    allocs, launches = [], []
    for op in block.operations:
        if isinstance(op, d.AllocOp):
            layout = Layout.from_attr(op.layout)
            dtype = getattr(torch, layout.dtype.name)
            # Garbage the kernel must overwrite.
            storage = torch.full((layout.storage_elements(),), 77, dtype=dtype, device=device)
            buffers[op.buf] = storage.as_strided(layout.shape, layout.strides, layout.offset)
            allocs.append(buffers[op.buf])
        elif isinstance(op, d.KernelOp):
            kernel = kernels[op.kernel.value]
            grid = tuple(a.value for a in op.grid)
            args = [buffers[a] for a in op.args]
            if device.type == "cuda":
                options = {
                    "num_warps": kernel.num_warps,
                    "num_stages": kernel.num_stages,
                    **triton_options(kernel),
                }
                launches.append(lambda k=kernel, g=grid, a=args, o=options: load_kernel(k)[g](*a, **o))
            else:
                launches.append(lambda k=kernel, g=grid, a=args: load_interpreted(k)[g](*a))

    def run() -> None:
        for launch in launches:
            launch()

    return run, allocs


def run_kernels(plan: Any, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    """Executes the plan's kernel launches in order; returns the allocated buffers in order."""
    run, allocs = launcher(plan, inputs)
    run()
    return allocs


def compile_case(
    case: Case, inputs: tuple[torch.Tensor, ...], codegen: str = "codegen-triton"
) -> tuple[Any, list[int]]:
    """The plan of a case after `codegen` (codegen-triton with options), and the allocs it returns."""
    module = import_case(case, inputs)
    run_pipeline(module, parse_pipeline("fuse-pointwise"))
    plan, returned = lower(module, inputs, case.output)
    run_pipeline(plan, parse_pipeline(codegen))
    return plan, returned


def on_device(x: torch.Tensor, device: str) -> torch.Tensor:
    """`x` on `device` with the same strides and storage offset (the plan's layouts are `x`'s)."""
    storage = torch.empty(x.untyped_storage().nbytes() // x.element_size(), dtype=x.dtype, device=device)
    storage.copy_(x.as_strided((storage.numel(),), (1,), 0))
    return storage.as_strided(x.shape, x.stride(), x.storage_offset())


_TOLERANCE = {torch.float16: {"rtol": 1e-3, "atol": 1e-3}, torch.float64: {"rtol": 1e-12, "atol": 1e-15}}


def check(case: Case, seed: int = 0, codegen: str = "codegen-triton", device: str = "cpu") -> Any:
    """Runs the case's kernels on its inputs (on `device`) and compares with eager there; returns the plan."""
    torch.manual_seed(seed)
    inputs = case.inputs()
    plan, returned = compile_case(case, inputs, codegen)
    inputs = tuple(on_device(x, device) for x in inputs)
    buffers = run_kernels(plan, inputs)
    expected = case.fn(*inputs)
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    assert len(expected) == len(returned)
    for want, index in zip(expected, returned, strict=True):
        got = buffers[index]
        assert got.dtype == want.dtype
        tolerance = _TOLERANCE.get(want.dtype, {"rtol": 1e-4, "atol": 1e-6})
        torch.testing.assert_close(got, want, equal_nan=True, **(tolerance | case.tolerance))
    return plan


def _hand_written(op: str, result: str, *constants: str, arg: str = "!torch.vtensor<[7,5],f32>") -> str:
    """A @main(%arg0) whose only compute op is `op` (generic syntax), for ops export never emits;
    `constants` are its other operands, e.g. "int 5" for `torch.constant.int 5`."""
    kinds = {"int": "!torch.int", "float": "!torch.float", "bool": "!torch.bool", "none": "!torch.none"}
    lines = [f"  %c{n} = torch.constant.{c}" for n, c in enumerate(constants)]
    names = ", ".join(["%arg0"] + [f"%c{n}" for n in range(len(constants))])
    types = ", ".join([arg] + [kinds[c.split()[0]] for c in constants])
    body = "\n".join(lines)
    return f"""
func.func @main(%arg0: {arg}) -> {result} {{
{body}
  %0 = "{op}"({names}) : ({types}) -> {result}
  return %0 : {result}
}}"""


# ------------------------------------------------------------------------------------------- the cases

A, B = (7, 5), (5,)  # a [7, 5] iteration space and a broadcast row


def heavy_chain(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """25 rounds of three ops: a kernel bound by arithmetic, not memory (codegen's `_HEAVY_OPS`)."""
    for _ in range(25):
        a, b = b, torch.tanh(a * b + 0.5)
    return b


CASES: dict[str, Case] = {
    # arithmetic
    "add.Tensor": Case(lambda x, y: torch.add(x, y, alpha=2), lambda: (nz(*A), nz(*B))),
    "add.Scalar": Case(lambda x: x + 2.5, lambda: (nz(*A),)),
    "add.int": Case(lambda x, y: x + y, lambda: (ints(*A), ints(*B))),
    "add.bool": Case(lambda x, y: x + y, lambda: (bools(*A), bools(*A))),
    "sub.Tensor": Case(lambda x, y: torch.sub(x, y, alpha=0.5), lambda: (nz(*A), nz(*A))),
    "sub.Scalar": Case(lambda x: x - 3, lambda: (ints(*A),)),
    "rsub.Tensor": Case(lambda x, y: torch.rsub(x, y, alpha=3), lambda: (nz(*A), nz(*B))),
    "rsub.Scalar": Case(lambda x: 3 - x, lambda: (nz(*A),)),
    "mul.Tensor": Case(lambda x, y: x * y, lambda: (nz(*A), ints(*B))),
    "mul.Scalar": Case(lambda x: x * 2.5, lambda: (ints(*A),)),
    "div.Tensor": Case(lambda x, y: x / y, lambda: (nz(*A), nz(*A))),
    "div.Scalar": Case(lambda x: x / 3, lambda: (ints(*A),)),
    "div.number": Case(lambda x: (x / 512, x / -0.25, x / 3.0, x / 0.0), lambda: (nz(*A),)),
    "div.Tensor_mode": Case(
        lambda x, y, i, j: (
            torch.div(x, y, rounding_mode="floor"),
            torch.div(x, y, rounding_mode="trunc"),
            torch.div(i, j, rounding_mode="floor"),
            torch.div(i, j, rounding_mode="trunc"),
            torch.div(x, y, rounding_mode=None),
        ),
        lambda: (nz(*A) * 10, nz(*A), ints(*A) * 7, ints(*A)),
    ),
    "div.Scalar_mode": Case(
        lambda x: torch.ops.aten.div.Scalar_mode(x, -3, rounding_mode="floor"), lambda: (nz(*A) * 10,)
    ),
    "floor_divide": Case(lambda x, y, i: (x // y, i // 3), lambda: (nz(*A) * 10, nz(*A), ints(*A) * 7)),
    "remainder": Case(lambda x, y, i: (x % y, i % -4), lambda: (nz(*A) * 10, nz(*A), ints(*A) * 7)),
    "fmod": Case(
        lambda x, y, i: (torch.fmod(x, y), torch.fmod(x, 1.5), torch.fmod(i, 4)),
        lambda: (nz(*A) * 10, nz(*A), ints(*A) * 7),
    ),
    "atan2": Case(
        lambda x, y, i: (torch.atan2(x, y), torch.atan2(i, 3 - i), torch.atan2(x, torch.zeros_like(x))),
        lambda: (nz(*A) * 10, nz(*B), ints(*A)),
    ),
    "hypot": Case(lambda x, y: torch.hypot(x, y) + torch.hypot(x * 1e30, y), lambda: (nz(*A), nz(*B))),
    "pow.Tensor_Scalar": Case(
        lambda x, p, i: (
            x**2,
            x**3,
            x**-1,
            x**-2,
            x**0,
            p**0.5,
            p**-0.5,
            p**3.7,
            x**5.0,
            x**-3,
            p**1,
            i**3,
            i**0,
        ),
        lambda: (nz(*A), pos(*A), ints(*A)),
    ),
    "pow.Tensor_Tensor": Case(lambda x, y, p: (x ** y.round(), p**y), lambda: (nz(*A), nz(*A) * 3, pos(*A))),
    "pow.Scalar": Case(lambda x: (2.0**x, (-2) ** x.round(), 0.5**x), lambda: (nz(*A) * 3,)),
    **{
        f"read_as_half.{dtype}": Case(
            read_as_half,
            lambda dtype=dtype: (near_point_seven(*A, dtype=dtype), torch.tensor(0.7)),
            tolerance={"rtol": 0, "atol": 0},
        )
        for dtype in (torch.float16, torch.bfloat16)
    },
    "neg.abs": Case(lambda x, i: (-x, x.abs(), -i, i.abs()), lambda: (nz(*A), ints(*A))),
    # float64 divides with `/`, whose operands (sums, differences) need parentheses
    "div.float64": Case(
        lambda x, y: (torch.sigmoid(x), F.silu(x), x // y, x**-2),
        lambda: (nz(*A, dtype=torch.float64) * 10, nz(*A, dtype=torch.float64)),
    ),
    # Python floats that Triton's functions would round to float32 (0.1) are float64 blocks: exact
    "clamp.float64": Case(
        lambda x: (torch.clamp(x, -0.1, 0.3), F.hardtanh(x, 0.1, 1.1)),
        lambda: (nz(*A, dtype=torch.float64),),
        tolerance={"rtol": 0, "atol": 0},
    ),
    "neg.zero": Case(lambda x: 1 / -(x * 0), lambda: (nz(*A),)),  # -(+0.0) is -0.0: 1 / it is -inf
    "reciprocal": Case(lambda x, i: (x.reciprocal(), i.reciprocal()), lambda: (nz(*A), ints(*A))),
    "maximum.minimum": Case(
        lambda x, y: (torch.maximum(x, y), torch.minimum(x, y), torch.max(x, y), torch.min(x, y)),
        lambda: (special(*A), nz(*A)),
    ),
    "addcmul.addcdiv": Case(
        lambda x, y, z: (
            torch.addcmul(x, y, z, value=0.5),
            torch.addcdiv(x, y, z, value=-2),
            torch.addcmul(x, y, z),
        ),
        lambda: (nz(*A), nz(*A), nz(*B)),
    ),
    "lerp": Case(
        lambda x, y, w: (torch.lerp(x, y, 0.3), torch.lerp(x, y, 0.7), torch.lerp(x, y, w)),
        lambda: (nz(*A), nz(*A), torch.rand(*A)),
    ),
    # math
    "exp.log": Case(lambda x, p: (x.exp(), p.log()), lambda: (nz(*A), pos(*A))),
    "log1p.expm1": Case(
        lambda x, t: (x.log1p(), x.expm1(), t.log1p(), t.expm1()), lambda: (pos(*A), nz(*A) * 1e-4)
    ),
    "sqrt.rsqrt": Case(lambda p, i: (p.sqrt(), p.rsqrt(), i.abs().sqrt()), lambda: (pos(*A), ints(*A))),
    "sin.cos": Case(lambda x: (x.sin(), x.cos()), lambda: (nz(*A) * 3,)),
    "tanh": Case(
        lambda x, t, big: (x.tanh(), t.tanh(), big.tanh()), lambda: (nz(*A), nz(*A) * 1e-4, nz(*A) * 50)
    ),
    "erf": Case(lambda x: x.erf(), lambda: (nz(*A),)),
    "floor.ceil.trunc": Case(
        lambda x, i: (x.floor(), x.ceil(), x.trunc(), i.floor(), i.ceil(), i.trunc()),
        lambda: (nz(*A) * 5, ints(*A)),
    ),
    "round": Case(
        lambda h: (
            h.round(),
            (h * 3.7).round(),
            torch.round(h * 3.7, decimals=2),
            torch.round(h * 300, decimals=-2),
        ),
        lambda: (ints(*A) * 0.5,),
    ),
    "round.negative_zero": Case(lambda x: 1 / x.round(), lambda: (nz(*A).abs() * -0.5,)),  # -0.0: -inf
    "view.dtype.float32": Case(  # (export follows a bit-cast with a detach: hand-written, as the others)
        lambda x: x.view(torch.int32),
        lambda: (nz(7, 5),),
        mlir=_hand_written("torch.aten.view.dtype", "!torch.vtensor<[7,5],si32>", "int 3"),
    ),
    "view.dtype.float16": Case(
        lambda h: h.view(torch.bfloat16),
        lambda: (nz(7, 5, dtype=torch.float16),),
        mlir=_hand_written(
            "torch.aten.view.dtype", "!torch.vtensor<[7,5],bf16>", "int 15", arg="!torch.vtensor<[7,5],f16>"
        ),
    ),
    "sign": Case(
        lambda x, i, b, h: (x.sign(), i.sign(), b.sign(), h.sign() * h),  # (bfloat16: computed in float32)
        lambda: (special(*A), ints(*A), bools(*A), nz(*A, dtype=torch.bfloat16)),
    ),
    # activations
    "relu": Case(lambda x, i: (F.relu(x), F.relu(i), F.relu6(x * 5)), lambda: (special(*A), ints(*A))),
    "gelu": Case(lambda x: (F.gelu(x * 3), F.gelu(x * 3, approximate="tanh")), lambda: (nz(*A),)),
    "silu.sigmoid": Case(lambda x: (F.silu(x * 5), torch.sigmoid(x * 5)), lambda: (nz(*A),)),
    "hardswish.hardsigmoid": Case(lambda x: (F.hardswish(x * 3), F.hardsigmoid(x * 3)), lambda: (nz(*A),)),
    "elu": Case(
        lambda x: (F.elu(x), F.elu(x * 1e-3, alpha=0.5), torch.ops.aten.elu(x, 1.5, 2.0, 0.5)),
        lambda: (nz(*A),),
    ),
    "leaky_relu": Case(lambda x: F.leaky_relu(x, 0.1), lambda: (nz(*A),)),
    "softplus": Case(
        lambda x: (F.softplus(x * 10), F.softplus(x * 10, beta=2, threshold=5)), lambda: (nz(*A),)
    ),
    "mish": Case(lambda x: F.mish(x * 10), lambda: (nz(*A),)),
    "threshold": Case(lambda x: F.threshold(x, 0.1, 20.0), lambda: (nz(*A),)),
    "hardtanh.clamp": Case(
        lambda x, lo, hi: (
            F.hardtanh(x),
            torch.clamp(x, -0.5, 0.5),
            torch.clamp(x, min=0.2),
            torch.clamp(x, max=0.2),
            torch.clamp_min(x, 0.1),
            torch.clamp_max(x, 0.1),
            torch.clamp(x, lo, hi),
            torch.clamp(x, lo),
            torch.clamp_min(x, lo),
            torch.clamp_max(x, hi),
        ),
        lambda: (special(*A), nz(*B), nz(*A)),
    ),
    "clamp.int": Case(lambda i: torch.clamp(i, -3, 4), lambda: (ints(*A),)),
    "nan_to_num": Case(
        lambda x, h: (torch.nan_to_num(x), torch.nan_to_num(x, 1.0, 2.0, -3.0), torch.nan_to_num(h)),
        lambda: (special(*A), special(*A).half()),
    ),
    # predicates and logic
    "isnan.isinf": Case(
        lambda x, i, h: (x.isnan(), x.isinf(), i.isnan(), i.isinf(), h.isnan(), h.isinf()),
        lambda: (special(*A), ints(*A), special(*A).to(torch.bfloat16)),
    ),
    "compare.Tensor": Case(
        lambda x, y, i: (x == y, x != y, x < y, x <= y, x > y, x >= y, i < x, x == x),
        lambda: (ints(*A).float(), ints(*B).float(), ints(*A)),
    ),
    "compare.Scalar": Case(
        lambda x, i, h: (x == 1.0, x != 1, x < 0.5, x <= 2, x > 0.5, x >= -1, i < 2.5, h > 0.1),
        lambda: (ints(*A).float(), ints(*A), nz(*A, dtype=torch.float16)),
    ),
    "logical": Case(
        lambda a, b, x: (
            torch.logical_not(a),
            torch.logical_and(a, b),
            torch.logical_or(a, x),
            torch.logical_xor(x, b),
        ),
        lambda: (bools(*A), bools(*A), ints(*A) * (torch.rand(*A) < 0.5)),
    ),
    "bitwise": Case(
        lambda i, j, a, b: (
            ~i,
            i & j,
            i | j,
            i ^ j,
            i & 3,
            i | 3,
            i ^ 3,
            torch.bitwise_and(i, j),
            torch.bitwise_or(i, j),
            torch.bitwise_xor(i, j),
            torch.bitwise_and(i, 3),
            torch.bitwise_or(i, 3),
            torch.bitwise_xor(i, 3),
            ~a,
            a & b,
            a | b,
            a ^ b,
        ),
        lambda: (ints(*A), ints(*B), bools(*A), bools(*A)),
    ),
    # selection
    "where": Case(
        lambda c, x, y: (
            torch.where(c, x, y),
            torch.where(c, 1.0, x),
            torch.where(c, x, 2.0),
            torch.where(c, 1.0, 2.0),
        ),
        lambda: (bools(*A), nz(*A), nz(*B)),
    ),
    "masked_fill": Case(
        lambda x, m, v: (x.masked_fill(m, 1.5), x.masked_fill(m, v)), lambda: (nz(*A), bools(*B), nz())
    ),
    # copies and conversions
    "clone": Case(lambda x: x.clone(), lambda: (transposed(nz, *A),)),
    "_to_copy": Case(
        lambda x, i, b: (
            x.half(),
            x.long(),
            i.float(),
            b.float(),
            x.bool(),
            i.to(torch.int8),
            x.double(),
        ),
        lambda: (nz(*A) * 100, ints(*A), bools(*A)),
    ),
    # rounded to nearest even, as on the GPU (the emulator corrects the interpreter's truncation)
    "_to_copy.bf16": Case(
        lambda x: x.to(torch.bfloat16), lambda: (nz(*A) * 100,), tolerance={"rtol": 0, "atol": 0}
    ),
    # float64 to 16 bits goes through float32 as in eager: 1 + 2**-11 + 2**-40 is a tie there, so 1.0
    "_to_copy.float64": Case(
        lambda x: x.half(),
        lambda: (
            torch.cat(
                [nz(33, dtype=torch.float64), torch.tensor([1 + 2**-11 + 2**-40], dtype=torch.float64)]
            ),
        ),
        tolerance={"rtol": 0, "atol": 0},
    ),
    "_to_copy.float64.bf16": Case(
        lambda x: x.bfloat16(), lambda: (nz(*A, dtype=torch.float64) * 100,), tolerance={"rtol": 0, "atol": 0}
    ),
    "copy": Case(lambda x, i: torch.ops.aten.copy.default(x, i), lambda: (nz(*A), ints(*B))),
    "to.dtype": Case(
        lambda x: x.to(torch.float16),
        lambda: (nz(7, 5),),
        mlir=_hand_written(
            "torch.aten.to.dtype", "!torch.vtensor<[7,5],f16>", "int 5", "bool false", "bool false", "none"
        ),
    ),
    "to.dtype_layout": Case(
        lambda x: x.to(torch.float16),
        lambda: (nz(7, 5),),
        mlir=_hand_written(
            "torch.aten.to.dtype_layout",
            "!torch.vtensor<[7,5],f16>",
            "int 5",
            "none",
            "none",
            "none",
            "bool false",
            "bool false",
            "none",
        ),
    ),
    "lift_fresh_copy": Case(
        lambda x: x.clone(),
        lambda: (nz(7, 5),),
        mlir=_hand_written("torch.aten.lift_fresh_copy", "!torch.vtensor<[7,5],f32>"),
    ),
    "dropout": Case(
        lambda x: x.clone(),
        lambda: (nz(7, 5),),
        mlir=_hand_written("torch.aten.dropout", "!torch.vtensor<[7,5],f32>", "float 0.1", "bool false"),
    ),
    # fills
    "fill": Case(
        lambda x, v: (x.clone().fill_(2.0), torch.ops.aten.fill.Tensor(x, v)), lambda: (nz(*A), nz())
    ),
    "like": Case(
        lambda x, i: (
            torch.zeros_like(x),
            torch.ones_like(i),
            torch.full_like(x, 3.5),
            torch.full_like(i, 7),
        ),
        lambda: (nz(*A), ints(*A)),
    ),
    "full": Case(
        lambda: (
            torch.full(A, 7.0),
            torch.zeros(A),
            torch.ones(A, dtype=torch.int64),
            torch.full(A, -2, dtype=torch.int8),
        ),
        lambda: (),
    ),
    "new": Case(lambda x: (x.new_full(A, 4), x.new_zeros(A), x.new_ones(B)), lambda: (nz(3),)),
    "scalar_tensor": Case(lambda x: x + torch.scalar_tensor(3.0), lambda: (nz(*A),)),
    "arange": Case(
        lambda: (torch.arange(7), torch.arange(2, 9), torch.arange(1, 20, 3), torch.arange(0.5, 3.0, 0.25)),
        lambda: (),
    ),
    # fusion, layouts and sizes
    "epilogue": Case(lambda a, bias: F.gelu(a + bias), lambda: (nz(64, 128), nz(128))),
    "chain.f16": Case(
        lambda a, b: torch.sigmoid(a * b + 1).tanh() * a,
        lambda: (nz(*A, dtype=torch.float16), nz(*B, dtype=torch.float16)),
    ),
    "chain.bf16": Case(
        lambda a, b: F.silu(a - b) / 3,
        lambda: (nz(*A, dtype=torch.bfloat16), nz(*A, dtype=torch.bfloat16)),
        tolerance={"rtol": 2**-7, "atol": 0},  # one ulp: numpy's exp is not torch's
    ),
    "outputs": Case(lambda a, b: (a + b, (a + b).exp(), (a * b) > 0), lambda: (nz(*A), nz(*B))),
    "transposed.inputs": Case(lambda a, b: a * b + a, lambda: (transposed(nz, 33, 65), nz(33, 65))),
    "sliced.inputs": Case(
        lambda a, b, c: a - b * c, lambda: (sliced(nz, 9, 31), nz(31), sliced(ints, 9, 31))
    ),
    "transposed.output": Case(lambda a, b: a + b, lambda: (nz(33, 65), nz(65)), output=transpose_output),
    # transposing kernels, in tiles (a tail along both tiled dims, a broadcast, a scalar, int64)
    "tiled.to_nhwc": Case(lambda x: x * 1.5, lambda: (nz(2, 37, 9, 11),), output=channels_last_output),
    "tiled.weight": Case(lambda w: w + 0.0, lambda: (nz(72, 40, 3, 3),), output=channels_last_output),
    "tiled.from_nhwc": Case(
        lambda x, b, s: torch.relu(x + b) * s, lambda: (channels_last(nz, 3, 20, 5, 7), nz(20, 1, 1), nz())
    ),
    # (an operand that varies along neither tiled dim is one address per program, loaded unmasked)
    "tiled.per_program_operand": Case(
        lambda x, h: x * h, lambda: (channels_last(nz, 2, 9, 12, 12), nz(12, 1))
    ),
    "tiled.int64": Case(lambda a, b: a * 3 - b, lambda: (transposed(ints, 40, 50), ints(40, 50))),
    "offset.output": Case(lambda a, b: (a + b, a > b), lambda: (nz(3, 7), nz(7)), output=offset_output),
    "broadcast.middle": Case(lambda a, b: a * b, lambda: (nz(4, 6, 9), nz(4, 1, 9))),
    "broadcast.scalar": Case(lambda a, b: a * b, lambda: (nz(4, 6, 9), nz())),
    "chain.heavy": Case(heavy_chain, lambda: (nz(1000), nz(1000))),
    "size.1": Case(lambda a, b: a * b + 1, lambda: (nz(1), nz(1))),
    "size.7": Case(lambda a: a.exp(), lambda: (nz(7),)),
    "size.1000": Case(lambda a, b: a * b, lambda: (nz(1000), nz(1000))),
    "size.1025": Case(lambda a, b: a * b, lambda: (nz(5, 205), nz(5, 1))),
    "size.0-dim": Case(lambda a, b: a * b, lambda: (nz(), nz())),
    "size.0": Case(lambda a, b: a * b, lambda: (nz(0, 4), nz(4))),  # one program, every lane masked
}


def test_a_tile_operand_indexed_by_the_programs_dims_alone_is_one_unmasked_load():
    """Triton's GPU compiler refuses a block mask on a single pointer, where the interpreter takes it:
    an operand that varies along neither tiled dim is loaded once per program and broadcast."""
    plan = check(CASES["tiled.per_program_operand"])
    (kernel,) = triton_kernels(plan).values()
    assert "tl.broadcast_to(tl.load(in1 + d2), [16, 16])" in kernel.source, kernel.source


@pytest.mark.parametrize("name", list(CASES))
def test_kernel(name: str) -> None:
    check(CASES[name])


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", list(CASES))
def test_gpu_kernel(name: str) -> None:
    """The same kernels compiled for the GPU against eager's CUDA kernels: the interpreter computes with
    numpy, which hid GPU-only differences of Triton's builtins (`%` of floats, `test_fmod_...`)."""
    check(CASES[name], device="cuda")


def test_every_table_entry_is_tested() -> None:
    seen = set()
    for case in CASES.values():
        torch.manual_seed(0)
        module = import_case(case, case.inputs())
        for op in module.body.operations:
            for inner in op.regions[0].blocks[0].operations:
                seen.add(aten.aten_name(inner))
    assert set(POINTWISE) - seen == set()


def test_division_by_a_power_of_two_is_a_multiplication() -> None:
    """Exact (the same real number rounded once), so only literal powers of two with a normal reciprocal."""
    reciprocal = pointwise._power_of_two_reciprocal
    assert reciprocal("512.0") == "0.001953125" and reciprocal("-0.25") == "-4.0"
    assert [reciprocal(b) for b in ("3.0", "0.0", 'float("inf")', "x1", "1e-39", "True")] == [None] * 6


class NegativeZeros(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.full_like(x, -0.0),
            torch.where(x > 0, x, -0.0),
            torch.full_like(x, -0.0, dtype=torch.float16),
            torch.where(x > 0, x.double(), -0.0),
        )


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, needs_gpu])])
def test_negative_zero_constants_keep_their_sign(device: str) -> None:
    """Triton makes every constant equal to 0 its type's null value, +0.0; a kernel's -0.0 is built from its
    bits (a padded scatter adds -0.0 so that the negative zeros it meets stay negative, pad-selections)."""
    x = nz(4, 8, device=device)
    compiled = pygraph.export_and_compile(
        NegativeZeros(), (x,), target="emulator" if device == "cpu" else "cuda"
    )
    for got, expected in zip(compiled(x), NegativeZeros()(x), strict=True):
        assert torch.equal(got, expected) and torch.equal(got.signbit(), expected.signbit())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_a_number_stored_in_a_half_dtype_is_what_torch_stores(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    numbers = [*(torch.randn(2000, dtype=torch.float64) * 10.0 ** torch.randint(-8, 8, (2000,))).tolist()]
    numbers += [0.7, -0.0, 65519.99, 65520.0, 1e39, -1e39, 3.39e38, 3.4e38, 1e-8, 257, math.inf, -math.inf]
    ours = [pointwise.as_stored(n, from_name(str(dtype).removeprefix("torch."))) for n in numbers]
    assert torch.equal(torch.tensor(ours, dtype=torch.float64), torch.tensor(numbers).to(dtype).double())
    assert math.isnan(pointwise.as_stored(math.nan, from_name("bfloat16")))


class Remainders(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.fmod(x, y),
            x % y,
            torch.div(x, y, rounding_mode="floor"),
            torch.fmod(x, -0.7),
            x.double() % y,
        )


@pytest.mark.gpu
@needs_gpu
def test_fmod_remainder_and_floor_division_are_exact_on_the_gpu() -> None:
    """C's fmod is exact, and eager's kernels call it: Triton's `%` of floats on the GPU lost the sign of
    zero results and was off by the divisor or more from quotients of about 2**20 on."""
    torch.manual_seed(0)
    n = 1 << 16
    divisors = torch.rand(n, device="cuda") + 0.1
    cases = {
        "small": (torch.randn(n, device="cuda") * 3, torch.randn(n, device="cuda")),
        "large quotients": (torch.randn(n, device="cuda") * 1e6, divisors),
        "huge quotients": (torch.randn(n, device="cuda") * 1e30, divisors),
        "exact multiples": (
            torch.randint(-8, 8, (n,), device="cuda") * 0.5,
            torch.where(torch.rand(n, device="cuda") < 0.5, -0.5, 0.5),
        ),
        "subnormal divisors": (torch.randn(n, device="cuda") * 1e-36, subnormals(n)),
    }
    model = Remainders()
    compiled = pygraph.export_and_compile(model, cases["small"], target="cuda")
    for name, (x, y) in cases.items():
        assert_same_bits(compiled(x, y), model(x, y), name)


class Powers(torch.nn.Module):
    """Powers in float32 (exponents exact in float32, so a float64 run is their exact reference), then in
    float64 and half precision."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        whole = y.round()
        return (
            x**y,
            2.0**whole,
            x**2.625,
            (-x) ** whole,
            10.0 ** (y * 0.25),
            x.double() ** y.double(),
            x.half() ** 1.3,
            x.bfloat16() ** y.bfloat16(),
        )


FLOAT32_POWERS = 5


def test_powers_of_two_are_exact() -> None:
    """`exp(y * log(2))` was an ulp or more off `2 ** y` for a third of the integers y in [-20, 20)."""
    y = torch.arange(-20, 20, dtype=torch.float32)
    x = torch.rand(40) * 4 + 0.1
    got = pygraph.export_and_compile(Powers(), (x, y), target="emulator")(x, y)[1]
    assert torch.equal(got, torch.pow(2.0, y.double()).float())


@pytest.mark.gpu
@needs_gpu
def test_pow_is_correctly_rounded_on_the_gpu() -> None:
    """Float32 powers are computed in float64 and rounded once (eager's powf misrounds about 6% of them by
    an ulp, libdevice's float32 pow 38% by up to 3); float64 ones are eager's pow, half ones within an ulp
    of eager's."""
    torch.manual_seed(0)
    n = 1 << 16
    x, y = torch.rand(n, device="cuda") * 4 + 0.1, torch.randn(n, device="cuda") * 8
    model = Powers()
    got = pygraph.export_and_compile(model, (x, y), target="cuda")(x, y)
    exact = [p.float() for p in model(x.double(), y.double())[:FLOAT32_POWERS]]
    assert_same_bits(got[:FLOAT32_POWERS], tuple(exact), "float32 powers")
    want = model(x, y)
    assert_same_bits(
        got[FLOAT32_POWERS : FLOAT32_POWERS + 1], want[FLOAT32_POWERS : FLOAT32_POWERS + 1], "float64"
    )
    for g, w in zip(got[FLOAT32_POWERS + 1 :], want[FLOAT32_POWERS + 1 :], strict=True):
        torch.testing.assert_close(g.float(), w.float(), rtol=torch.finfo(w.dtype).eps, atol=0)


def subnormals(n: int) -> torch.Tensor:
    """`n` float32 subnormals of both signs, none zero, on the GPU."""
    return (torch.randint(1, 1 << 20, (n,), device="cuda") * 2.0**-149) * torch.randn(n, device="cuda").sign()


def assert_same_bits(got: tuple[torch.Tensor, ...], want: tuple[torch.Tensor, ...], name: str) -> None:
    for g, w in zip(got, want, strict=True):
        same = (g == w) & (g.signbit() == w.signbit()) | (g.isnan() & w.isnan())
        assert same.all(), (name, g[~same][:4], w[~same][:4])


class OnSubnormals(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.expm1(x), torch.tanh(x), torch.log1p(x), torch.rsqrt(x.abs()), torch.round(x), x * 0.5


@pytest.mark.gpu
@needs_gpu
def test_libdevice_functions_keep_subnormals_as_eager_s_kernels_do() -> None:
    """Triton compiles libdevice flushing subnormals to zero unless told otherwise
    (`backend/cuda/compile.KEEP_SUBNORMALS`): expm1 of a subnormal was 0 where eager's is the subnormal."""
    torch.manual_seed(0)
    x = subnormals(1 << 16)
    model = OnSubnormals()
    compiled = pygraph.export_and_compile(model, (x,), target="cuda")
    assert_same_bits(compiled(x), model(x), "subnormals")


class DivisionsByNumbers(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x / 3.0, x / -0.7, x / 2.0**-130, x / 0.0, x.bfloat16() / 3.0, x.double() / 0.7


@pytest.mark.gpu
@needs_gpu
def test_a_division_by_a_number_multiplies_by_its_reciprocal_as_cuda_does() -> None:
    """CUDA's kernel computes `x / b` for a number `b` as `x * (1 / b)`, the reciprocal rounded to the
    compute dtype once: an ulp off the quotient in some elements, and infinite where `1 / b` overflows
    float32 (`b = 2**-130`), which the CPU's eager divides to finite values."""
    torch.manual_seed(0)
    x = torch.randn(1 << 16, device="cuda")
    model = DivisionsByNumbers()
    compiled = pygraph.export_and_compile(model, (x,), target="cuda")
    for got, want in zip(compiled(x), model(x), strict=True):
        same = (got == want) | (got.isnan() & want.isnan())
        assert same.all(), (got[~same][:4], want[~same][:4])
