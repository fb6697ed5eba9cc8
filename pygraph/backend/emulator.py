"""The CPU emulator: executes a plan exactly as stated, so the whole compiler can be tested without a GPU.

Every kernel node is an interpreted launch of its generated Triton source (Triton's interpreter on CPU
tensors), every library or host node one ATen call, copies and fills act on bytes, and all buffers
live where the plan puts them (one arena, views at their offsets). The per-call table is a real array
of addresses: kernels whose signature says `**` get a pointer to their buffer's slot and load the
address from it, as on the GPU. It never runs the model or the exported program: editing a
`.plan.mlir` changes what it computes.

Interface (shared with the CUDA runtime): `bind_state(tensors)` with the tensors of all non-input
arguments in plan order (again whenever they change), then `emulator(inputs)` per call.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import torch

from ..ir.layout import Layout
from ..ir.plan import Node, Plan
from .aten_call import AtenCall, check_results
from .random import seed_and_offset
from .stats import plan_stats
from .tensors import empty, layout_of, scalar_bits, torch_dtype, view_of
from .triton_source import load_interpreted

_INTERPRETER = threading.Lock()  # Triton's interpreter keeps global state: one plan runs at a time


class Emulator:
    """Runs a `Plan` on the CPU."""

    native = None  # no native replay: every call executes the plan (the CUDA runtime's is `native.py`)

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.kernels = {name: load_interpreted(k) for name, k in plan.kernels.items()}
        self.calls: dict[int, AtenCall] = {}
        for step in plan.steps:
            for node in step.nodes:
                if node.kind in ("library", "host"):
                    self.calls[id(node)] = AtenCall(node.op, node.aten_args, torch.device("cpu"))
        self.inputs = [a for a in plan.arguments if a.role == "input"]
        written = {plan.buffers[b].root for s in plan.segments for n in s.nodes for b in n.writes}
        self.writes_input = [arg.buffer in written for arg in self.inputs]
        self.rng = [a for a in plan.arguments if a.role == "rng"]  # seed, offset: written each call
        self.state_args = [a for a in plan.arguments if a.role not in ("input", "rng")]
        self.state: list[torch.Tensor] | None = None
        # per kernel node and argument: the slot to pass (the address is loaded from it) or -1
        self.slot_of = {
            name: [entry.startswith("**") for entry in k.signature] for name, k in plan.kernels.items()
        }

    def stats(self) -> dict[str, Any]:
        return plan_stats(self.plan, captures=0)

    def bind_state(self, tensors: Sequence[torch.Tensor]) -> None:
        for arg, given in zip(self.state_args, tensors, strict=True):
            layout = self.plan.buffers[arg.buffer].layout
            if not _matches(given, layout):
                raise ValueError(
                    f"{arg.role} '{arg.name}' is {layout_of(given)}, the plan was built for {layout}"
                )
        self.state = list(tensors)

    def __call__(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        plan = self.plan
        if self.state is None:
            raise RuntimeError("bind_state() must come before the first call")
        # Uninitialised arena bytes read as NaN (0xFF..), so a read before a write shows in results.
        arena = torch.full((plan.arena_bytes,), 0xFF, dtype=torch.uint8)
        table = torch.zeros(max(plan.table_slots, 1), dtype=torch.int64)
        tensors: dict[int, torch.Tensor] = {}
        bound = []
        drawn = seed_and_offset(torch.device("cpu"), plan.random_numbers) if self.rng else ()
        for arg, value in [*zip(self.inputs, inputs, strict=True), *zip(self.rng, drawn, strict=True)]:
            layout = plan.buffers[arg.buffer].layout
            if arg.io == "value":  # the data lives in the table slot
                bits = scalar_bits(value) if isinstance(value, torch.Tensor) else value % (1 << 64)
                table[arg.slot] = bits - (1 << 64) if bits >= 1 << 63 else bits
                bound.append((arg, view_of(table, layout, 8 * arg.slot)))
            else:
                bound.append((arg, _bind(arg, layout, value)))
        for arg, tensor in [*bound, *zip(self.state_args, self.state, strict=True)]:
            tensors[arg.buffer] = tensor
        for buf in plan.buffers:
            if buf.kind == "alloc":
                tensors[buf.id] = view_of(arena, buf.layout, buf.arena_offset)
            elif buf.kind == "constant":
                tensors[buf.id] = (
                    torch.from_numpy(buf.value.copy()).to(torch_dtype(buf.layout)).reshape(buf.layout.shape)
                )
            elif buf.kind == "output":
                tensors[buf.id] = empty(buf.layout, torch.device("cpu"))
            if buf.slot >= 0 and buf.id in tensors:
                table[buf.slot] = tensors[buf.id].data_ptr()

        def tensor(buffer: int) -> torch.Tensor:
            if buffer not in tensors:
                buf = plan.buffers[buffer]
                root = plan.buffers[buf.root]
                base = tensor(root.id)
                start = base.storage_offset() - root.layout.offset + buf.layout.offset
                tensors[buffer] = torch.as_strided(base, buf.layout.shape, buf.layout.strides, start)
            return tensors[buffer]

        with _INTERPRETER:
            for step in plan.steps:
                for node in step.nodes:
                    self._run(node, tensor, tensors, table)
        for (arg, used), given, writes in zip(bound, inputs, self.writes_input, strict=False):
            if used is not given and writes and arg.io != "value":  # a staged input the plan writes
                given.copy_(used)
        return [tensor(o.buffer).clone() if o.io == "copy" else tensor(o.buffer) for o in plan.outputs]

    def _run(self, node: Node, tensor: Any, tensors: dict[int, torch.Tensor], table: torch.Tensor) -> None:
        if node.kind == "kernel":
            through_table = self.slot_of[node.kernel]
            args = [
                table[self.plan.root(b).slot :][:1] if indirect else tensor(b)
                for b, indirect in zip(node.args, through_table, strict=True)
            ]
            self.kernels[node.kernel][node.grid](*args)
        elif node.kind in ("library", "host"):
            reads = [tensor(i) for i in node.reads]
            outs = self.calls[id(node)](reads)
            if len(outs) < len(node.results):
                raise RuntimeError(
                    f"{node.location}: {node.op} returned {len(outs)} tensors, the plan expects {len(node.results)}"
                )
            if node.kind == "library":
                check_results(node, reads, outs)
            for buffer, out in zip(node.results, outs, strict=False):
                if not self.plan.buffers[buffer].used:
                    continue
                tensors[buffer] = _with_layout(out, self.plan.buffers[buffer].layout, node)
                if self.plan.buffers[buffer].slot >= 0:
                    table[self.plan.buffers[buffer].slot] = tensors[buffer].data_ptr()
        elif node.kind == "copy":
            _bytes(tensor(node.writes[0])).copy_(_bytes(tensor(node.reads[0])))
        elif node.kind == "fill":
            _bytes(tensor(node.writes[0])).fill_(node.byte)
        else:
            raise RuntimeError(f"{node.location}: unknown node kind {node.kind}")


def _matches(tensor: torch.Tensor, layout: Layout) -> bool:
    return (
        tuple(tensor.shape) == layout.shape
        and tuple(tensor.stride()) == layout.strides
        and tensor.dtype == torch_dtype(layout)
    )


def _bind(arg: Any, layout: Layout, given: torch.Tensor) -> torch.Tensor:
    """The tensor the plan reads for an input: staged inputs are copied into the plan's layout; inputs
    reached through the table must have the plan's strides (else a contiguity copy in that layout)."""
    if arg.io == "stage" or not _matches(given, layout):
        staged = empty(layout.with_offset(0), given.device)
        staged.copy_(given)
        return staged
    return given


def _with_layout(out: torch.Tensor, layout: Layout, node: Node) -> torch.Tensor:
    """The result in the plan's layout (ATen on the CPU may choose other strides than on the GPU); a
    dynamic layout takes whatever sizes the data gave."""
    if layout.is_dynamic and out.dim() == layout.rank and out.dtype == torch_dtype(layout):
        return out
    if tuple(out.shape) != layout.shape or out.dtype != torch_dtype(layout):
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
