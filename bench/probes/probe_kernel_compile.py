"""How much of a cold compilation is Triton compiling pygraph's kernels, and whether threads or processes
would compile them faster. `python3 bench/probes/probe_kernel_compile.py WORKLOAD ...` (benchmark names,
on the GPU machine). Per workload: the whole `export_and_compile` with empty pygraph and Triton caches and
the seconds spent in `compile_kernel`; then the same plan's kernels compiled again into empty caches one
by one, by 8 threads and by 8 spawned processes (their start included)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context

import torch

import pygraph
from pygraph.backend.cuda import compile as kernel_compile
from pygraph.backend.cuda import runtime
from pygraph.tools.workloads import WORKLOADS


def fresh_caches() -> None:
    os.environ["PYGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="pygraph-cache-")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")


def compile_one(item: tuple[object, int]) -> int:
    kernel, arch = item
    return len(kernel_compile.compile_kernel(kernel, arch).image)


def main(names: list[str]) -> None:
    major, minor = torch.cuda.get_device_capability()
    arch = 10 * major + minor
    spent = [0.0]
    original = runtime.compile_kernel

    def timed(kernel: object, arch: int) -> object:
        start = time.perf_counter()
        try:
            return original(kernel, arch)
        finally:
            spent[0] += time.perf_counter() - start

    runtime.compile_kernel = timed
    for name in names:
        model, draw = WORKLOADS[name].build(torch.device("cuda"))
        fresh_caches()
        spent[0] = 0.0
        start = time.perf_counter()
        compiled = pygraph.export_and_compile(model, draw())
        total = time.perf_counter() - start
        kernels = [k for k in compiled.plan.kernels.values()]
        items = [(k, arch) for k in kernels]
        line = (
            f"{name}: {len(kernels)} kernels, compile {total:.2f} s, of which compile_kernel {spent[0]:.2f} s"
        )
        fresh_caches()
        start = time.perf_counter()
        for item in items:
            compile_one(item)
        line += f"; again serially {time.perf_counter() - start:.2f} s"
        fresh_caches()
        start = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(compile_one, items))
        line += f", 8 threads {time.perf_counter() - start:.2f} s"
        fresh_caches()
        start = time.perf_counter()
        with ProcessPoolExecutor(8, mp_context=get_context("spawn")) as pool:
            list(pool.map(compile_one, items))
        line += f", 8 processes {time.perf_counter() - start:.2f} s"
        print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
