"""`profile=True`: measures each segment of a plan as a graph and as eager launches, on this GPU.

Segments are measured by whole calls that differ in one segment only (all graphs, then that segment
eager), so each decision is taken on what a caller would see. The figures are stored under each
segment's fingerprint (`pygraph.ir.costs.record_segments`), where select-graphs finds them. The
all-graphs runtime also measures how each input and output is reached (`CudaRuntime.measure_io`: the
mechanisms do not depend on the segments' modes), before it goes.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from typing import Any

import torch

from ...ir import attrs
from ...ir import dialect as d
from ...ir._mlir import ir
from ...ir.context import parse
from ...ir.plan import read_plan
from ...passes.base import main_function
from .arena import Arenas
from .runtime import CudaRuntime

CALLS = 20


def _time_per_call_us(runtime: CudaRuntime, inputs: Sequence[torch.Tensor]) -> float:
    for _ in range(3):  # warm-up, recordings, graph builds
        runtime(inputs)
    torch.cuda.synchronize(runtime.device)
    start = time.perf_counter()
    for _ in range(CALLS):
        runtime(inputs)
    torch.cuda.synchronize(runtime.device)
    return (time.perf_counter() - start) / CALLS * 1e6


def _variant(text: str, eager: int | None) -> ir.Module:
    """The plan with every segment a graph except segment `eager`."""
    module = parse(text)
    segments = [
        op for op in main_function(module).regions[0].blocks[0].operations if isinstance(op, d.SegmentOp)
    ]
    with module.context:
        for i, segment in enumerate(segments):
            segment.attributes["mode"] = attrs.string("eager" if i == eager else "graph")
    return module


def profile_segments(
    plan_text: str,
    state: Sequence[torch.Tensor],
    inputs: Sequence[torch.Tensor],
    device: torch.device,
    arenas: Arenas,
) -> tuple[dict[str, dict[str, Any]], tuple[list[dict[str, float]], list[dict[str, float]]]]:
    """{fingerprint: {"measured_graph_us", "measured_eager_us"}} for every segment of the plan, and the
    measured cost of each input's and output's mechanism; the measuring runtimes run on `arenas`, the
    compiled model's (one program at a time)."""
    io: list[tuple[list[dict[str, float]], list[dict[str, float]]]] = []

    def measure(eager: int | None) -> float:
        runtime = CudaRuntime(read_plan(_variant(plan_text, eager)), device, arenas)
        runtime.bind_state(state)
        try:
            time_us = _time_per_call_us(runtime, inputs)
            if eager is None:
                io.append(runtime.measure_io(inputs))
            return time_us
        finally:
            # The runtime's runners are closures over it: only the collector frees its pool, and it must,
            # before the next variant allocates its own. A variant's eager library calls
            # made cuBLAS allocate workspaces for their streams (32 MiB each on Hopper), which would stay
            # allocated beside the ones the compiled runtime makes: dropped too (cuBLAS makes them again
            # when next needed, as after any graph capture).
            del runtime
            gc.collect()
            torch._C._cuda_clearCublasWorkspaces()
            torch.cuda.empty_cache()

    plan = read_plan(parse(plan_text))
    all_graphs = measure(None)
    measured = {}
    for i, segment in enumerate(plan.segments):
        if not segment.nodes:
            continue
        measured[segment.info["fingerprint"]] = {
            "measured_graph_us": round(all_graphs, 2),
            "measured_eager_us": round(measure(i), 2),
        }
    return measured, io[0]
