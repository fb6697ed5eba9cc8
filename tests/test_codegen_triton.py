"""codegen-triton beyond running kernels: they compile for the H100 (sm_90), sources are deterministic,
64-bit indexing kicks in when it must, and the table's type promotion is PyTorch's."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
import triton
from test_pointwise_kernels import CASES, Case, check, compile_case, nz
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from pygraph.backend.cuda.compile import triton_options
from pygraph.backend.triton_source import load_kernel, signature
from pygraph.ir.context import parse
from pygraph.ir.dtypes import from_name
from pygraph.ir.plan import TritonKernel, triton_kernels
from pygraph.passes.pipeline import parse_pipeline, run_pipeline
from pygraph.passes.pointwise import Value, result_type

pytestmark = [
    pytest.mark.usefixtures("kernel_cache"),
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),
]


def kernels(plan) -> list[TritonKernel]:
    return list(triton_kernels(plan).values())


def case_kernels(name: str) -> list[TritonKernel]:
    torch.manual_seed(0)
    case = CASES[name]
    plan, _ = compile_case(case, case.inputs())
    return kernels(plan)


def compile_for_h100(kernel: TritonKernel) -> str:
    """`kernel` compiled for sm_90 with the options the runtime gives Triton; its PTX."""
    types, attrs = signature(kernel)
    source = ASTSource(fn=load_kernel(kernel), signature=types, constexprs={}, attrs=attrs)
    options = {"num_warps": kernel.num_warps, "num_stages": kernel.num_stages, **triton_options(kernel)}
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    assert compiled.asm["cubin"]
    return compiled.asm["ptx"]


# A handful of kernels that between them use every kind of code the generator writes.
@pytest.mark.parametrize(
    "name",
    [
        "epilogue",
        "chain.f16",
        "_to_copy",
        "bitwise",
        "pow.Tensor_Tensor",
        "arange",
        "sliced.inputs",
        "round",
        "view.dtype.float16",
    ],
)
def test_kernels_compile_for_sm90(name: str) -> None:
    for kernel in case_kernels(name):
        compile_for_h100(kernel)


def test_subnormal_numbers_stay_float32_where_functions_take_them() -> None:
    """Triton makes a float32 subnormal a float64 constant where a function takes it as a Python float:
    libdevice's fmod has no (float32, float64) form, and the compile for sm_90 failed."""
    torch.manual_seed(0)
    case = Case(
        lambda x: (torch.fmod(x, 2.0**-130), x.clamp(min=2.0**-130), torch.where(x > 0, x, 2.0**-130)),
        lambda: (nz(7, 5) * 1e-38,),
    )
    for kernel in triton_kernels(check(case)).values():
        compile_for_h100(kernel)


def test_a_float64_kernel_takes_its_constants_in_float64() -> None:
    """Triton makes a Python float in float32's normal range a float32 constant, in a float64 kernel's
    arithmetic too: hardsigmoid's 1/6, a division by 3's reciprocal and GELU's 0.044715 were 1e-8 off on the
    GPU (the interpreter computes with Python's floats), and libdevice's fmod has no (float64, float32)
    form, which failed the compile for sm_90. Each is a float64 block."""
    torch.manual_seed(0)
    case = Case(
        lambda x: (F.hardsigmoid(x), x / 3, F.gelu(x, approximate="tanh"), torch.fmod(x, -1.5)),
        lambda: (nz(7, 5, dtype=torch.float64),),
    )
    kernels = list(triton_kernels(check(case)).values())
    source = "\n".join(kernel.source for kernel in kernels)
    for constant in (1 / 6, 1 / 3, 0.044715, -1.5):
        assert f"{constant!r}, tl.float64)" in source, constant
    for kernel in kernels:
        compile_for_h100(kernel)


WIDE = """
module {
  func.func private @fused_0(%arg0: !torch.vtensor<[3,1073741824],f16>) -> !torch.vtensor<[3,1073741824],f16> attributes {pygraph.fused} {
    %0 = torch.aten.neg %arg0 : !torch.vtensor<[3,1073741824],f16> -> !torch.vtensor<[3,1073741824],f16>
    return %0 : !torch.vtensor<[3,1073741824],f16>
  }
  func.func @main(%arg0: !pygraph.buf {pygraph.layout = #pygraph.layout<[3, 1073741824], [1073741824, 1], 0 : i64, f16>}) -> !pygraph.buf {
    %0 = "pygraph.alloc"() {layout = #pygraph.layout<[3, 1073741824], [1073741824, 1], 0 : i64, f16>, arena_offset = -1 : i64} : () -> !pygraph.buf
    "pygraph.kernel"(%arg0, %0) {kernel = @fused_0, access = ["r", "w"], grid = [1, 1, 1], operandSegmentSizes = array<i32: 2>} : (!pygraph.buf, !pygraph.buf) -> ()
    return %0 : !pygraph.buf
  }
}
"""


def test_wide_index() -> None:
    """3 * 2**30 elements: the linear index and offsets need 64 bits."""
    plan = parse(WIDE)
    run_pipeline(plan, parse_pipeline("codegen-triton"))
    (kernel,) = kernels(plan)
    assert "i = tl.program_id(0).to(tl.int64) * 1024 + tl.arange(0, 1024)" in kernel.source
    compile_for_h100(kernel)


def test_arithmetic_bound_kernels_run_one_element_per_thread() -> None:
    """A long chain of ops takes 256 elements per program and 8 warps; a short one 8 elements per thread."""
    (heavy,) = case_kernels("chain.heavy")
    assert "4 programs of 256" in heavy.source and heavy.num_warps == 8
    (light,) = case_kernels("size.1000")
    assert "1 programs of 1024" in light.source and light.num_warps == 4


def test_sources_are_deterministic() -> None:
    first = [k.source for k in case_kernels("outputs")]
    second = [k.source for k in case_kernels("outputs")]
    assert first == second


SCALARS = [True, 3, 2.5]
DTYPES = [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32]


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES + SCALARS)))
def test_result_type_matches_torch(a: torch.dtype, b: torch.dtype | bool | int | float) -> None:
    tensors = {rank: torch.zeros([2] * rank, dtype=a) for rank in (0, 1)}
    for rank_a, rank_b in itertools.product((0, 1), (0, 1)):
        other = b if not isinstance(b, torch.dtype) else torch.zeros([2] * rank_b, dtype=b)
        ours = result_type(
            [
                Value("a", from_name(str(a)), rank_a),
                other if not isinstance(other, torch.Tensor) else Value("b", from_name(str(b)), rank_b),
            ]
        )
        assert ours.name == str(torch.result_type(tensors[rank_a], other)).removeprefix("torch.")
