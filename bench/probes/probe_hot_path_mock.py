"""How much of the CUDA runtime's call is Python that a flat rewrite could save, measured on a CPU.

A CudaRuntime is assembled by hand for mlp's case (one patched input, one fresh output, two patched
nodes), with the driver calls and torch's device queries as no-ops, and timed against a flat closure doing
the same work (the experiment: about the least Python the call could be). On a machine without a GPU:
`PYTHONPATH=. python3 bench/probes/probe_hot_path_mock.py` (output: bench/results/probe-hot-path-mock-cpu.log).
"""

import ctypes
import timeit
from collections.abc import Callable
from types import SimpleNamespace

import torch

from pygraph.backend.cuda import driver
from pygraph.backend.cuda import runtime as rt_module
from pygraph.backend.cuda.compile import KernelParams
from pygraph.backend.cuda.graph import Patch
from pygraph.ir.layout import Layout

CALLS = 100_000


def no_op(*args: object) -> None:
    return None


def mock_runtime() -> tuple[rt_module.CudaRuntime, list[Patch]]:
    """mlp's runtime as the built call sees it, on CPU tensors."""
    driver.set_kernel_params = no_op
    driver.launch_graph = no_op
    torch._C._cuda_getDevice = lambda: 0
    torch._C._cuda_getCurrentRawStream = lambda index: 7
    rt = object.__new__(rt_module.CudaRuntime)
    rt._index, rt.device, rt._built, rt._state_key = 0, torch.device("cpu"), True, [1]
    rt._streams, rt._staged, rt._valued, rt.rng, rt._align = {}, [], [], [], {0: 16}
    rt._slotted = [(0, -1, 0, (1024, 1), Layout((256, 1024), (1024, 1), 0, None))]
    rt._patch_staging, rt._addresses, rt.slot_values = {}, [0, 0], None
    rt._fresh = [(-1, 1, (256, 1024), (1024, 1), torch.empty(0))]
    rt._written, rt._writes_input, rt._all_fresh, rt._returned, rt.tensors = (
        [],
        [False],
        True,
        [3],
        [None] * 4,
    )
    first, second = KernelParams([1, 2, 3]), KernelParams([4, 5, 6])
    patches = [
        Patch(None, None, [(ctypes.c_uint64.from_buffer(first.values, 0), 0, 0)]),
        Patch(None, None, [(ctypes.c_uint64.from_buffer(second.values, 8), 1, 0)]),
    ]
    rt._stream = None
    rt._program = [rt._launcher(SimpleNamespace(graph_exec=None, writer=None, patches=patches))]
    return rt, patches


def flat_call(rt: rt_module.CudaRuntime, patches: list[Patch]) -> Callable:
    """The same work as one closure over locals: no method calls, no attribute lookups per call."""
    get_device, raw_stream = torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream
    index, streams, slotted, fresh, addresses = rt._index, rt._streams, rt._slotted, rt._fresh, rt._addresses
    align, returned, tensors = rt._align, rt._returned, rt.tensors
    updates = [(p.node, p.params, p.places) for p in patches]
    set_params, launch_graph = driver.set_kernel_params, driver.launch_graph

    def call(inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        if get_device() != index:
            raise RuntimeError("device switch")
        raw = raw_stream(index)
        stream = streams.get(raw)
        if stream is None:
            stream = streams[raw] = rt_module.cu.CUstream(raw)
        for i, _, key, strides, _ in slotted:
            x = inputs[i]
            address = x.data_ptr()
            if x.stride() != strides or address % align[i]:
                raise RuntimeError("contiguity copy")
            addresses[key] = address
        outputs = []
        for _, key, shape, strides, prototype in fresh:
            out = prototype.new_empty_strided(shape, strides)
            addresses[key] = out.data_ptr()
            outputs.append(out)
        for node, params, places in updates:
            changed = False
            for place, key, delta in places:
                address = addresses[key] + delta
                if place.value != address:
                    place.value = address
                    changed = True
            if changed:
                set_params(None, node, params)
        launch_graph(None, stream)
        for b in returned:
            tensors[b] = None
        return outputs

    return call


def per_call_us(fn: Callable) -> float:
    return min(timeit.repeat(fn, number=CALLS, repeat=5)) / CALLS * 1e6


def main() -> None:
    rt, patches = mock_runtime()
    flat = flat_call(rt, patches)
    inputs = [(torch.randn(256, 1024),) for _ in range(8)]
    turn = iter(range(1 << 62))
    print(f"runtime call          {per_call_us(lambda: rt(inputs[next(turn) & 7])):6.3f} us")
    print(f"flat closure          {per_call_us(lambda: flat(inputs[next(turn) & 7])):6.3f} us")
    prototype = torch.empty(0)
    print(
        f"of which allocation   {per_call_us(lambda: prototype.new_empty_strided((256, 1024), (1024, 1))):6.3f} us"
    )


if __name__ == "__main__":
    main()
