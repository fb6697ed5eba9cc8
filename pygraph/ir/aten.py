"""ATen op names as pygraph sees them, and the op sets that decide an op's class.

Pointwise ops and reductions are those the kernel generator can emit (the tables
`pygraph.passes.pointwise.POINTWISE` and `pygraph.passes.reductions.REDUCTIONS`); every other ATen op
that computes tensors is a library op unless listed here as a view, a no-op or a host op.
"""

from __future__ import annotations

from typing import Any

from ._mlir import ir

# Ops whose result shares the input's storage: lowered to `pygraph.view` (layout algebra only).
VIEW_OPS = frozenset(
    {
        "aten.view.default",
        "aten._unsafe_view.default",
        "aten.reshape.default",
        "aten.permute.default",
        "aten.transpose.int",
        "aten.t.default",
        "aten.numpy_T.default",
        "aten.expand.default",
        "aten.expand_as.default",
        "aten.unsqueeze.default",
        "aten.squeeze.default",
        "aten.squeeze.dim",
        "aten.squeeze.dims",
        "aten.slice.Tensor",
        "aten.select.int",
        "aten.diagonal.default",
        "aten.unfold.default",
        "aten.narrow.default",
        "aten.alias.default",
        "aten.detach.default",
        "aten.as_strided.default",
        "aten.flatten.using_ints",
        "aten.unflatten.int",
        "aten.split.Tensor",
        "aten.split_with_sizes.default",
        "aten.unbind.int",
        "aten.chunk.default",
        "aten.view_as.default",
    }
)

# Views that reshape in row-major order: element i of the result is element i of the input.
RESHAPES = frozenset({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"})

# A check of a number (`torch._check`, export's size checks, the conditions of branches on data): a host op
# where it checks numbers read from the data, else nothing.
CHECK = "aten._assert_scalar.default"

# Ops that do nothing at run time (export's checks of metadata pygraph already fixed).
NOP_OPS = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        CHECK,
        "aten.sym_constrain_range_for_size.default",
        "aten._assert_async.msg",
    }
)

# Ops whose output shape depends on the data, or that read a value back to the host.
HOST_OPS = frozenset(
    {
        "aten.nonzero.default",
        "aten.masked_select.default",
        "aten.unique.default",
        "aten._unique2.default",
        "aten.unique_consecutive.default",
        "aten._local_scalar_dense.default",
        "aten.item.default",
        "aten.repeat_interleave.Tensor",
    }
)


# TorchScript's prim ops of numbers that `frontend/python_arithmetic.py` computes Python's builtins with
PRIM_NUMBER_OPS = frozenset({"max", "min", "abs"})


def aten_name(op: Any) -> str | None:
    """`aten.<name>.<overload>` for a torch-dialect op (named, or `torch.operator "torch.aten..."`), else None
    (`prims.` and, for `PRIM_NUMBER_OPS`, `prim.` likewise).
    An op of another namespace of torch's dispatcher (a custom op of the user's, `torch.library`) arrives as
    `torch.operator "torch.NS.name.overload"` and is `NS.name.overload`: pygraph calls it like an ATen op."""
    name = op.operation.name
    if name == "torch.operator":
        name = ir.StringAttr(op.operation.attributes["name"]).value
        parts = name.split(".")
        if len(parts) in (3, 4) and parts[0] == "torch" and parts[1] not in ("aten", "prims"):
            return ".".join([*parts[1:], "default"][:3])
    for namespace in ("aten", "prims", "prim"):
        prefix = f"torch.{namespace}."
        if name.startswith(prefix):
            parts = name[len(prefix) :].split(".")
            if namespace == "prim" and parts[0] not in PRIM_NUMBER_OPS:
                return None  # (the importer's lists, tuples and conversions)
            overload = parts[1] if len(parts) > 1 else "default"
            return f"{namespace}.{parts[0]}.{overload}"
    return None


TO_COPY = "torch.aten._to_copy"
TO_COPY_DEVICE = 3  # _to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format)


def copy_device(op: Any) -> str | None:
    """The device type (`"cpu"`, `"cuda"`) an `aten._to_copy` copies to, when it names one."""
    if op.operation.name != TO_COPY:
        return None
    device = op.operands[TO_COPY_DEVICE].owner
    if not isinstance(device, ir.OpView) or device.operation.name != "torch.constant.device":
        return None
    return ir.StringAttr(device.attributes["value"]).value.split(":")[0]
