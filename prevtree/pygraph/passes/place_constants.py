"""place-constants: put CPU tensor constants that a GPU program uses on the GPU, once, at compile time.

`torch.tensor(3.0)` in `forward`, or a mask built once in `__init__` and lifted by export, lands in
`ExportedProgram.constants` on the CPU even when the model runs on a GPU; eager PyTorch copies it (or
passes a 0-d tensor as a scalar) on every call, which keeps a stream capture from working. A constant
cannot change between calls, so the argument is marked as living on the program's device and the
runtime places it there once, when it binds arguments. Each change is recorded for `explain()`.
"""

from __future__ import annotations

import dataclasses

from ..ir import attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from .base import Pass, PassError, argument_attrs, argument_devices, main_function, record_transform


@dataclasses.dataclass
class PlaceConstants(Pass):
    """Marks CPU constant arguments of a GPU program as placed on the GPU at compile time."""

    name = "place-constants"
    summary = "place CPU tensor constants of a GPU program on the GPU once, at compile time"

    def run(self, module: ir.Module) -> None:
        main = main_function(module)
        if "arg_attrs" not in main.attributes:
            return
        args, devices = argument_attrs(main), argument_devices(main)
        unknown = [(i, dev) for i, dev in enumerate(devices) if dev not in ("cpu", "cuda")]
        if unknown:
            i, dev = unknown[0]
            raise PassError.at(
                main, f"argument {i} is on device '{dev}'; pygraph runs programs on cpu or cuda"
            )
        if "cuda" not in devices:
            return  # a CPU program: nothing to move
        block = main.regions[0].blocks[0]
        with module.context:
            for i, (a, dev) in enumerate(zip(args, devices, strict=True)):
                role = ir.StringAttr(a[d.ROLE]).value if d.ROLE in a else "input"
                if role not in ("constant", "derived") or dev != "cpu":
                    continue
                a[d.DEVICE] = attrs.string("cuda")
                name = ir.StringAttr(a[d.NAME]).value if d.NAME in a else f"arg{i}"
                record_transform(
                    module,
                    self.name,
                    f"{role} '{name}' placed on the GPU once, at compile time",
                    block.arguments[i].location,
                )
            main.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(a) for a in args])
