"""classify-ops: give every op of `@main` its class, the first decision of the pipeline.

Classes: `pointwise`, `reduction` and `concat` (`aten.cat`) (the kernel generator can emit it;
fuse-pointwise puts it in a kernel or leaves it to ATen), `gather` (an embedding, index_select, gather or
`index` by one tensor that a kernel can compute, `gathers.py`; one it cannot is a library op whose
`pygraph.reason` says why), `attention` (a `scaled_dot_product_attention` the frontend routed to the
generated attention kernel, `pygraph.attention_kernel`: checked here, so an attention the kernel cannot
compute fails where it is), `matvec` (a linear, mm, addmm or matmul of one row that the generated
matrix-vector kernel computes, or of at most 64 half-precision rows that the matmul kernel's tensor-core
dots compute, `matvec_kernel.py`; option `matvec=false` leaves them to the vendor library), `matmul` (a product of more rows that the generated matmul kernel should compute with its
pointwise consumers, `matmul_kernel.py`: options `matmul=auto|all|off`, which products, and
`matmul-precision=ieee|tf32`, its dots' precision, marked `pygraph.matmul_kernel` on the op; the default
is torch's, IEEE float32, under which `auto` takes none), `view` (layout only), `library` (one ATen
call), `host` (needs the host: it synchronises or has a data-dependent shape, or its
`pygraph.outside_graphs` says why no graph may hold it), `scalar` (evaluated at compile time), `constant`
(a literal tensor), `nop`. Any ATen op that computes tensors and is not otherwise known is a library op,
so no model is refused for a missing lowering; ops that are not ATen at all are errors naming the op and
its source location.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ir import aten, attrs
from ..ir import dialect as d
from ..ir._mlir import ir
from ..ir.torch_types import is_tensor, tensor_info
from . import gathers, matmul_kernel
from .attention_kernel import read_attention
from .base import Pass, PassError, main_function
from .matvec_kernel import read_matvec
from .pointwise import CONCAT, POINTWISE
from .reductions import REDUCTIONS

_STRUCTURAL = {"func.return", "func.call", "pygraph.overwrite", "torch.bind_symbolic_shape"}
_SCALAR_PREFIXES = ("torch.constant.", "torch.prim.", "torch.symbolic_int", "torch.derefine")
_STRUCTURAL_LISTS = {"torch.prim.ListUnpack"}
_BITCAST = "aten.view.dtype"
_LITERALS = {"torch.vtensor.literal", "torch.prim.NumToTensor.Scalar"}


def classify(op: Any, matvec: bool = True, matmul: str = "off", precision: str = "ieee") -> str:
    """The class of one torch-dialect op (see module docstring); raises ValueError for foreign ops."""
    name = op.operation.name
    if name in _LITERALS:
        return "constant"
    results = list(op.results)
    if name.startswith(_SCALAR_PREFIXES) and not any(is_tensor(r.type) for r in results):
        return "scalar"
    if name in _STRUCTURAL_LISTS:
        return "scalar"  # unpacks a list of tensors (split, unbind): the tensors are already defined
    aten_name = aten.aten_name(op)
    if aten_name is None:
        raise ValueError(f"'{name}' is not an ATen op pygraph knows")
    if aten_name in aten.NOP_OPS:
        return "nop"
    if results and not any(is_tensor(r.type) or str(r.type).startswith("!torch.list") for r in results):
        return "scalar"  # size arithmetic and other ops on Python numbers
    if aten_name in aten.VIEW_OPS:
        return "view"
    if aten_name in aten.HOST_OPS or d.OUTSIDE_GRAPHS in op.attributes:
        return "host"
    if aten_name == _BITCAST:
        _check_bitcast(op)
    if aten_name in POINTWISE:
        return "pointwise"
    if aten_name in REDUCTIONS:
        return "reduction"
    if aten_name == CONCAT:
        return "concat"
    if aten_name in gathers.GATHERS:
        return "library" if gathers.refusal(op) else "gather"
    if d.ATTENTION_KERNEL in op.attributes:
        read_attention(op)  # ValueError: what the kernel cannot compute
        return "attention"
    if matvec and read_matvec(op) is not None:
        return "matvec"
    if matmul_kernel.read_matmul(op, matmul, precision) is not None:
        return "matmul"
    return "library"


def _check_bitcast(op: Any) -> None:
    """`view(dtype)` is a pointwise bit-cast between dtypes of one size; other sizes change the shape and
    a bool's bits are no Triton value, so the view would alias its input in a library call: refused."""
    source, target = (tensor_info(v.type)[1] for v in (op.operands[0], op.results[0]))
    if source.itemsize != target.itemsize or "bool" in (source.name, target.name):
        raise ValueError(
            f"aten.view.dtype from {source.name} to {target.name}: pygraph reinterprets bits only between "
            "dtypes of one size, bool excepted"
        )


@dataclasses.dataclass
class ClassifyOps(Pass):
    """Sets `pygraph.class` on every op of `@main`; errors name ops pygraph cannot run at all."""

    name = "classify-ops"
    summary = (
        "classify each op as pointwise, reduction, concat, gather, attention, matvec, matmul, view, library, host, "
        "scalar, constant or nop"
    )
    matvec: bool = True  # products of one row (or a few half rows) as generated kernels (else vendor calls)
    matmul: str = "auto"  # products of more rows as generated matmuls with their epilogue: auto, all, off
    matmul_precision: str = "ieee"  # their dots: ieee (float32) or tf32 (where torch allows TF32 matmuls)

    def run(self, module: ir.Module) -> None:
        if self.matmul not in matmul_kernel.ROUTES:
            raise ValueError(f"matmul must be one of {', '.join(matmul_kernel.ROUTES)}, not {self.matmul!r}")
        if self.matmul_precision not in matmul_kernel.PRECISIONS:
            raise ValueError(
                f"matmul-precision must be one of {', '.join(matmul_kernel.PRECISIONS)}, not {self.matmul_precision!r}"
            )
        main = main_function(module)
        errors = []
        with module.context:
            for op in main.regions[0].blocks[0].operations:
                if op.operation.name in _STRUCTURAL:
                    continue
                try:
                    cls = classify(op, self.matvec, self.matmul, self.matmul_precision)
                except ValueError as exc:
                    errors.append((op.location, str(exc)))
                    continue
                op.attributes[d.CLASS] = attrs.string(cls)
                if cls == "library" and (reason := gathers.refusal(op)):
                    op.attributes[d.REASON] = attrs.string(f"no gather kernel: {reason}")
                if cls == "matmul":
                    op.attributes[d.MATMUL_KERNEL] = attrs.string(self.matmul_precision)
        if errors:
            raise PassError(errors)
