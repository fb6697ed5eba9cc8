"""hoist-host-copies: take host-to-device copies of the model's own tensors out of every call.

A GPU model that keeps a tensor on the CPU and moves it in `forward` (`self.table.to(x.device)`) makes
eager PyTorch copy it over PCIe on every call, and a stream capture bakes the host address in (a crash
if the host frees it). torch.export records the move as `aten._to_copy(..., device=cuda)` of an argument
on the CPU. Where that argument cannot change during the program:

- a parameter, buffer or constant the model never writes is placed on the GPU once, at compile time
  (the runtime keeps the copy and refreshes it only when the model's tensor changes between calls), and
  the copy in the program becomes the argument itself (or a cast on the GPU if it also changes dtype);
- an input is copied to the GPU by the runtime before the graphs run (a staged input, or a value slot
  of the table for a scalar, chosen by parameter-indirection), so the copy in the program goes away too.

A buffer the model writes on the CPU and copies to the GPU would need work on the host between graphs:
it is refused, naming the copy. Each hoisted copy is recorded for `explain()`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import aten, attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.torch_types import tensor_info
from .base import Pass, PassError, argument_attrs, argument_devices, main_function, record_transform


@dataclasses.dataclass
class HoistHostCopies(Pass):
    """Removes per-call host-to-device copies of arguments: placed once, or staged by the runtime."""

    name = "hoist-host-copies"
    summary = "place CPU tensors a GPU program copies to the GPU there once, or let the runtime stage them"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        if "arg_attrs" not in main.attributes:
            return
        args = argument_attrs(main)
        block = main.regions[0].blocks[0]
        written = {
            op.operands[1] for op in block.operations if op.operation.name == d.OverwriteOp.OPERATION_NAME
        }
        devices = argument_devices(main)
        roles = [ir.StringAttr(a[d.ROLE]).value for a in args]
        copies = [
            op
            for op in block.operations
            if aten.copy_device(op) == "cuda"
            and isinstance(op.operands[0], ir.BlockArgument)
            # on the host, or a constant place-constants put on the GPU already
            and (
                devices[op.operands[0].arg_number] == "cpu"
                or roles[op.operands[0].arg_number] in ("constant", "derived")
            )
        ]
        errors = []
        with module.context:
            for op in copies:
                source = op.operands[0]
                a = args[source.arg_number]
                role, name = roles[source.arg_number], ir.StringAttr(a[d.NAME]).value
                if role != "input" and source in written:
                    errors.append(
                        (
                            op.location,
                            f"{role} '{name}' lives on the CPU, the model writes it and copies it to the GPU",
                        )
                    )
                    continue
                if role == "input":
                    what = f"the copy of input '{name}' to the GPU is made by the runtime before the graphs"
                else:
                    a[d.DEVICE] = attrs.string("cuda")
                    what = f"the copy of {role} '{name}' to the GPU in every call is gone: it is placed there once"
                record_transform(module, self.name, what, op.location)
                _drop_device_move(op)
            if errors:
                raise PassError(errors)
            main.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in args])


def _drop_device_move(op: Any) -> None:
    """The copy becomes its source when it changes nothing else, else a cast that stays on the device."""
    source, result = op.operands[0], op.results[0]
    if tensor_info(source.type) == tensor_info(result.type):
        result.replace_all_uses_with(source)
        op.operation.erase()
        return
    with ir.InsertionPoint(op), op.location:
        none = ir.Operation.create("torch.constant.none", results=[ir.Type.parse("!torch.none")])
    op.operands[aten.TO_COPY_DEVICE] = none.results[0]
