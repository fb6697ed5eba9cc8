"""Checked calls into the CUDA driver through cuda-python (`cuda.bindings.driver`).

cuda-python returns `(CUresult, *values)` from every call. `call` raises `CudaError`, naming the call
and the driver's error, when the result is not CUDA_SUCCESS, so no failure passes unnoticed; the rest
of the backend reaches the bindings through this module (`cu`).
"""

from __future__ import annotations

from typing import Any

from cuda.bindings import driver as cu

SUCCESS = cu.CUresult.CUDA_SUCCESS


class CudaError(RuntimeError):
    """A driver call that did not return CUDA_SUCCESS."""

    def __init__(self, call: str, result: Any) -> None:
        super().__init__(f"{call} failed: {_describe(result)}")


def _describe(result: Any) -> str:
    name = cu.cuGetErrorName(result)
    text = cu.cuGetErrorString(result)
    if name[0] != SUCCESS or text[0] != SUCCESS:
        return f"CUresult {int(result)}"
    return f"{name[1].decode()} ({text[1].decode()})"


def call(name: str, *args: Any) -> Any:
    """`cu.<name>(*args)`, checked; returns None, the one value, or the tuple of values after the CUresult."""
    out = getattr(cu, name)(*args)
    if out[0] != SUCCESS:
        raise CudaError(name, out[0])
    return None if len(out) == 1 else out[1] if len(out) == 2 else out[1:]


def launch_graph(graph_exec: cu.CUgraphExec, stream: cu.CUstream) -> None:
    """`cuGraphLaunch`, checked: the one driver call of a replay, kept free of `call`'s lookups."""
    (result,) = cu.cuGraphLaunch(graph_exec, stream)
    if result != SUCCESS:
        raise CudaError("cuGraphLaunch", result)


def set_kernel_params(
    graph_exec: cu.CUgraphExec, node: cu.CUgraphNode, params: cu.CUDA_KERNEL_NODE_PARAMS
) -> None:
    """`cuGraphExecKernelNodeSetParams`, checked: the per-call table update, kept free of `call`'s lookups."""
    (result,) = cu.cuGraphExecKernelNodeSetParams(graph_exec, node, params)
    if result != SUCCESS:
        raise CudaError("cuGraphExecKernelNodeSetParams", result)


def current_context(device: int) -> cu.CUcontext:
    """The context of CUDA device `device` current on this thread: its primary context, which torch uses.

    Call it inside `torch.cuda.device(device)`. Where torch has not touched the device on this thread
    yet, the primary context is made current here, as the runtime API would.
    """
    call("cuInit", 0)
    context = call("cuCtxGetCurrent")
    if int(context) == 0:
        context = call("cuDevicePrimaryCtxRetain", call("cuDeviceGet", device))
        call("cuCtxSetCurrent", context)
    return context
