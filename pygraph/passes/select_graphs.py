"""select-graphs: replay each segment as a CUDA graph only where that is cheaper than launching its nodes.

A graph costs one launch (plus the per-call table update and patched parameters) on the host and a little GPU time per node;
launching the nodes one by one costs a launch per node on the host, which runs ahead of the GPU when the
GPU work is long, and on the GPU a gap between kernels that a graph narrows (0.5 to 1 us less per kernel
on an H200, `bench/results/probe-stream-gap-s29-h200.log`; graphs of generated kernels overlap each one's
start with the previous one's end as well). So per segment (times per call, `pygraph.ir.costs`):
  eager = max(host launches of its nodes and of the table's writer, GPU work of both + per-kernel gap)
  graph = max(graph launch + parameter updates, GPU work + per-node cost)
A GPU-bound segment of many kernels so takes a graph: a decoding step of Llama-2-7B's layers ran eagerly
when the estimate counted no gap on the stream, 1.20 against 1.09 ms as a graph (H200,
`probe-decode-s29-7b*-h200.log`).
GPU work is estimated from bytes moved and, for matrix products, convolutions and attention, from flops.
Where a `profile=True` compilation measured the segment (same fingerprint, same device and versions),
the measurements decide instead. The choice must be clearly better to take a graph: on a near tie the
segment runs eagerly, so pygraph is never slower than eager because of a graph. One-time costs
(instantiation, recordings) are recorded but not weighed: they are paid once.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from ..ir import attrs, costs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.buffers import buffer_layout, patched, reached_through_table
from . import estimates
from .base import Pass, PassError, main_function

MARGIN = 0.98  # a graph must be estimated at least 2% faster than eager to be chosen


@dataclasses.dataclass
class SelectGraphs(Pass):
    """Sets each segment's `mode` ("graph" or "eager") and records the estimates and the reason in `info`."""

    name = "select-graphs"
    summary = "choose per segment between a CUDA graph and eager launches, from estimated or measured costs"
    force: str = ""  # "graph" or "eager": every segment, whatever the costs (benchmark baselines)
    costs: str = "default"  # the cost cache key (device and versions) to read

    def run(self, module: ir.Module) -> None:
        if self.force not in ("", "graph", "eager"):
            raise ValueError(f"select-graphs force must be graph or eager, not {self.force}")
        main = main_function(module)
        model = costs.load(self.costs)
        measured = costs.measured_segments(self.costs)
        segments = [op for op in main.regions[0].blocks[0].operations if isinstance(op, d.SegmentOp)]
        if not segments and any(isinstance(op, d.NODE_OPS) for op in main.regions[0].blocks[0].operations):
            raise PassError.at(main, "the plan has nodes outside segments: run form-segments first")
        with module.context, main.location:
            for segment in segments:
                info = estimate(segment, model)
                known = segment.attributes[
                    "info"
                ]  # keep the fingerprint of a segment selected before (profiling)
                if "fingerprint" in known:
                    info["fingerprint"] = ir.StringAttr(known["fingerprint"]).value
                info.update(measured.get(info["fingerprint"], {}))
                mode, reason = self._choose(info)
                info["reason"] = reason
                segment.attributes["mode"] = attrs.string(mode)
                segment.attributes["info"] = _dict_attr(info)

    def _choose(self, info: dict[str, Any]) -> tuple[str, str]:
        if self.force:
            return self.force, f"forced ({self.force} for every segment)"
        source = "measured" if "measured_graph_us" in info else "estimated"
        eager, graph = info[f"{source}_eager_us"], info[f"{source}_graph_us"]
        if graph < MARGIN * eager:
            return "graph", f"graph {graph:.1f} us < eager {eager:.1f} us ({source})"
        return "eager", f"graph {graph:.1f} us, eager {eager:.1f} us ({source}): a graph must win by 2%"


def estimate(segment: Any, model: costs.Costs) -> dict[str, Any]:
    """The segment's fingerprint and its estimated time per call as eager launches and as a graph."""
    nodes = [op for op in segment.body.blocks[0].operations if isinstance(op, d.NODE_OPS)]
    table = any(reached_through_table(v) for op in nodes for v in op.operands)
    # launched one by one, a segment reading the table first launches the table's writer
    host = sum(estimates.launch_us(op, model) for op in nodes) + table * model.driver_launch_us
    work = sum(estimates.work_us(op, model) for op in nodes)
    kernels = len(nodes) + table  # (the table's writer is a kernel too)
    updates = table + sum(any(patched(v) for v in op.operands) for op in nodes)  # parameter updates per call
    libraries = sum(isinstance(op, d.LibraryOp) for op in nodes)
    return {
        "fingerprint": fingerprint(segment),
        "nodes": len(nodes),
        "estimated_eager_us": round(max(host, work + kernels * model.stream_kernel_us), 2),
        "estimated_graph_us": round(
            max(
                model.graph_launch_us + updates * model.set_params_us,
                work + kernels * model.kernel_node_us,
            ),
            2,
        ),
        "one_time_us": round(len(nodes) * model.instantiate_us_per_node + libraries * model.record_us, 1),
    }


def fingerprint(segment: Any) -> str:
    """Identifies a segment across compilations of the same model: each op's name, attributes and operand
    layouts, in order (not SSA names or source locations, which need not repeat)."""
    parts = []
    for op in segment.body.blocks[0].operations:
        attributes = op.operation.attributes
        described = sorted(f"{n}={attributes[n]}" for n in attributes if "SegmentSizes" not in n)
        operands = [str(buffer_layout(v)) for v in op.operands]
        parts.append(f"{op.operation.name}({', '.join(operands)}) {' '.join(described)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _dict_attr(info: dict[str, Any]) -> ir.DictAttr:
    def attr(value: Any) -> ir.Attribute:
        if isinstance(value, str):
            return attrs.string(value)
        if isinstance(value, int):
            return attrs.i64(value)
        return attrs.f64(value)

    return ir.DictAttr.get({k: attr(v) for k, v in info.items()})
