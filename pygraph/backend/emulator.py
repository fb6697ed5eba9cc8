"""The CPU emulator: executes a plan exactly as stated, so the whole compiler can be tested without a GPU.

Every kernel node is an interpreted launch of its generated Triton source (Triton's interpreter on CPU
tensors), every library or host node one ATen call, copies and fills act on bytes, and all buffers
live where the plan puts them (one arena, views at their offsets). It never runs the model or the
exported program: editing a `.plan.mlir` changes what it computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from triton.runtime.interpreter import InterpretedFunction

from ..ir.layout import Layout
from ..ir.plan import Argument, Node, Plan, Segment
from .aten_call import AtenCall
from .stats import plan_stats
from .tensors import empty, layout_of, view_of
from .triton_source import load_kernel


class Emulator:
    """Runs a `Plan` on the CPU; `emulator(args)` takes tensors for all plan arguments in order."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.device = torch.device("cpu")
        self.kernels = {name: InterpretedFunction(load_kernel(k).fn) for name, k in plan.kernels.items()}
        self.calls: dict[int, AtenCall] = {}
        for step in plan.steps:
            for node in step.nodes if isinstance(step, Segment) else [step.node]:
                if node.kind in ("library", "host"):
                    self.calls[id(node)] = AtenCall(node.op, node.aten_args, self.device)

    def stats(self) -> dict[str, Any]:
        return plan_stats(self.plan, captures=0)

    def __call__(self, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        plan = self.plan
        if len(args) != len(plan.arguments):
            raise ValueError(f"the plan takes {len(plan.arguments)} arguments, got {len(args)}")
        # Uninitialised arena bytes read as NaN (0xFF..), so a read before a write shows in results.
        arena = torch.full((plan.arena_bytes,), 0xFF, dtype=torch.uint8)
        bound = [
            _bind(a, plan.buffers[a.buffer].layout, t) for a, t in zip(plan.arguments, args, strict=True)
        ]
        tensors: dict[int, torch.Tensor] = {}
        for arg, tensor in zip(plan.arguments, bound, strict=True):
            tensors[arg.buffer] = tensor
        for buf in plan.buffers:
            if buf.kind == "alloc":
                tensors[buf.id] = view_of(arena, buf.layout, buf.arena_offset)
            elif buf.kind == "constant":
                tensors[buf.id] = (
                    torch.from_numpy(buf.value.copy()).to(_dtype(buf.layout)).reshape(buf.layout.shape)
                )

        def tensor(buffer: int) -> torch.Tensor:
            if buffer not in tensors:
                buf = plan.buffers[buffer]
                root = plan.buffers[buf.root]
                base = tensor(root.id)
                start = base.storage_offset() - root.layout.offset + buf.layout.offset
                tensors[buffer] = torch.as_strided(base, buf.layout.shape, buf.layout.strides, start)
            return tensors[buffer]

        for step in plan.steps:
            nodes = step.nodes if isinstance(step, Segment) else [step.node]
            for node in nodes:
                self._run(node, tensor, tensors)
        for given, used in zip(args, bound, strict=True):
            if used is not given:  # a staged input: the plan may have written it
                given.copy_(used)
        return [
            tensor(out.buffer).clone() if out.io == "copy" else tensor(out.buffer) for out in plan.outputs
        ]

    def _run(self, node: Node, tensor: Any, tensors: dict[int, torch.Tensor]) -> None:
        if node.kind == "kernel":
            self.kernels[node.kernel][node.grid](*[tensor(a) for a in node.args])
        elif node.kind in ("library", "host"):
            outs = self.calls[id(node)]([tensor(i) for i in node.reads])
            if len(outs) < len(node.results):
                raise RuntimeError(
                    f"{node.location}: {node.op} returned {len(outs)} tensors, the plan expects {len(node.results)}"
                )
            for buffer, out in zip(node.results, outs, strict=False):
                tensors[buffer] = _with_layout(out, self.plan.buffers[buffer].layout, node)
        elif node.kind == "copy":
            _bytes(tensor(node.writes[0])).copy_(_bytes(tensor(node.reads[0])))
        elif node.kind == "fill":
            _bytes(tensor(node.writes[0])).fill_(node.byte)
        else:
            raise RuntimeError(f"{node.location}: unknown node kind {node.kind}")


def _dtype(layout: Layout) -> torch.dtype:
    return getattr(torch, layout.dtype.name)


def _bind(arg: Argument, layout: Layout, given: torch.Tensor) -> torch.Tensor:
    """Inputs reached by copy are staged into a tensor with the plan's layout; others are used as given."""
    if arg.io == "stage":
        staged = empty(layout, given.device)
        staged.copy_(given)
        return staged
    if (
        tuple(given.shape) != layout.shape
        or tuple(given.stride()) != layout.strides
        or _dtype(layout) != given.dtype
    ):
        raise ValueError(f"{arg.role} '{arg.name}' is {layout_of(given)}, the plan was built for {layout}")
    return given


def _with_layout(out: torch.Tensor, layout: Layout, node: Node) -> torch.Tensor:
    """The result in the plan's layout (ATen on the CPU may choose other strides than on the GPU)."""
    if tuple(out.shape) != layout.shape or out.dtype != _dtype(layout):
        raise RuntimeError(f"{node.location}: {node.op} gave {layout_of(out)}, the plan says {layout}")
    if tuple(out.stride()) == layout.strides and out.storage_offset() == layout.offset:
        return out
    placed = empty(layout, out.device)
    placed.copy_(out)
    return placed


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The bytes a dense tensor covers, as a 1-D uint8 tensor on the same memory."""
    nbytes = t.numel() * t.element_size()
    out = torch.empty(0, dtype=torch.uint8)
    out.set_(t.untyped_storage(), t.storage_offset() * t.element_size(), (nbytes,), (1,))
    return out
