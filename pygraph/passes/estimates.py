"""Per-call time estimates of plan nodes, from the cost model (`pygraph.ir.costs`), shared by the passes
that weigh them (parameter-indirection, select-graphs). Rough by design: bytes moved at the device's
bandwidth, arithmetic at its sustained rate for matrix products, convolutions and attention."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..ir import costs
from ..ir import dialect as d
from ..ir.buffers import buffer_layout, written_operand


def launch_us(op: Any, model: costs.Costs) -> float:
    if isinstance(op, d.KernelOp):
        return model.driver_launch_us
    if isinstance(op, d.LibraryOp):
        return model.eager_launch_us
    return model.runtime_copy_us


def work_us(op: Any, model: costs.Costs) -> float:
    """GPU time of one node: each buffer it touches read or written once, plus arithmetic for matmul-like ops."""
    values = list(op.operands) + list(op.results)
    nbytes = sum(buffer_layout(v).nbytes() for v in values)
    work = nbytes / (model.bandwidth_gb_s * 1e3)
    if isinstance(op, d.LibraryOp):
        out = op.results_[0] if len(op.results_) else written_operand(op)  # an out form writes an operand
        work += model.compute_us(
            flops(
                op.op.value,
                [buffer_layout(v) for v in op.inputs],
                None if out is None else buffer_layout(out),
            )
        )
    return work


def flops(name: str, inputs: list[Any], out: Any) -> float:
    """Multiply-adds x 2 of the ops whose cost is arithmetic, from their operand layouts; 0 otherwise."""
    if out is None:
        return 0.0
    base = name.split(".")[1]
    if base in ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear") and inputs:
        first = inputs[1] if base in ("addmm", "baddbmm") and len(inputs) > 1 else inputs[0]  # (after a bias)
        k = first.shape[-1] if first.shape else 1
        return 2.0 * out.numel * k
    if base in ("convolution", "conv2d", "conv1d", "conv3d", "_convolution") and len(inputs) > 1:
        weight = inputs[1]
        return 2.0 * out.numel * math.prod(weight.shape[1:])
    if base.startswith("scaled_dot_product") or base.startswith("_scaled_dot_product"):
        q, k = inputs[0], inputs[1] if len(inputs) > 1 else inputs[0]
        return 4.0 * q.numel * (k.shape[-2] if k.rank >= 2 else 1)
    return 0.0


def gpu_slack_us(ops: Iterable[Any], model: costs.Costs) -> float:
    """Host time per call that the GPU would not wait for: how much longer the estimated GPU work of all
    nodes among `ops` is than the host's part of a replay (one graph launch, the table update and the host
    ops), halved because the estimates are rough. 0 where the host sets the pace (small models)."""
    ops = list(ops)
    nodes = [op for op in ops if isinstance(op, d.NODE_OPS)]
    work = sum(work_us(op, model) + model.kernel_node_us for op in nodes)
    hosts = sum(isinstance(op, d.HostOp) for op in ops)
    host = (
        model.graph_launch_us + model.set_params_us + hosts * (model.eager_launch_us + model.graph_launch_us)
    )
    return max(0.0, work - host) / 2
