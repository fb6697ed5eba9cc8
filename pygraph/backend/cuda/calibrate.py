"""Measures the cost model's constants on this GPU, once per device and versions (`pygraph.ir.costs`).

Host times are what a Python caller pays per call (the GPU kept busy enough not to throttle the queue);
GPU times come from CUDA events. Each figure is a median or an average over enough repetitions to be
stable to a few percent; the whole calibration takes a few seconds and is cached on disk.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable

import torch
import triton

from ...ir import costs
from ...ir.plan import Operand, TritonKernel
from ..aten_call import AtenCall
from . import driver
from .compile import compile_kernel, load
from .graph import GraphBuilder, record, side_stream

_TINY = TritonKernel(
    "calibrate_tiny",
    "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef tiny(p):\n    tl.store(p + tl.arange(0, 32), 1.0)\n",
    "tiny",
    ["*fp32:16"],
    1,
    1,
)


def cost_key(device: torch.device) -> str:
    """The device and the versions its figures depend on, as a file-name-safe key."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", torch.cuda.get_device_name(device)).strip("_")
    tf32 = "-tf32" if torch.backends.cuda.matmul.allow_tf32 else ""  # matrix throughput differs about 8x
    versions = f"torch{torch.__version__.split('+')[0]}-triton{triton.__version__}-cuda{torch.version.cuda}"
    return f"{name}-{versions}{tf32}"


def costs_for(device: torch.device) -> str:
    """The cost key for `device`, calibrating first if the cache has no figures for it."""
    key = cost_key(device)
    if not costs.calibrated(key):
        costs.save(key, calibrate(device))
    return key


def _host_us(fn: Callable[[], None], calls: int = 200) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(calls):
        fn()
        if i % 50 == 49:
            torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def _gpu_us(fn: Callable[[], None], repeats: int = 20) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def _stream_kernel_us(launch: Callable[[], None]) -> float:
    """GPU time a kernel adds behind another on a stream (its work included, as `kernel_node_us`'s is):
    chains of 1 and 101 launches, each queued behind a sleeping kernel so that the host is ahead."""

    def chain_us(launches: int) -> float:
        def run() -> None:
            torch.cuda._sleep(2_000_000)  # (about a millisecond: the host queues the chain meanwhile)
            start.record()
            for _ in range(launches):
                launch()
            end.record()

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(9):
            run()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return statistics.median(times)

    return max(0.0, (chain_us(101) - chain_us(1)) / 100)


def calibrate(device: torch.device) -> costs.Costs:
    with torch.cuda.device(device):
        stream = driver.cu.CUstream(torch.cuda.current_stream(device).cuda_stream)
        context = driver.current_context(
            device.index if device.index is not None else torch.cuda.current_device()
        )
        major, minor = torch.cuda.get_device_capability(device)
        tiny = load(compile_kernel(_TINY, 10 * major + minor), context)
        buffer = torch.empty(32, device=device)
        params = tiny.params([buffer.data_ptr()])

        def graph_of(nodes: int) -> tuple[GraphBuilder, object]:
            builder = GraphBuilder(context)
            for i in range(nodes):
                builder.kernel([i - 1] if i else [], tiny, (1, 1, 1), params)
            return builder, builder.instantiate()

        single, single_exec = graph_of(1)
        chain, chain_exec = graph_of(101)
        start = time.perf_counter()
        built = graph_of(100)
        instantiate = (time.perf_counter() - start) * 1e6 / 100
        node = single.nodes[0][0]
        p = driver.cu.CUDA_KERNEL_NODE_PARAMS()
        p.func, p.gridDimX, p.gridDimY, p.gridDimZ = tiny.handle, 1, 1, 1
        p.blockDimX, p.blockDimY, p.blockDimZ, p.sharedMemBytes = tiny.block, 1, 1, tiny.cubin.shared
        p.kernelParams = params.address

        small_a, small_b = torch.randn(64, device=device), torch.empty(64, device=device)
        # a vendor call as the runtime makes it when a segment runs eagerly: through AtenCall
        m64 = torch.randn(64, 64, device=device)
        mm_call = AtenCall("aten.mm.default", [Operand(0), Operand(1)], device)
        big_a, big_b = torch.empty(1 << 26, device=device), torch.empty(1 << 26, device=device)
        m = torch.randn(4096, 4096, device=device)
        mm_us = _gpu_us(lambda: torch.mm(m, m), repeats=10)
        side = side_stream(device)
        x = torch.randn(256, 256, device=device)
        with torch.cuda.stream(side):
            torch.mm(x, x)
        side.synchronize()
        start = time.perf_counter()
        recorded = [record(lambda: [torch.mm(x, x)], side, torch.cuda.graph_pool_handle()) for _ in range(5)]
        record_us = (time.perf_counter() - start) * 1e6 / 5
        figures = costs.Costs(
            graph_launch_us=_host_us(lambda: driver.launch_graph(single_exec, stream)),
            driver_launch_us=_host_us(lambda: tiny.launch((1, 1, 1), params, stream)),
            eager_launch_us=_host_us(lambda: mm_call([m64, m64])),
            kernel_node_us=max(
                0.0,
                (
                    _gpu_us(lambda: driver.launch_graph(chain_exec, stream))
                    - _gpu_us(lambda: driver.launch_graph(single_exec, stream))
                )
                / 100,
            ),
            stream_kernel_us=_stream_kernel_us(lambda: tiny.launch((1, 1, 1), params, stream)),
            set_params_us=_host_us(
                lambda: driver.call("cuGraphExecKernelNodeSetParams", single_exec, node, p), calls=500
            ),
            runtime_copy_us=_host_us(lambda: small_b.copy_(small_a)),
            bandwidth_gb_s=2 * big_a.numel() * 4 / _gpu_us(lambda: big_b.copy_(big_a), repeats=10) / 1e3,
            tflops=2 * 4096**3 / mm_us / 1e6,
            instantiate_us_per_node=instantiate,
            record_us=record_us,
        )
        for builder, graph_exec in ((single, single_exec), (chain, chain_exec), built):
            driver.call("cuGraphExecDestroy", graph_exec)
            driver.call("cuGraphDestroy", builder.graph)
        del recorded
        return figures
