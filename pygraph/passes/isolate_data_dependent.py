"""isolate-data-dependent: run between graphs exactly the ops that depend on the data's values.

A CUDA graph fixes every launch when it is built, so it cannot hold an op whose output shape depends on
the data (`nonzero`, boolean-mask indexing, `unique`), an op that reads a value back to the host
(`.item()`), nor the ops that consume such a shape or number. torch.export marks them: their results
have dynamic dims and no eager layout (unbacked sizes), or are numbers computed from tensors. Nor can it
hold what a GPU model computes on the CPU (`y = cpu_only_op(x.cpu()).to(x.device)`, for an op with no
CUDA kernel): the copy to the host, every op on the host copy, and the copy back. Nor an op marked
`pygraph.outside_graphs` (torch tags it `cudagraph_unsafe`, or recording it failed). This pass
makes exactly those ops `host`, with the reason, so that form-segments splits the model into graph,
host and graph segments around them instead of the model being refused; every op that computes a value
of static shape, the first one back from the host included (a `.sum()` of a masked selection), stays in
the graphs, which read it through the table. Checks of numbers read from the data (`_assert_scalar` of a
`torch._check`, or of the condition of a branch on data that draft export traced one way, `branches.py`)
run on the host as well, right after the value, and fail the call when its data break them, and so do the
checks of a data-dependent size, which may say what the trace assumed of it (`u0 == 5`, where a loop over
a `unique` became five selects; `3 < u0`, `u0 >= 4` or `u0 != 1`, where Python branched on it). Export's
range checks that every size meets (`u0 >= 0`, and `u0 <= 8` of a selection from 8 elements) compute
nothing the program needs: they become `nop`. Each op moved is recorded.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from typing import Any

from ..ir import aten, attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.torch_types import is_tensor, tensor_info
from .base import Pass, PassError, argument_devices, main_function, record_transform
from .pointwise import constant_value

_LIST = "torch.prim.ListConstruct"
_READS_BACK = "it reads a value back to the host"
_SKIPPED = {"func.return", "torch.bind_symbolic_shape"}


@dataclasses.dataclass
class IsolateDataDependent(Pass):
    """Classifies data-dependent ops, and the ops that use their shapes or numbers, as `host`."""

    name = "isolate-data-dependent"
    summary = "run data-dependent ops (and their users until a static shape) between graphs, as host ops"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        ops = list(main.regions[0].blocks[0].operations)
        runtime: set[ir.Value] = set()  # values known only when the program runs
        read_back: set[ir.Value] = set()  # numbers among them read from the data (`.item()`), and their users
        on_host: set[ir.Value] = (
            set()
        )  # tensors a GPU program copied to the CPU, and what is computed from them
        devices = argument_devices(main)
        on_cpu = {
            arg
            for arg, device in zip(main.regions[0].blocks[0].arguments, devices, strict=True)
            if device == "cpu"
        }
        gpu_program = "cuda" in devices
        reasons: dict[int, str] = {}  # index in ops -> why the op runs on the host
        errors: list[tuple[ir.Location, str]] = []
        for i, op in enumerate(ops):
            name = op.operation.name
            used = [v for v in op.operands if v in runtime]
            if aten.aten_name(op) == aten.CHECK:
                if any(v in read_back for v in op.operands):
                    reasons[i] = "it checks what the traced program assumed about the call's data"
                elif any(v in runtime for v in op.operands) and not _holds_at_any_size(op):
                    reasons[i] = "it checks what the traced program assumed about a size the data decide"
                continue
            if name in _SKIPPED or _class(op) == "nop":
                continue
            if name == d.OverwriteOp.OPERATION_NAME:
                if used and _dynamic(used[0]):
                    errors.append(
                        (op.location, "a buffer or input cannot take a shape that depends on the data")
                    )
                continue
            if name == _LIST:
                runtime.update(op.results if used else [])
                read_back.update(op.results if any(v in read_back for v in op.operands) else [])
                continue
            reason = _reason(op, used) or (_host_reason(op, on_host, on_cpu) if gpu_program else None)
            if reason is None:
                continue
            if _host_result(op, on_host):
                on_host.update(r for r in op.results if is_tensor(r.type))
            if _class(op) == "constant":
                errors.append((op.location, f"'{name}' makes a tensor of a number known only at run time"))
                continue
            reasons[i] = reason
            runtime.update(r for r in op.results if not is_tensor(r.type) or _dynamic(r))
            if reason == _READS_BACK or any(v in read_back for v in op.operands):
                read_back.update(r for r in op.results if not is_tensor(r.type))
        if errors:
            raise PassError(errors)
        needed = _needed(ops, reasons)
        with module.context:
            for i, reason in reasons.items():
                op = ops[i]
                if i not in needed:
                    op.attributes[d.CLASS] = attrs.string("nop")
                    continue
                op.attributes[d.CLASS] = attrs.string("host")
                op.attributes[d.REASON] = attrs.string(reason)
                if aten.aten_name(op) == aten.CHECK or any(
                    is_tensor(v.type) for v in [*op.operands, *op.results]
                ):
                    record_transform(  # (not the arithmetic on numbers read back, which the checks show)
                        module, self.name, f"{aten.aten_name(op)} runs between graphs: {reason}", op.location
                    )
            for i, op in enumerate(ops):
                if op.operation.name == _LIST and i not in needed and any(r in runtime for r in op.results):
                    op.attributes[d.CLASS] = attrs.string("nop")
        host = needed & set(reasons)
        if host:
            _schedule(ops, host, checks=any(aten.aten_name(ops[i]) == aten.CHECK for i in host))


def _schedule(ops: list[Any], host: set[int], checks: bool) -> None:
    """Reorders the ops (any topological order computes the same values) so that segments are few and
    large: first everything that does not depend on a host op (it joins the first graph), then host ops as
    soon as they are ready, then what depends on them; program order breaks ties. Where the program checks
    the data, the writes of inputs and state, the ops making the values written and what depends on them
    come after the checks that do not depend on them, and so does what only the writes use: a call whose
    data fail a check has then written nothing, and can run again another way
    (`api.CompiledModel._another_way`), while a value written is still made where write-in-place can make
    it in its target (a KV cache's `index_put_`)."""
    made_by = {r: i for i, op in enumerate(ops) for r in op.results}
    inputs = [{made_by[v] for v in op.operands if v in made_by} for op in ops]
    writes = {i for i, op in enumerate(ops) if op.operation.name == d.OverwriteOp.OPERATION_NAME}
    late = writes | {made_by[ops[i].operands[0]] for i in writes if ops[i].operands[0] in made_by}
    users: list[list[int]] = [[] for _ in ops]
    rank = [0] * len(ops)
    for i, producers in enumerate(inputs):
        for j in producers:
            users[j].append(i)
        if i in host:
            rank[i] = 1
        elif checks and (i in late or any(rank[j] == 3 for j in producers)):
            rank[i] = 3
        elif any(j in host or rank[j] >= 2 for j in producers):
            rank[i] = 2
    rank[-1] = 0  # (the terminator stays where it is: returning a value does not make it late)
    for i in reversed(range(len(ops) - 1)):  # what only the writes use (`x + 1` of `x.add_(1)`) goes late too
        if checks and i not in host and users[i] and all(rank[j] == 3 for j in users[i]):
            rank[i] = 3
    waiting = [len(p) for p in inputs]
    ready = [(rank[i], i) for i in range(len(ops) - 1) if not waiting[i]]
    heapq.heapify(ready)
    terminator = ops[-1].operation
    while ready:
        _, i = heapq.heappop(ready)
        ops[i].operation.move_before(terminator)
        for j in users[i]:
            waiting[j] -= 1
            if not waiting[j] and j != len(ops) - 1:
                heapq.heappush(ready, (rank[j], j))


def _class(op: Any) -> str | None:
    return ir.StringAttr(op.attributes[d.CLASS]).value if d.CLASS in op.attributes else None


def _dynamic(value: ir.Value) -> bool:
    """A tensor whose sizes the data decides: dynamic dims and no eager layout (no example size)."""
    info = tensor_info(value.type)
    if info is None or -1 not in info[0]:
        return False
    owner = value.owner
    return not (isinstance(owner, ir.OpView) and d.LAYOUTS in owner.attributes)


# Ops whose data-dependent size counts elements they select from their first operand: at most its numel.
_SELECTIONS = frozenset(
    f"torch.aten.{name}"
    for name in ("index.Tensor", "nonzero", "masked_select", "_unique2", "unique_dim", "unique_consecutive")
)


def _holds_at_any_size(check: Any) -> bool:
    """Whether `check` (an `_assert_scalar`) is one of export's range checks that every size meets: `u >= 0`,
    and `u <= n` of a selection from n elements or more. Every other check of a size the data decide may say
    what the trace assumed (`u == 5` where a loop over a `unique` made five selects; `3 < u`, `u >= 4` or
    `u != 1` where Python branched on it): it runs on the host."""
    condition = check.operands[0]
    if isinstance(condition, ir.OpResult) and condition.owner.name == "torch.aten.Int.bool":
        condition = condition.owner.operands[0]
    compare = condition.owner.name if isinstance(condition, ir.OpResult) else None
    if compare not in ("torch.aten.ge.int", "torch.aten.le.int"):
        return False
    size, bound = condition.owner.operands
    bound = constant_value(bound)
    if not isinstance(size, ir.OpResult) or size.owner.name != "torch.aten.size.int":
        return False
    if compare == "torch.aten.ge.int":
        return bound == 0
    tensor = size.owner.operands[0]
    if (
        not isinstance(bound, int)
        or not isinstance(tensor, ir.OpResult)
        or tensor.owner.name not in _SELECTIONS
    ):
        return False
    info = tensor_info(tensor.owner.operands[0].type)
    return info is not None and -1 not in info[0] and bound >= math.prod(info[0])


def _reason(op: Any, used: list[ir.Value]) -> str | None:
    """Why `op` must run on the host, or None when a graph can hold it."""
    if used:
        if any("tensor" in str(v.type) for v in used):  # a tensor, or a list of tensors
            return "an operand's shape depends on the data"
        return "it takes a number computed from the data when the program runs"
    reads_back = _class(op) == "host" or aten.aten_name(op) in aten.HOST_OPS
    if reads_back and any(not is_tensor(r.type) for r in op.results):
        return _READS_BACK
    if any(_dynamic(r) for r in op.results):
        return "its output shape depends on the data"
    if d.OUTSIDE_GRAPHS in op.attributes:
        return ir.StringAttr(op.attributes[d.OUTSIDE_GRAPHS]).value
    return None


def _host_reason(op: Any, on_host: set[ir.Value], on_cpu: set[ir.Value]) -> str | None:
    """Why `op` of a GPU program runs on the host: it copies a tensor to the CPU, or computes on such a
    copy (the copy back to the GPU included)."""
    if any(v in on_host for v in op.operands):
        if aten.copy_device(op) == "cuda":
            return "it copies the CPU's result back to the GPU"
        return "it computes on the CPU, as the model asks"
    if aten.copy_device(op) == "cpu" and op.operands[0] not in on_cpu:
        return "it copies a GPU tensor to the CPU, as the model asks"
    return None


def _host_result(op: Any, on_host: set[ir.Value]) -> bool:
    """`op`'s results live on the CPU: a copy there, or an op whose tensor operands of rank > 0 are all
    there (a 0-d CPU tensor may join GPU tensors, whose device the result then has)."""
    device = aten.copy_device(op)
    if device is not None:
        return device == "cpu"
    tensors = [v for v in op.operands if is_tensor(v.type) and tensor_info(v.type)[0]]
    return any(v in on_host for v in op.operands) and all(v in on_host for v in tensors)


def _needed(ops: list[Any], host: dict[int, str]) -> set[int]:
    """Indices of the ops whose results reach what the program computes. Numbers computed at run time
    (host ops without tensor results, lists of them) that only feed export's checks are not needed."""
    made_by = {r: i for i, op in enumerate(ops) for r in op.results}
    users: dict[int, list[int]] = {}
    for j, op in enumerate(ops):
        for v in op.operands:
            if v in made_by:
                users.setdefault(made_by[v], []).append(j)
    needed: set[int] = set()
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        if _class(op) == "nop" and i not in host:
            continue
        numbers = op.operation.name == _LIST or (
            i in host and bool(op.results) and not any(is_tensor(r.type) for r in op.results)
        )
        if not numbers or any(j in needed for j in users.get(i, [])):
            needed.add(i)
    return needed
