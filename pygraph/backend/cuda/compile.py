"""Generated Triton kernels to cubins (cached on disk) and cubins to CUfunctions (one per context).

Nothing here decides how a kernel computes: warps and stages come from the plan, shared memory from
Triton's metadata; whether it may fuse a multiply with an add (contraction, below) follows from what it
rounds, and whether it first waits for its predecessors (programmatic dependent launch, below) from the
GPU's compute capability and `PYGRAPH_PDL`. The calling convention is Triton 3.6's, checked on every compile against the PTX entry:
one pointer per signature entry, then two scratch pointers (global, profile) that are null because
kernels needing scratch memory are refused.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from ...cache_files import write_atomically
from ...knobs import knobs
from . import driver
from .driver import cu

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

    from ...ir.plan import TritonKernel

SCRATCH_POINTERS = 2  # Triton 3.6 appends the global and the profile scratch pointer to every kernel
DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory a launch gets without opting in


@dataclass(frozen=True)
class Cubin:
    key: str  # what it was compiled from (see `cache_key`)
    name: str  # the kernel's symbol in the image
    image: bytes
    num_warps: int
    shared: int  # dynamic shared memory per block, bytes
    num_params: int  # parameters of the entry: the signature's pointers, then the scratch pointers
    waits: bool = (
        False  # it first waits for the kernels it depends on (`programmatic`): graphs may launch it early
    )


class KernelParams:
    """The `void**` a launch takes: one 64-bit slot per parameter, all pointers (`values` may be rewritten)."""

    def __init__(self, pointers: Sequence[int]) -> None:
        self.values = (ctypes.c_uint64 * len(pointers))(*pointers)
        base = ctypes.addressof(self.values)
        self.slots = (ctypes.c_void_p * len(pointers))(*(base + 8 * i for i in range(len(pointers))))

    @property
    def address(self) -> int:
        return ctypes.addressof(self.slots)


@dataclass(frozen=True)
class Function:
    """A cubin loaded into a context; its module stays loaded for the life of the process."""

    module: cu.CUmodule
    handle: cu.CUfunction
    cubin: Cubin

    @property
    def block(self) -> int:
        return 32 * self.cubin.num_warps

    def params(self, pointers: Sequence[int]) -> KernelParams:
        """Parameters for a launch on `pointers` (one per signature entry); the scratch pointers are null."""
        want = self.cubin.num_params - SCRATCH_POINTERS
        if len(pointers) != want:
            raise ValueError(f"kernel {self.cubin.name} takes {want} pointers, got {len(pointers)}")
        return KernelParams([*pointers, *[0] * SCRATCH_POINTERS])

    def launch(self, grid: Sequence[int], params: KernelParams, stream: cu.CUstream) -> None:
        """An eager launch (`cuLaunchKernel`); graphs use the same grid, block, shared memory and params."""
        gx, gy, gz = grid
        driver.call(
            "cuLaunchKernel",
            self.handle,
            gx,
            gy,
            gz,
            self.block,
            1,
            1,
            self.cubin.shared,
            stream,
            params.address,
            0,
        )


# ------------------------------------------------------------------------------------------- compile


# `a * b + c` may become one fused multiply-add, as in eager's own CUDA kernels and Inductor's: libdevice's
# polynomials use it (pointwise_1m's tanh/exp/log1p chain: 52.8 -> 47.3 us on the H200), and it rounds less
# than eager's separate kernels, not worse (errors against float64 unchanged on mlp, MobileNetV3 and BERT:
# bench/results/probe-fp-fusion-h200.log). Not in kernels that round to half precision: eager rounds each
# op's result to float16 or bfloat16, and where a kernel computes on such a rounded value LLVM narrows the
# multiply and the add after it to half-precision ops, then fuses them (`fma.rn.bf16`), skipping the
# rounding between them: one ulp of bfloat16 off eager in a fifth of the elements of
# `b.mul_(0.75).add_(m)` (H100, fuzz seed 42459; bench/results/fp-fusion-half-s37-h100.log).
_ROUNDS_TO_HALF = re.compile(r"\.to\(tl\.(float16|bfloat16)\)")


# libdevice's functions (expm1, tanh, log1p, rsqrt, fmod, ...) flush subnormal arguments and results to zero
# where Triton's `enable_reflect_ftz` is on, its default; eager's CUDA kernels keep them: expm1 of 5 * 2**-149
# was 0 (fuzz seed 48127, where a search over the results then counted other positions), and fmod by a
# subnormal divisor NaN.
KEEP_SUBNORMALS = {"enable_reflect_ftz": False}


def contracts(kernel: TritonKernel) -> bool:
    """Whether `kernel` compiles with floating-point contraction (above)."""
    return _ROUNDS_TO_HALF.search(kernel.source) is None


def triton_options(kernel: TritonKernel) -> dict[str, bool]:
    """The options of Triton's compiler that `kernel` compiles with (above)."""
    return {"enable_fp_fusion": contracts(kernel), **KEEP_SUBNORMALS}


def cache_key(kernel: TritonKernel, arch: int) -> str:
    """Everything the cubin depends on: source, entry, signature, warps, stages, options, target and Triton."""
    parts = [
        triton_options(kernel),
        hashlib.sha256(kernel.source.encode()).hexdigest(),
        kernel.entry,
        list(kernel.signature),
        kernel.num_warps,
        kernel.num_stages,
        arch,
        triton.__version__,
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


# Programmatic dependent launch: in a graph, a kernel node whose edge from the kernel before it is
# programmatic may be launched while that kernel drains, and its `griddepcontrol.wait` then blocks until
# every kernel it depends on has finished and their writes are visible. Where supported (compute capability
# 9.0 on, `PYGRAPH_PDL`), every generated kernel waits so before its first instruction, so it touches
# no memory early (not even the per-call table, which a kernel writes); the graph builder makes its edges
# from kernel nodes programmatic (`graph.GraphBuilder.kernel`). Launched without such an edge (eagerly, or
# after a memcpy or a library call), the wait returns at once. Measured on the H200
# (`bench/probes/probe_pdl.py`, `bench/results/probe-pdl-s26-h200.log`): a Llama decoding step's products
# with a pointwise kernel after each, 35.4 against 30.3 us per layer; loading the weights before the wait
# (as they are never written in a call) measured no better (35.7), so the kernels wait first.
PROGRAMMATIC_ARCH = 90
_WAIT_FIRST = "    tl.extra.cuda.gdc_wait()  # programmatic dependent launch (backend/cuda/compile.py)\n"


def programmatic(arch: int) -> bool:
    """Whether kernels for compute capability `arch` wait for their predecessors first (and graphs may
    launch them early)."""
    return arch >= PROGRAMMATIC_ARCH and knobs.pdl == "auto"


def compile_kernel(kernel: TritonKernel, arch: int) -> Cubin:
    """The cubin of a plan's kernel for compute capability `arch` (90 for an H100), from the disk cache if
    there; waiting first for the kernels it depends on where `programmatic(arch)`."""
    waits = programmatic(arch)
    if waits:
        kernel = _waiting_first(kernel)
    key = cache_key(kernel, arch)
    cached = _read(key)
    if cached is not None:
        return cached
    # Imported here: the plan's source loader needs the MLIR bindings, which the GPU smoke script lacks.
    from ..triton_source import load_kernel, signature

    types, attrs = signature(kernel)
    cubin = compile_function(
        load_kernel(kernel),
        types,
        attrs,
        kernel.num_warps,
        kernel.num_stages,
        arch,
        key,
        f"@{kernel.name}",
        triton_options(kernel),
    )
    cubin = dataclasses.replace(cubin, waits=waits)
    _write(cubin)
    return cubin


COMPILE_THREADS = 8  # (the count measured; Triton's Python stages hold the GIL, so threads scale sublinearly)


def compile_kernels(kernels: Mapping[str, TritonKernel], arch: int) -> dict[str, Cubin]:
    """`compile_kernel` of each of `kernels`, by name, in threads: Triton releases the GIL while LLVM and
    ptxas run, so a cold compile of DenseNet-121's 72 kernels took 6.7 s in 8 threads against 15.8 s one by
    one (H200 machine, 16 cores, `bench/probes/probe_kernel_compile.py`); 8 spawned processes took 9.3 s,
    most of it their start."""
    threads = min(COMPILE_THREADS, len(kernels), os.cpu_count() or 1)
    if threads <= 1:
        return {name: compile_kernel(k, arch) for name, k in kernels.items()}
    with ThreadPoolExecutor(threads, thread_name_prefix="pygraph-compile") as pool:
        cubins = pool.map(compile_kernel, kernels.values(), [arch] * len(kernels))
        return dict(zip(kernels, cubins, strict=True))


def _waiting_first(kernel: TritonKernel) -> TritonKernel:
    """`kernel` with the wait for its predecessors as the first statement of its entry."""
    match = re.search(
        rf"^def {re.escape(kernel.entry)}\(.*?\):[^\n]*\n", kernel.source, re.MULTILINE | re.DOTALL
    )
    if match is None:
        raise ValueError(f"kernel @{kernel.name}: its source defines no function '{kernel.entry}'")
    source = kernel.source[: match.end()] + _WAIT_FIRST + kernel.source[match.end() :]
    return dataclasses.replace(kernel, source=source)


def compile_function(
    fn: JITFunction,
    types: dict[str, str],
    attrs: dict[tuple[int], list[Any]],
    num_warps: int,
    num_stages: int,
    arch: int,
    key: str,
    label: str,
    options: Mapping[str, bool] = KEEP_SUBNORMALS,
) -> Cubin:
    """Compiles a `@triton.jit` function whose arguments are all pointers (`types` as Triton spells them),
    with Triton's compiler `options` (`triton_options`)."""
    compiled = triton.compile(
        ASTSource(fn, types, None, attrs),
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": num_warps, "num_stages": num_stages, **options},
    )
    meta = compiled.metadata
    for field in ("global_scratch_size", "profile_scratch_size"):
        if getattr(meta, field) > 0:
            raise NotImplementedError(
                f"kernel {label} needs {getattr(meta, field)} bytes of {field.removesuffix('_size')} memory"
            )
    if meta.num_ctas != 1 or meta.launch_cooperative_grid or meta.launch_pdl:
        raise NotImplementedError(
            f"kernel {label} needs launch attributes (num_ctas {meta.num_ctas}, "
            f"cooperative {meta.launch_cooperative_grid}, pdl {meta.launch_pdl})"
        )
    num_params = ptx_parameters(compiled.asm["ptx"], meta.name)
    if num_params != len(types) + SCRATCH_POINTERS:
        raise RuntimeError(
            f"kernel {label}: its entry takes {num_params} parameters, expected {len(types)} pointers "
            f"and {SCRATCH_POINTERS} scratch pointers (Triton {triton.__version__}'s convention changed?)"
        )
    return Cubin(key, meta.name, compiled.asm["cubin"], meta.num_warps, meta.shared, num_params)


def ptx_parameters(ptx: str, name: str) -> int:
    """The number of parameters of entry `name` in a PTX module."""
    match = re.search(rf"\.entry\s+{re.escape(name)}\s*\((.*?)\)", ptx, re.DOTALL)
    if match is None:
        raise RuntimeError(f"the PTX has no entry {name}")
    return len(re.findall(r"\.param\b", match.group(1)))


def _paths(key: str) -> tuple[Any, Any]:
    directory = knobs.cache_dir / "cubin"
    return directory / f"{key}.cubin", directory / f"{key}.json"


def _read(key: str) -> Cubin | None:
    image, meta = _paths(key)
    if not (image.exists() and meta.exists()):
        return None
    m = json.loads(meta.read_text())
    return Cubin(
        key,
        m["name"],
        image.read_bytes(),
        m["num_warps"],
        m["shared"],
        m["num_params"],
        m.get("waits", False),
    )


def _write(cubin: Cubin) -> None:
    """Image first, metadata last, each renamed into place: a reader never sees half an entry."""
    image, meta = _paths(cubin.key)
    fields = {
        "name": cubin.name,
        "num_warps": cubin.num_warps,
        "shared": cubin.shared,
        "num_params": cubin.num_params,
        "waits": cubin.waits,
    }
    write_atomically(image, cubin.image)
    write_atomically(meta, json.dumps(fields).encode())


# ---------------------------------------------------------------------------------------------- load

_functions: dict[tuple[int, str], Function] = {}


def load(cubin: Cubin, context: cu.CUcontext) -> Function:
    """The cubin's function in `context`, which must be current (`driver.current_context`); loaded once."""
    slot = (int(context), cubin.key)
    if slot not in _functions:
        module = driver.call("cuModuleLoadData", cubin.image)
        handle = driver.call("cuModuleGetFunction", module, cubin.name.encode())
        if cubin.shared > DEFAULT_SHARED_LIMIT:
            attribute = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            driver.call("cuFuncSetAttribute", handle, attribute, cubin.shared)
        _functions[slot] = Function(module, handle, cubin)
    return _functions[slot]
