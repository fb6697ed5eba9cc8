"""parameter-indirection: how each input and output is reached, so that a replay changes only pointers.

A CUDA graph bakes addresses in. Instead of copying each call's inputs into the graph's own buffers
(what reduce-overhead does), pygraph gives the call a table of 8-byte slots in device memory, rewritten
once per call, and lets the graph find inputs and outputs through it. Each input and output gets the
cheapest of its candidates (estimated per call by `pygraph.ir.costs`, recorded in `pygraph.io_costs`,
the choice in `pygraph.io_choice`). A candidate costs its GPU time plus the host time the GPU would wait
for: where the estimated GPU work of the call outlasts the host's part of it (`estimates.gpu_slack_us`),
host time up to that slack is free, because the host runs ahead while the GPU works (so a large input
feeding a convolution is never copied on a GPU-bound model, while a small model keeps its host path short):

inputs
- `indirect`: only generated kernels use it; they load its address from its slot. Nothing moves.
- `copy`: a generated copy kernel at the head of the graph moves it, read through the table, into a
  static buffer for the consumers that cannot read through the table (vendor calls, host ops).
- `eager`: the vendor calls that read it run outside the graph, on the tensor itself; the graph reaches
  their results through the table (a large input feeding a convolution is never copied).
- `stage`: the runtime copies it into a static buffer before the graph runs (inputs the model writes
  and a vendor call reads; host tensors a GPU program reads; the fallback).
- `value`: a scalar on the host (a 0-d CPU tensor, or a Python number the frontend made one): its
  value is written into its slot, and every consumer, vendor calls included, reads it there.
- `patch`: every graph node that touches it holds its address as a plain parameter, which the runtime
  rewrites each call (`cuGraphExecKernelNodeSetParams` per node: host time, no GPU work). A vendor call's
  recorded kernels are patched where their parameters hold the address; the runtime stages the input
  instead where they hold anything else pointing into it.
outputs
- `indirect`: the kernel that produces it writes a fresh tensor, allocated per call, through the table.
- `copy kernel`: a generated copy kernel moves another producer's result into the fresh tensor.
- `copy`: the runtime returns a copy of the graph's buffer.
- `eager`: the vendor call that produces it runs after the graph; its result, a fresh tensor each call,
  is returned as is (`io = "fresh"`), where copying a large result (logits) would cost more.
- `patch`: as for inputs: the kernel or vendor call that produces it writes a fresh tensor whose address
  the runtime puts into its (and its readers') parameters.
- `static` (option static-outputs): the graph's own buffer, which the next call overwrites.
Parameters and buffers stay "direct": graphs use them where the model keeps them.

The table costs a node at the head of each graph that writes it (GPU time before anything else runs)
and one parameter update per call. Each input and output first takes its cheapest candidate, the table
costing nothing; if any then uses the table, the table's cost is compared with patching every input and
output instead, and the cheaper wins (a small model whose inputs and outputs touch a few nodes patches
them and has no table; one whose attention mask feeds every layer keeps the table).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import attrs, costs
from ..ir import dialect as d
from ..ir._mlir import func, ir
from ..ir.buffers import buffer_layout, buffer_root, users, written_operand
from ..ir.layout import Layout
from . import estimates
from .base import Pass, PassError, plan_function, record_transform
from .copies import emit_copy

# Host time within the slack still delays a call made on an idle GPU: a tenth of it counts, so a tiny
# copy kernel still beats running a vendor call outside the graph.
HOST_WEIGHT_IN_SLACK = 0.1


@dataclasses.dataclass
class ParameterIndirection(Pass):
    """Chooses per input and output how the graph reaches it; adds table slots and the copies chosen."""

    name = "parameter-indirection"
    summary = "reach inputs and outputs through a per-call table of addresses instead of copying them"
    static_outputs: bool = False
    costs: str = "default"  # the cost cache key (device and versions) to read

    def run(self, module: ir.Module) -> None:
        main = plan_function(module)
        if d.TABLE_SLOTS in main.attributes:
            return  # already decided
        if "res_attrs" not in main.attributes:
            raise PassError.at(main, "the function is not at the plan level: run lower-to-plan first")
        with module.context, main.location:
            _Indirection(module, main, costs.load(self.costs), self.static_outputs).run()


class _Indirection:
    def __init__(self, module: ir.Module, main: Any, model: costs.Costs, static_outputs: bool) -> None:
        self.module, self.main, self.costs, self.static_outputs = module, main, model, static_outputs
        self.block = main.regions[0].blocks[0]
        self.slots = 0
        self.slack = estimates.gpu_slack_us(
            self.block.operations, model
        )  # host us per call the GPU does not wait for

    def run(self) -> None:
        arg_attrs = [_dict(a) for a in ir.ArrayAttr(self.main.attributes["arg_attrs"])]
        res_attrs = [_dict(a) for a in ir.ArrayAttr(self.main.attributes["res_attrs"])]
        self._kernels_for_memcpys()
        self._reach_host_results()
        ret = self.block.operations[len(self.block.operations) - 1]
        devices = [ir.StringAttr(a[d.DEVICE]).value if d.DEVICE in a else "cpu" for a in arg_attrs]
        self.gpu_program = "cuda" in devices
        roles = [ir.StringAttr(a[d.ROLE]).value for a in arg_attrs]
        names = [ir.StringAttr(a[d.NAME]).value if d.NAME in a else "" for a in arg_attrs]
        inputs = [i for i, role in enumerate(roles) if role == "input"]
        candidates = [self._output_candidates(ret, i) for i in range(len(res_attrs))]
        candidates += [self._input_candidates(self.block.arguments[i], devices[i]) for i in inputs]
        choices = self._choose_all(candidates, other_slots="rng" in roles)
        for i in range(len(res_attrs)):
            res_attrs[i].update(self._output(ret, i, *choices[i]))
        for i, choice in zip(inputs, choices[len(res_attrs) :], strict=True):
            arg_attrs[i].update(self._input(self.block.arguments[i], names[i], devices[i], *choice))
        for i, role in enumerate(roles):
            if role == "rng":  # the runtime writes each call's seed and offset into value slots
                device = attrs.string("cuda" if self.gpu_program else "cpu")
                arg_attrs[i].update(
                    {d.IO: attrs.string("value"), d.SLOT: attrs.i64(self._value_slot()), d.DEVICE: device}
                )
        self.main.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in arg_attrs])
        self.main.attributes["res_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in res_attrs])
        self.main.attributes[d.TABLE_SLOTS] = attrs.i64(self.slots)

    def _choose_all(
        self, candidates: list[dict[str, tuple[float, float]]], other_slots: bool
    ) -> list[tuple[dict[str, float], str]]:
        """Each input's and output's costs and choice: the cheapest one by one, unless patching all of them
        costs less than that plus the table (see the module's docstring)."""
        slack = self.slack
        one_by_one = [self._choose(c) for c in candidates]
        if other_slots or self.slots > 0:  # the table stays for other values: each has its cheapest already
            return one_by_one
        if not any(choice in _TABLE for _, choice in one_by_one) or not all("patch" in c for c in candidates):
            return one_by_one
        kept = [c[choice] for c, (_, choice) in zip(candidates, one_by_one, strict=True)]
        kept.append((self.costs.set_params_us, self.costs.kernel_node_us))  # the table's writer
        patched = [c["patch"] for c in candidates]
        if _total(patched, slack) >= _total(kept, slack):
            return one_by_one
        self.slack = max(0.0, slack - sum(host for host, _ in patched))
        return [(costs, "patch") for costs, _ in one_by_one]

    def _choose(self, candidates: dict[str, tuple[float, float]]) -> tuple[dict[str, float], str]:
        """Each candidate's cost (GPU us plus the host us beyond the slack left, and a little for those
        within it) and the cheapest; the chosen one's host time uses up slack."""
        cost = {k: _total([c], self.slack) for k, c in candidates.items()}
        choice = min(cost, key=cost.get)
        self.slack = max(0.0, self.slack - candidates[choice][0])
        return cost, choice

    def _slot(self) -> int:
        self.slots += 1
        return self.slots - 1

    def _value_slot(self) -> int:
        """A slot that holds data: 16-byte aligned (an even slot), as kernels assume of a buffer's start."""
        self.slots += self.slots % 2
        return self._slot()

    def _kernels_for_memcpys(self) -> None:
        """A memcpy node bakes both addresses in: one that touches an input becomes a copy kernel."""
        for op in list(self.block.operations):
            if isinstance(op, d.CopyOp) and any(
                _is_input(buffer_root(v), self.main) for v in (op.source, op.target)
            ):
                with ir.InsertionPoint(op), op.location:
                    emit_copy(self.module, op.source, op.target)
                op.operation.erase()

    def _reach_host_results(self) -> None:
        """Results of host ops (data-dependent ops, `.item()`) that only kernels read are reached through the
        table: the graph after the host op reads them where the op put them, without a copy."""
        for op in self.block.operations:
            if not isinstance(op, d.HostOp):
                continue
            slots = [
                self._slot() if _kernels_only(r) and not buffer_layout(r).is_dynamic else -1
                for r in op.results_
            ]
            op.attributes["slots"] = attrs.i64_array(slots)

    # --------------------------------------------------------------------------------------- outputs

    def _output_candidates(self, ret: Any, index: int) -> dict[str, tuple[float, float]]:
        """(host us, GPU us) per call of each way to return output `index`."""
        value = ret.operands[index]
        layout = buffer_layout(value)
        if layout.is_dynamic:  # sized by the data: a host op's fresh tensor, returned as a copy
            return {"copy": (self.costs.runtime_copy_us, 0.0)}
        if self.static_outputs:
            return {"static": (0.0, 0.0)}
        move = self.costs.move_us(layout.nbytes())
        candidates = {
            "copy kernel": (0.0, self.costs.kernel_node_us + move),
            "copy": (self.costs.runtime_copy_us, self.costs.kernel_node_us + move),  # a kernel too
        }
        if self._written_only_by_a_kernel(value, ret, index):
            candidates["indirect"] = (0.0, 0.0)
            candidates["patch"] = (self._sites(value) * self.costs.set_params_us, 0.0)
        elif self._only_returned(value, ret):
            candidates["eager"] = (self._after_graph_us(value.owner), 0.0)
            if layout.is_dense() and layout.offset == 0:  # the vendor call writes the fresh tensor
                candidates["patch"] = (self.costs.set_params_us, 0.0)
        return candidates

    def _output(
        self, ret: Any, index: int, candidates: dict[str, float], choice: str
    ) -> dict[str, ir.Attribute]:
        value = ret.operands[index]
        layout = buffer_layout(value)
        if choice in ("static", "copy"):
            return _record({d.IO: attrs.string(choice)}, candidates, choice)
        if choice == "eager":
            reason = f"returns output {index} fresh from the call, instead of copying {layout.nbytes()} bytes out of the graph"
            self._outside_graph(value.owner, reason)
            return _record({d.IO: attrs.string("fresh")}, candidates, choice)
        if choice == "patch" and isinstance(value.owner, d.LibraryOp):
            return _record({d.IO: attrs.string("patch")}, candidates, choice)
        if choice in ("indirect", "patch"):
            alloc = value.owner
            with ir.InsertionPoint(alloc), alloc.location:
                output = d.create(d.OutputOp, [], {"index": attrs.i64(index), "layout": alloc.layout}, 1)
            alloc.buf.replace_all_uses_with(output.buf)
            alloc.operation.erase()
        else:
            dense = (
                layout
                if layout.is_dense() and layout.offset == 0
                else Layout.contiguous(layout.shape, layout.dtype)
            )
            first = self.block.operations[0]
            with ir.InsertionPoint(first), first.location:
                output = d.create(d.OutputOp, [], {"index": attrs.i64(index), "layout": dense.to_attr()}, 1)
            with ir.InsertionPoint(ret), ret.location:
                emit_copy(self.module, value, output.buf)
            ret.operands[index] = output.buf
        fields = {d.IO: attrs.string("indirect"), d.LAYOUT: buffer_layout(output.buf).to_attr()}
        if choice == "patch":
            fields[d.IO] = attrs.string("patch")
        else:
            fields[d.SLOT] = attrs.i64(self._slot())
        return _record(fields, candidates, choice)

    def _sites(self, value: ir.Value) -> int:
        """Graph nodes whose parameters hold the buffer's address (each patched once per call)."""
        return sum(isinstance(u, (d.KernelOp, d.LibraryOp)) for u in users(value))

    def _only_returned(self, value: ir.Value, ret: Any) -> bool:
        """A vendor call's result, in eager's layout, that nothing but the return reads (once)."""
        if not isinstance(value, ir.OpResult) or not isinstance(value.owner, d.LibraryOp):
            return False
        results = list(value.owner.results_)
        returned = [v for v in ret.operands if v in results]
        return len(returned) == len(set(returned)) and all(
            u.operation == ret.operation for r in results for u in users(r)
        )

    def _after_graph_us(self, op: Any) -> float:
        """A vendor call run after the graph: one eager launch, plus a graph launch if nodes follow it."""
        following = False
        for other in self.block.operations:
            if other.operation == op.operation:
                following = True
            elif following and isinstance(other, d.NODE_OPS):
                return self.costs.eager_launch_us + self.costs.graph_launch_us
        return self.costs.eager_launch_us

    def _written_only_by_a_kernel(self, value: ir.Value, ret: Any, index: int) -> bool:
        """A dense arena buffer that one kernel writes, only kernels read, and the call returns once."""
        if not isinstance(value, ir.OpResult) or not isinstance(value.owner, d.AllocOp):
            return False
        layout = buffer_layout(value)
        if layout.offset != 0 or not layout.is_dense() or [v == value for v in ret.operands].count(True) != 1:
            return False
        touching = [u for u in users(value) if u.operation != ret.operation]
        writers = [u for u in touching if _writes(u, value)]
        return (
            all(isinstance(u, d.KernelOp) for u in touching) and len(writers) == 1 and self._fused(writers[0])
        )

    def _fused(self, kernel: Any) -> bool:
        """A launch of a fused function: codegen, which runs later, writes it to reach buffers through the
        table (a kernel generated already, such as a random one, cannot change its signature)."""
        name = ir.FlatSymbolRefAttr(kernel.kernel).value
        return any(
            isinstance(op, func.FuncOp) and op.sym_name.value == name and d.FUSED in op.attributes
            for op in self.module.body.operations
        )

    # ---------------------------------------------------------------------------------------- inputs

    def _input_candidates(self, arg: ir.BlockArgument, device: str) -> dict[str, tuple[float, float]]:
        """(host us, GPU us) per call of each way to reach input `arg`."""
        layout = buffer_layout(arg)
        touching = users(arg)
        # Kernels read it through the table; host ops where it is (the runtime hands them this call's tensor).
        others = [u for u in touching if not isinstance(u, (d.KernelOp, d.HostOp))]
        written = any(_writes(u, arg) for u in touching)
        move = self.costs.move_us(layout.nbytes())
        # the runtime's copy is a kernel on the GPU as well
        candidates = {"stage": (self.costs.runtime_copy_us, self.costs.kernel_node_us + move)}
        if device == "cpu" and layout.numel == 1 and layout.nbytes() <= 8 and not written:
            candidates["value"] = (0.0, 0.0)  # a host scalar: its value travels in the table itself
        if device == "cpu" and self.gpu_program:  # the GPU cannot read host memory through the table
            return candidates
        if "value" in candidates:
            return {"value": candidates["value"]}
        if not others:
            candidates["indirect"] = (0.0, 0.0)
        elif not written:
            candidates["copy"] = (0.0, self.costs.kernel_node_us + move)
            if all(isinstance(u, d.LibraryOp) for u in others):
                candidates["eager"] = (len(others) * self.costs.eager_launch_us, 0.0)
        candidates["patch"] = (self._sites(arg) * self.costs.set_params_us, 0.0)  # last: loses ties
        return candidates

    def _input(
        self, arg: ir.BlockArgument, name: str, device: str, candidates: dict[str, float], choice: str
    ) -> dict[str, ir.Attribute]:
        layout = buffer_layout(arg)
        if device == "cpu" and self.gpu_program:
            fields = {d.IO: attrs.string(choice), d.DEVICE: attrs.string("cuda")}
            if choice == "value":
                fields[d.SLOT] = attrs.i64(self._value_slot())
                self._record_value(arg, name, fields[d.SLOT])
            else:
                what = f"host tensor '{name}' is copied to the GPU by the runtime before the graphs run"
                record_transform(self.module, ParameterIndirection.name, what, arg.location)
            return _record(fields, candidates, choice)
        if choice == "value":
            slot = attrs.i64(self._value_slot())
            self._record_value(arg, name, slot)
            return _record({d.IO: attrs.string("value"), d.SLOT: slot}, candidates, "value")
        if choice in ("stage", "patch"):
            return _record({d.IO: attrs.string(choice)}, candidates, choice)
        if choice == "copy":
            self._copy_in(arg, layout)
        elif choice == "eager":
            for op in users(arg):
                if isinstance(op, d.LibraryOp):
                    self._outside_graph(
                        op,
                        f"reads input '{name}' where it is, instead of copying {layout.nbytes()} bytes into the graph",
                    )
        io = "copy" if choice == "copy" else "indirect"
        return _record({d.IO: attrs.string(io), d.SLOT: attrs.i64(self._slot())}, candidates, choice)

    def _record_value(self, arg: ir.BlockArgument, name: str, slot: ir.IntegerAttr) -> None:
        what = (
            f"host scalar '{name}' travels in table slot {slot.value}: each call's value reaches the graphs "
            "without a copy or a recompilation"
        )
        record_transform(self.module, ParameterIndirection.name, what, arg.location)

    def _copy_in(self, arg: ir.BlockArgument, layout: Layout) -> None:
        """A static buffer shaped like the argument (views of it stay valid), filled by a copy kernel first."""
        first = self.block.operations[0]
        with ir.InsertionPoint(first), first.location:
            static = d.create(d.AllocOp, [], {"layout": layout.to_attr(), "arena_offset": attrs.i64(-1)}, 1)
            copy = emit_copy(self.module, arg, static.buf)
        arg.replace_all_uses_except(static.buf, copy.operation)

    def _outside_graph(self, op: Any, reason: str) -> None:
        """Runs a vendor call outside the graph; results that only kernels read are reached through the table."""
        slots = [self._slot() if _kernels_only(result) and users(result) else -1 for result in op.results_]
        fields = {
            "op": op.op,
            "args": op.args,
            "layouts": op.layouts,
            "reason": attrs.string(reason),
            "slots": attrs.i64_array(slots),
        }
        with ir.InsertionPoint(op), op.location:
            host = d.create(d.HostOp, [list(op.inputs)], fields, len(op.results_))
        for old, new in zip(op.results_, host.results_, strict=True):
            old.replace_all_uses_with(new)
        op.operation.erase()


# The mechanisms that reach a buffer through the table.
_TABLE = ("indirect", "copy", "copy kernel", "value", "eager")


def _total(costs: list[tuple[float, float]], slack: float) -> float:
    """Per-call cost of (host us, GPU us) pairs together: GPU time plus the host time beyond the GPU's slack,
    and a little for the host time within it."""
    host, gpu = sum(c[0] for c in costs), sum(c[1] for c in costs)
    return gpu + max(0.0, host - slack) + HOST_WEIGHT_IN_SLACK * min(host, slack)


def _kernels_only(result: ir.Value) -> bool:
    return all(isinstance(u, d.KernelOp) for u in users(result))


def _dict(attr: ir.Attribute) -> dict[str, ir.Attribute]:
    return {a.name: a.attr for a in ir.DictAttr(attr)}


def _is_input(root: ir.Value, main: Any) -> bool:
    if not isinstance(root, ir.BlockArgument):
        return False
    a = _dict(ir.ArrayAttr(main.attributes["arg_attrs"])[root.arg_number])
    return d.ROLE in a and ir.StringAttr(a[d.ROLE]).value == "input"


def _writes(op: Any, root: ir.Value) -> bool:
    """Whether `op` writes the storage of `root` (through any view of it)."""
    if isinstance(op, d.KernelOp):
        modes = [ir.StringAttr(m).value for m in op.access]
        return any("w" in m and buffer_root(a) == root for a, m in zip(op.args, modes, strict=True))
    if isinstance(op, d.CopyOp):
        return buffer_root(op.target) == root
    if isinstance(op, d.FillOp):
        return buffer_root(op.target) == root
    if isinstance(op, d.LibraryOp):  # an in-place ATen op (write-in-place) or an out form
        written = written_operand(op)
        return written is not None and buffer_root(written) == root
    return False


def _record(
    fields: dict[str, ir.Attribute], candidates: dict[str, float], choice: str
) -> dict[str, ir.Attribute]:
    """The mechanism's attributes plus the candidates' estimated costs (microseconds per call) and the choice."""
    fields[d.IO_COSTS] = ir.DictAttr.get({k: attrs.f64(round(v, 3)) for k, v in candidates.items()})
    fields[d.IO_CHOICE] = attrs.string(choice)
    return fields
