"""The CUDA backend: cubins and their calling convention and the graph builder's edges (on the CPU, with
Triton's bundled ptxas and a fake driver), then the runtime on a hand-written plan (GPU tests)."""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import gpu_smoke
import pytest
import torch
import triton
from gpu_marks import needs_gpu

from pygraph.backend.cuda import driver
from pygraph.backend.cuda.compile import Function, compile_kernel, compile_kernels, ptx_parameters
from pygraph.backend.cuda.driver import cu
from pygraph.backend.cuda.graph import GraphBuilder
from pygraph.backend.emulator import Emulator
from pygraph.backend.stats import plan_stats
from pygraph.ir.context import parse
from pygraph.ir.plan import PlanError, TritonKernel, read_plan
from pygraph.knobs import knobs

ADD = """import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr):
    offs = tl.program_id(0) * 1024 + tl.arange(0, 1024)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
"""


def add_kernel(num_warps: int = 4) -> TritonKernel:
    return TritonKernel("add", ADD, "add", ["*fp32:16", "*fp32:16", "*fp32"], num_warps, 1)


def pointers_at(address: int, count: int) -> list[int]:
    """The values behind a `void**` of `count` 64-bit parameters."""
    slots = (ctypes.c_void_p * count).from_address(address)
    return [ctypes.c_uint64.from_address(slot).value for slot in slots]


# --------------------------------------------------------------------------------- compile (CPU)


def test_pointwise_kernel_takes_its_pointers_then_two_scratch_pointers(tmp_path):
    with knobs.scope(cache_dir=tmp_path):
        cubin = compile_kernel(add_kernel(), 90)
    assert (cubin.name, cubin.num_warps) == ("add", 4)
    assert cubin.num_params == 3 + 2  # checked against the PTX entry when compiled
    assert cubin.image[:4] == b"\x7fELF"


def test_ptx_parameters_counts_the_entry_parameters():
    ptx = """
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .u64 .ptr .global .align 1 k_param_1
)
.reqntid 128
{ ld.param.b64 %rd1, [k_param_0]; }
"""
    assert ptx_parameters(ptx, "k") == 2
    with pytest.raises(RuntimeError, match="no entry other"):
        ptx_parameters(ptx, "other")


def test_cubin_cache_hits_on_disk_and_keys_on_what_changes_the_code(tmp_path, monkeypatch):
    with knobs.scope(cache_dir=tmp_path):
        first = compile_kernel(add_kernel(), 90)
        assert len(list((tmp_path / "cubin").glob("*.cubin"))) == 1

        def no_compile(*args, **kwargs):
            raise AssertionError("compiled again")

        monkeypatch.setattr(triton, "compile", no_compile)
        assert compile_kernel(add_kernel(), 90) == first
        with pytest.raises(AssertionError, match="compiled again"):
            compile_kernel(add_kernel(num_warps=8), 90)
        with pytest.raises(AssertionError, match="compiled again"):
            compile_kernel(add_kernel(), 80)


def test_kernels_compiled_in_threads_are_the_ones_compiled_one_by_one(tmp_path):
    """`compile_kernels` compiles in threads (Triton releases the GIL in LLVM and ptxas); each kernel
    sharing a source with another imports it once, and every cubin is the one a lone compile makes."""
    kernels = {f"add{w}": add_kernel(num_warps=w) for w in (1, 2, 4, 8)}
    kernels["twin"] = TritonKernel("twin", ADD, "add", ["*fp32", "*fp32", "*fp32"], 4, 1)
    with knobs.scope(cache_dir=tmp_path / "threads"):
        threaded = compile_kernels(kernels, 90)
    with knobs.scope(cache_dir=tmp_path / "serial"):
        serial = {name: compile_kernel(k, 90) for name, k in kernels.items()}
    assert list(threaded) == list(kernels)
    assert threaded == serial
    assert [c.num_warps for c in threaded.values()] == [1, 2, 4, 8, 4]


HALF_FMA = """import triton
import triton.language as tl


@triton.jit
def half_fma(x_ptr, y_ptr, out_ptr):
    offs = tl.program_id(0) * 1024 + tl.arange(0, 1024)
    v0 = (tl.load(x_ptr + offs).to(tl.float32) * 0.75).to(tl.bfloat16)
    v1 = (v0.to(tl.float32) + tl.load(y_ptr + offs).to(tl.float32)).to(tl.bfloat16)
    tl.store(out_ptr + offs, v1)
"""


def test_kernels_that_round_to_half_precision_compile_without_contraction(tmp_path, monkeypatch):
    """Contracted, `v0 * 0.75 + y` of rounded bfloat16 values becomes one `fma.rn.bf16` on the GPU, which
    skips eager's rounding of the product (the GPU test in test_half_precision.py shows the results)."""
    fusion, compile_for_real = {}, triton.compile

    def compile_recording(src, target=None, options=None):
        fusion[src.fn.__name__] = options["enable_fp_fusion"]
        return compile_for_real(src, target=target, options=options)

    monkeypatch.setattr(triton, "compile", compile_recording)
    half = TritonKernel("half_fma", HALF_FMA, "half_fma", ["*bf16:16", "*bf16:16", "*bf16:16"], 4, 1)
    with knobs.scope(cache_dir=tmp_path):
        compile_kernel(add_kernel(), 90)
        compile_kernel(half, 90)
    assert fusion == {"add": True, "half_fma": False}


def test_launch_parameters_are_the_pointers_then_null_scratch(tmp_path):
    with knobs.scope(cache_dir=tmp_path):
        cubin = compile_kernel(add_kernel(), 90)
    function = Function(cu.CUmodule(0), cu.CUfunction(0), cubin)
    params = function.params([0x1000, 0x2000, 0x3010])
    assert pointers_at(params.address, 5) == [0x1000, 0x2000, 0x3010, 0, 0]
    params.values[1] = 0x4000  # eager launches rewrite the values in place
    assert pointers_at(params.address, 5)[1] == 0x4000
    assert function.block == 128
    with pytest.raises(ValueError, match="takes 3 pointers, got 2"):
        function.params([1, 2])


# ------------------------------------------------------------------------- builder, fake driver (CPU)


def test_builder_edges_follow_deps_and_pass_through_empty_nodes(tmp_path, monkeypatch):
    calls = []

    def fake_call(name, *args):
        if name == "cuGraphCreate":
            return cu.CUgraph(1)
        _graph, deps, count, *params = args
        assert count == len(deps)
        calls.append((name, [int(d) for d in deps], params))
        return cu.CUgraphNode(100 + len(calls))

    monkeypatch.setattr(driver, "call", fake_call)
    with knobs.scope(cache_dir=tmp_path):
        function = Function(cu.CUmodule(0), cu.CUfunction(7), compile_kernel(add_kernel(), 90))
    builder = GraphBuilder(cu.CUcontext(5))
    params = function.params([16, 32, 48])
    builder.kernel([], function, (3, 2, 1), params)  # 0 -> node 101
    builder.memcpy([0], 4096, 8192, 0)  # 1: zero bytes, stands for its dependencies
    builder.memcpy([1], 4096, 8192, 256)  # 2 -> node 102, waits for 0
    builder.memset([0, 1, 2], 4096, 0xAB, 64)  # 3 -> node 103, waits for 0 and 2, once each
    builder.child([3], cu.CUgraph(9))  # 4 -> node 104
    builder.skip([2, 4])  # 5
    builder.kernel([5], function, (1, 1, 1), params)  # 6 -> node 105, waits for 2 and 4
    assert [(name, deps) for name, deps, _ in calls] == [
        ("cuGraphAddKernelNode", []),
        ("cuGraphAddMemcpyNode", [101]),
        ("cuGraphAddMemsetNode", [101, 102]),
        ("cuGraphAddChildGraphNode", [103]),
        ("cuGraphAddKernelNode", [102, 104]),
    ]
    (k,) = calls[0][2]
    assert int(k.func) == 7
    assert (k.gridDimX, k.gridDimY, k.gridDimZ, k.blockDimX, k.blockDimY, k.blockDimZ) == (3, 2, 1, 128, 1, 1)
    assert (
        k.sharedMemBytes == function.cubin.shared > 0
    )  # Triton stages the unaligned store through shared memory
    assert pointers_at(int(k.kernelParams), 5) == [16, 32, 48, 0, 0]
    copy, context = calls[1][2]
    assert int(context) == 5
    assert (int(copy.srcDevice), int(copy.dstDevice), copy.WidthInBytes, copy.Height, copy.Depth) == (
        8192,
        4096,
        256,
        1,
        1,
    )
    assert copy.srcMemoryType == copy.dstMemoryType == cu.CUmemorytype.CU_MEMORYTYPE_DEVICE
    fill, _ = calls[2][2]
    assert (int(fill.dst), fill.value, fill.elementSize, fill.width, fill.height) == (
        4096,
        0xABABABAB,
        1,
        64,
        1,
    )
    assert int(calls[3][2][0]) == 9


def test_part_one_of_the_smoke_script_needs_no_mlir_bindings():
    """The GPU smoke script's first part runs where torch-mlir is missing: the modules it uses must not import it."""
    code = (
        "import sys; sys.modules['torch_mlir'] = None\n"
        "import pygraph.backend.cuda.graph, pygraph.backend.cuda.compile, pygraph.backend.cuda.driver\n"
        "assert 'pygraph.ir.plan' not in sys.modules\n"
    )
    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}
    )


# -------------------------------------------------------------------------------- the smoke plan


def test_smoke_plan_computes_its_reference_on_the_emulator(tmp_path):
    """The plan the GPU tests run is right: the CPU emulator executes it and matches eager torch."""
    with knobs.scope(cache_dir=tmp_path):
        plan = read_plan(parse(gpu_smoke.plan_text()))
        emulator = Emulator(plan)
        params = gpu_smoke.plan_parameters(1, "cpu")
        for seed in (1, 2):
            check_call(emulator, gpu_smoke.plan_inputs(seed, "cpu") + params)


def check_call(executor, inputs):
    """Runs the smoke plan on `inputs` (x, y, w, b) and compares outputs and the updated y with eager torch."""
    want = gpu_smoke.reference(*inputs)
    executor.bind_state(inputs[2:])
    got = executor(inputs[:2])
    for g, w in zip([*got, inputs[1]], want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5 * w.abs().max())
    return got


# --------------------------------------------------------------------------------------- GPU tests


@pytest.fixture
def runtime():
    from pygraph.backend.cuda.runtime import CudaRuntime

    return CudaRuntime(read_plan(parse(gpu_smoke.plan_text())), torch.device("cuda"))


@pytest.mark.gpu
@needs_gpu
def test_runtime_replays_the_plan_on_new_inputs(runtime):
    params = gpu_smoke.plan_parameters(1, "cuda")
    first = check_call(runtime, gpu_smoke.plan_inputs(1, "cuda") + params)  # eager warm-up, then build
    kept = [t.clone() for t in first]
    for seed in (2, 3, 4):
        check_call(runtime, gpu_smoke.plan_inputs(seed, "cuda") + params)  # graph replays
    assert runtime.captures == 2
    for i, (now, then) in enumerate(zip(first, kept, strict=True)):
        if i != 4:  # output 4 (m) is returned directly: the runtime's own buffer, rewritten by each call
            assert torch.equal(now, then)


@pytest.mark.gpu
@needs_gpu
def test_stats_are_read_back_from_the_instantiated_graphs(runtime):
    check_call(runtime, gpu_smoke.plan_inputs(1, "cuda") + gpu_smoke.plan_parameters(1, "cuda"))
    stats = runtime.stats()
    assert stats["nodes"] == {
        "kernel": 4,
        "memcpy": 1,
        "memset": 1,
        "child": 2,
        "library": 2,
        "inlined": 0,
        "host": 1,
    }
    assert (stats["segments"], stats["graphs"], stats["captures"], stats["host_ops"]) == (3, 2, 2, 1)
    written_input, host_result_home = 64 * 16 * 4, 64 * 4
    planned = plan_stats(runtime.plan, 0)["copied_bytes_per_call"]
    assert stats["copied_bytes_per_call"] == planned + written_input + host_result_home


@pytest.mark.gpu
@needs_gpu
def test_a_parameter_at_a_new_address_rebuilds_the_graphs(runtime):
    w, b = gpu_smoke.plan_parameters(1, "cuda")
    check_call(runtime, gpu_smoke.plan_inputs(1, "cuda") + [w, b])
    check_call(runtime, gpu_smoke.plan_inputs(2, "cuda") + [w + 1, b])
    assert runtime.captures == 4
    check_call(runtime, gpu_smoke.plan_inputs(3, "cuda") + [w, b])  # w's first tensor: rebuilt again
    assert runtime.captures == 6


def test_a_vendor_result_at_another_storage_offset_is_copied_into_the_plans_layout():
    """`slice_scatter` of a view returns the view's offset in a clone of its whole storage; where the plan
    says another offset, the result is copied into the plan's layout, so that its first element lies where
    the plan (and the alignment it promised the kernels reading it) says."""
    from types import SimpleNamespace

    from pygraph.backend.cuda.runtime import CudaRuntime
    from pygraph.ir import dtypes
    from pygraph.ir.layout import Layout

    base = torch.randn(2, 1, 3, 17)
    out = torch.slice_scatter(base[1:2], base[1:2, :, 1:2] * 2, 2, 1, 2)
    assert out.storage_offset() == 51
    planned = Layout((1, 1, 3, 17), (51, 51, 17, 1), 0, dtypes.from_name("torch.float32"))
    runtime = SimpleNamespace(plan=SimpleNamespace(buffers={7: SimpleNamespace(layout=planned, used=True)}))
    (placed,) = CudaRuntime._in_plan_layouts(runtime, SimpleNamespace(results=[7]), [out])
    assert placed.storage_offset() == 0 and torch.equal(placed, out)
    held = Layout((1, 1, 3, 17), (51, 51, 17, 1), 51, dtypes.from_name("torch.float32"))
    runtime.plan.buffers[7].layout = held  # (the plan agreeing with ATen: no copy)
    assert CudaRuntime._in_plan_layouts(runtime, SimpleNamespace(results=[7]), [out])[0] is out


@pytest.mark.gpu
@needs_gpu
def test_a_misaligned_pointer_breaks_a_promise_and_says_where(runtime):
    w, b = gpu_smoke.plan_parameters(1, "cuda")
    b = torch.cat([torch.zeros(1, device="cuda"), b])[1:]  # 4 bytes past an aligned start
    with pytest.raises(PlanError, match=r"argument 1 of kernel @bias_relu is promised 16-byte aligned"):
        check_call(runtime, gpu_smoke.plan_inputs(1, "cuda") + [w, b])
