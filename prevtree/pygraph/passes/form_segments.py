"""form-segments: group graph nodes into `pygraph.segment`s, each to become one CUDA graph.

A segment is a maximal run of node ops (kernel, library, copy, fill) with the views between them;
host ops end a segment. Arena allocations, outputs and constants move to the top of the function (they
depend on nothing), so a segment only yields the library results and views that later steps use.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import dialect as d
from ..ir._mlir import func, ir
from .base import Pass, PassError, main_function

_MEMBERS = (*d.NODE_OPS, d.ViewOp)
_HOISTED = (d.AllocOp, d.ConstantOp, d.OutputOp)  # buffers that depend on nothing
_OUTSIDE = (*_HOISTED, d.HostOp, func.ReturnOp)


@dataclasses.dataclass
class FormSegments(Pass):
    """Wraps runs of nodes into segments in `mode` ("graph" or "eager")."""

    name = "form-segments"
    summary = "group runs of graph nodes between host ops into pygraph.segment regions"
    mode: str = "graph"

    def run(self, module: ir.Module) -> None:
        if self.mode not in ("graph", "eager"):
            raise ValueError(f"form-segments mode must be graph or eager, not {self.mode}")
        main = main_function(module)
        block = main.regions[0].blocks[0]
        with module.context:
            ops = list(block.operations)
            if any(isinstance(op, d.SegmentOp) for op in ops):
                return  # already formed
            if not all(isinstance(op, (*_MEMBERS, *_OUTSIDE)) for op in ops):
                stray = next(op for op in ops if not isinstance(op, (*_MEMBERS, *_OUTSIDE)))
                raise PassError.at(
                    stray, f"'{stray.operation.name}' is not a plan-level op: run lower-to-plan first"
                )
            hoisted = [op for op in ops if isinstance(op, _HOISTED)]
            anchor = next((op for op in ops if not isinstance(op, _HOISTED)), None)
            for op in hoisted if anchor is not None else []:
                op.operation.move_before(anchor.operation)
            runs: list[list[Any]] = [[]]
            for op in block.operations:
                if isinstance(op, _MEMBERS):
                    runs[-1].append(op)
                elif runs[-1]:
                    runs.append([])
            for run in runs:
                if any(isinstance(op, d.NODE_OPS) for op in run):
                    self._wrap(run)

    def _wrap(self, run: list[Any]) -> None:
        members = {op.operation for op in run}
        escaping: list[ir.Value] = []
        for op in run:
            for result in op.operation.results:
                if any(_top_level_user(use.owner, members) for use in result.uses):
                    escaping.append(result)
        with ir.InsertionPoint(run[0].operation), run[0].location:
            segment = d.create(
                d.SegmentOp,
                [],
                {"mode": ir.StringAttr.get(self.mode), "info": ir.DictAttr.get({})},
                len(escaping),
                regions=1,
            )
        body = segment.body.blocks.append()
        with ir.InsertionPoint(body), run[-1].location:
            terminator = d.create(d.YieldOp, [escaping])
        for op in run:
            op.operation.move_before(terminator.operation)
        for value, result in zip(escaping, segment.results_, strict=True):
            for use in list(value.uses):
                owner = use.owner
                if owner.operation != terminator.operation and owner.operation.parent != segment.operation:
                    owner.operands[use.operand_number] = result


def _top_level_user(owner: Any, members: set[Any]) -> bool:
    """True when a use lies outside the run being wrapped."""
    return owner.operation not in members
