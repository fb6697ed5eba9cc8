"""`explain()`: what pygraph did with a model, computed from the plan's IR alone.

The same report comes from a compiled model and from `pygraph explain PATH` on a dumped `.plan.mlir`,
so it can only use what the IR states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._mlir import ir
from .dialect import RESULTS, TRANSFORMS
from .layout import Layout
from .plan import Argument, HostStep, Output, Plan, Segment, attr_value


@dataclass
class Explanation:
    coverage: dict[str, float]  # "before" / "after" select-graphs: kernel+library nodes in graphs over all
    io: list[dict[str, Any]]  # per input and output: name, mechanism, bytes per call
    segments: list[dict[str, Any]]  # per segment: nodes by kind, mode, info (candidates, costs, reason)
    outside: list[dict[str, Any]]  # each op left outside graphs: op, reason, location
    transforms: list[dict[str, Any]] = field(default_factory=list)
    # per symbol of the dims `dynamic_shapes` declared: the input dims it sizes and how calls of other sizes
    # run (padded, or compiled per size and why); filled by the compiled model, which the plan does not hold
    dynamic: list[dict[str, Any]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"coverage: {self.coverage['before']:.1%} of kernel and library nodes in graphs before select-graphs, "
            f"{self.coverage['after']:.1%} after"
        ]
        lines.append("inputs and outputs:")
        for item in self.io:
            cost = "" if item["cost_us"] is None else f", {item['cost_us']} us (estimated)"
            if item["measured"]:
                cost += (
                    f"; measured: host {item['measured']['host_us']} us, GPU {item['measured']['gpu_us']} us"
                )
            others = ", ".join(f"{k} {v}" for k, v in item["candidates"].items() if k != item["mechanism"])
            lines.append(
                f"  {item['kind']:<9} {item['name']:<28} {item['mechanism']:<11} {item['bytes'] if item['bytes'] is not None else '?'} B/call{cost}"
                + (f"; other candidates: {others}" if others else "")
            )
        lines.append("segments:")
        for seg in self.segments:
            kinds = ", ".join(f"{n} {k}" for k, n in seg["nodes"].items() if n)
            reason = seg["info"].get("reason", "")
            lines.append(
                f"  #{seg['id']}: {seg['mode']:<5} ({kinds or 'empty'}){' - ' + reason if reason else ''}"
            )
        if self.outside:
            lines.append("outside graphs:")
            for item in self.outside:
                lines.append(f"  {item['op']} at {item['location']}: {item['reason']}")
        if self.dynamic:
            lines.append("dims declared dynamic:")
            for item in self.dynamic:
                how = (
                    "calls of other sizes run the program of the next power of two, padded"
                    if item["refusal"] is None
                    else f"each size compiles its own program: {item['refusal']}"
                )
                lines.append(f"  {', '.join(item['dims'])}: {how}")
        if self.transforms:
            lines.append("graph-safety transformations:")
            for item in self.transforms:
                lines.append(
                    f"  {item.get('pass', '?')}: {item.get('what', '')} at {item.get('location', '?')}"
                )
        return "\n".join(lines)


_FILE_LINE = re.compile(r'"([^"]+)":(\d+):\d+')
_NAME = re.compile(r'^(?:loc\()?"([^"]+)"\(')


def node_name(text: str) -> str | None:
    """The FX node's name in an MLIR location's text (`loc("linear_1"(...))`), None where it names none."""
    name = _NAME.match(text)
    return name.group(1) if name else None


def source_location(text: str) -> str:
    """`model.py:12 (node linear_1)` from an MLIR location's text: the innermost frame outside torch (an
    installed model's own file, such as transformers' `modeling_*.py`, where the op is written) and the FX
    node's name; the location itself where it names no file (hand-written IR)."""
    frames = _FILE_LINE.findall(text)
    if not frames:
        return text[len("loc(") : -1] if text.startswith("loc(") else text
    user = [f for f in frames if "/torch/" not in f[0]]
    file, line = (user or frames)[0]
    name = node_name(text)
    return f"{file}:{line} (node {name})" if name else f"{file}:{line}"


_MOVES = {"stage", "copy", "copy kernel"}  # mechanisms that move the tensor's bytes each call


def _io(kind: str, name: str, item: Argument | Output, layout: Layout) -> dict[str, Any]:
    """`bytes`: moved per call, None when the data decides the size; `measured`: the chosen mechanism's
    host and GPU time per call on the GPU (`profile=True`), else empty."""
    mechanism = item.choice or item.io
    moved = (None if layout.is_dynamic else layout.nbytes()) if mechanism in _MOVES else 0
    return {
        "kind": kind,
        "name": name,
        "mechanism": mechanism,
        "bytes": moved,
        "cost_us": item.costs.get(mechanism),
        "candidates": item.costs,
        "measured": item.measured,
    }


def explain_plan(plan: Plan, module: ir.Module | None = None) -> Explanation:
    counted = ("kernel", "library")
    total = graphable = graphed = 0
    segments, outside = [], []
    numbers: set[int] = set()  # host results of rank 0: numbers read back and computed with
    for step in plan.steps:
        if isinstance(step, HostStep):
            node = step.node
            made = [plan.buffers[r].layout.shape for r in node.results]
            if node.reads and all(b in numbers for b in node.reads) and not any(made):
                numbers.update(node.results)
                continue  # arithmetic on numbers read back, or a check of them: no GPU work
            numbers.update(r for r in node.results if not plan.buffers[r].layout.shape)
            total += 1
            location = source_location(step.node.location)
            outside.append({"op": step.node.op, "reason": step.reason, "location": location})
            continue
        assert isinstance(step, Segment)
        n = sum(node.kind in counted for node in step.nodes)
        total += n
        graphable += n
        graphed += n if step.mode == "graph" else 0
        kinds = {k: sum(node.kind == k for node in step.nodes) for k in ("kernel", "library", "copy", "fill")}
        segments.append({"id": step.id, "mode": step.mode, "nodes": kinds, "info": step.info})
        if step.mode != "graph":
            for node in step.nodes:
                if node.kind in counted:
                    outside.append(
                        {
                            "op": node.op or node.kernel,
                            "reason": step.info.get("reason", "segment runs eagerly"),
                            "location": source_location(node.location),
                        }
                    )
    io = [_io(a.role, a.name, a, plan.buffers[a.buffer].layout) for a in plan.arguments]
    outputs = [
        _io("output", f"output {i}", o, plan.buffers[o.buffer].layout) for i, o in enumerate(plan.outputs)
    ]
    if module is not None and RESULTS in module.operation.attributes:  # results calls rebuild (no bytes)
        for position, how in enumerate(attr_value(module.operation.attributes[RESULTS])):
            computed = re.fullmatch(r"output (\d+)", how)
            item = (
                outputs[int(computed[1])]
                if computed
                else {
                    "kind": "output",
                    "mechanism": how,
                    "bytes": 0,
                    "cost_us": None,
                    "candidates": {},
                    "measured": {},
                }
            )
            io.append({**item, "name": f"result {position}"})
    else:
        io += outputs
    transforms = []
    if module is not None and TRANSFORMS in module.operation.attributes:
        transforms = attr_value(module.operation.attributes[TRANSFORMS])
    coverage = {"before": graphable / total if total else 1.0, "after": graphed / total if total else 1.0}
    return Explanation(coverage, io, segments, outside, transforms)
