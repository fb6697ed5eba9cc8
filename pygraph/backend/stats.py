"""The `stats()` figures that follow from the plan alone, shared by every backend so they agree."""

from __future__ import annotations

from typing import Any

from ..ir.plan import HostStep, Plan, Segment, is_graphed, reads_table


def copied_bytes_per_call(plan: Plan) -> int:
    """Bytes moved per call besides the model's own kernels: inputs staged or copied into the graph, outputs
    copied out of it (by the runtime or by a copy kernel into the fresh tensor), memcpy nodes, the per-call
    table (written by the head node of each graph, and by the same kernel launched before each eager step
    reading it).
    Outputs whose size the data decides are not counted."""
    copy_kernels = sum(plan.buffers[a.buffer].layout.nbytes() for a in plan.arguments if a.io == "copy")
    copy_kernels += sum(
        plan.buffers[o.buffer].layout.nbytes()
        for o in plan.outputs
        if o.choice == "copy kernel" and not plan.buffers[o.buffer].layout.is_dynamic
    )
    writes = (
        sum(is_graphed(step) or reads_table(plan, step) for step in plan.steps) if plan.table_slots else 0
    )
    return copy_kernels + 8 * plan.table_slots * writes + memcpy_bytes_per_call(plan)


def memcpy_bytes_per_call(plan: Plan) -> int:
    """The part of `copied_bytes_per_call` a profiler shows as memcpy: the runtime's copies (staged inputs,
    outputs returned as copies) and memcpy nodes; copy kernels and the table's writer are kernels."""
    total = sum(plan.buffers[a.buffer].layout.nbytes() for a in plan.arguments if a.io == "stage")
    total += sum(
        plan.buffers[o.buffer].layout.nbytes()
        for o in plan.outputs
        if o.io == "copy" and not plan.buffers[o.buffer].layout.is_dynamic
    )
    for segment in plan.segments:
        total += sum(plan.buffers[n.writes[0]].layout.nbytes() for n in segment.nodes if n.kind == "copy")
    return total


def plan_stats(plan: Plan, captures: int, nodes: dict[str, int] | None = None) -> dict[str, Any]:
    """`stats()` of a plan; `nodes` (read back from instantiated graphs on a GPU) replaces the plan's count."""
    graphed = [s for s in plan.steps if isinstance(s, Segment) and s.mode == "graph"]
    host = [s for s in plan.steps if isinstance(s, HostStep)]
    all_nodes = [n for s in plan.segments for n in s.nodes]
    if nodes is None:
        in_graphs = [n for s in graphed for n in s.nodes]
        kinds = [n.kind for n in in_graphs]
        nodes = {
            "kernel": kinds.count("kernel"),
            "library": kinds.count("library"),
            "memcpy": kinds.count("copy"),
            "memset": kinds.count("fill"),
            "child": kinds.count("library"),
        }
    return {
        "segments": len(plan.segments),
        "graphs": len(graphed),
        "nodes": {**nodes, "host": len(host)},
        "generated_kernels": len(plan.kernels),
        "library_calls": sum(n.kind == "library" for n in all_nodes),
        "host_ops": len(host),
        "copied_bytes_per_call": copied_bytes_per_call(plan),
        "memcpy_bytes_per_call": memcpy_bytes_per_call(plan),
        "captures": captures,
        "arena_bytes": plan.arena_bytes,  # (on a GPU the compiled model's programs share the largest's)
    }
