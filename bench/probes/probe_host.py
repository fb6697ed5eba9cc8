"""Where mlp's host time per call goes, the GPU idle before each measured piece: the native replay
(backend/cuda/replay.c), and the Python path's pieces (PYGRAPH_NATIVE=off).

On the GPU machine: `python3 bench/probes/probe_host.py` (output: bench/results/probe-host-mlp-h200.log).
"""

import torch
from timing import idle_host_us

import pygraph
from pygraph.backend.cuda import driver
from pygraph.knobs import knobs
from pygraph.tools.workloads import WORKLOADS


def main() -> None:
    model, make = WORKLOADS["mlp"].build(torch.device("cuda"))
    inputs = [make() for _ in range(8)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, inputs[0])
        with knobs.scope(native="off"):
            python = pygraph.export_and_compile(model, inputs[0])
        for x in inputs:
            compiled(*x)
            python(*x)
        assert compiled._backend.native is not None
        runtime = python._backend  # the pieces below are the Python path's
        graph = runtime._graphs[0]
        # the first node whose parameters are updated each call: a patched node, else the table's writer
        node, params = (
            (graph.patches[0].node, graph.patches[0].params)
            if graph.patches
            else (graph.writer, runtime._writer_node_params())
        )
        outputs = runtime._bind_outputs()  # what `_results` takes (the runtime keeps no call's outputs)
        prototype = outputs[0]  # allocation alternatives, at the output's shape
        shape, strides = tuple(prototype.shape), prototype.stride()
        # two calls' addresses (inputs, outputs), alternated: every patched node is updated each time
        keyed, held = [], []
        for x in inputs[:2]:
            runtime._bind_inputs(list(x))
            held.append(runtime._bind_outputs())
            keyed.append(list(runtime._addresses))

        def changed(i: int) -> None:
            runtime._addresses[:] = keyed[i % 2]
            for run in runtime._program:
                run()

        pieces = {
            "compiled(x)": lambda i: compiled(*inputs[i % 8]),
            "native replay(inputs)": lambda i: compiled._backend.native(inputs[i % 8]),
            "compiled(x), Python path": lambda i: python(*inputs[i % 8]),
            "backend(inputs)": lambda i: runtime(list(inputs[i % 8])),
            "_bind_inputs": lambda i: runtime._bind_inputs(list(inputs[i % 8])),
            "_bind_outputs": lambda i: runtime._bind_outputs(),
            "program, addresses unchanged": lambda i: [run() for run in runtime._program],
            "program, addresses changed": lambda i: changed(i),
            "launch only": lambda i: driver.launch_graph(graph.graph_exec, runtime._stream),
            "set params only (one node)": lambda i: driver.set_kernel_params(graph.graph_exec, node, params),
            "empty_strided": lambda i: torch.empty_strided(shape, strides, device=runtime.device),
            "new_empty_strided": lambda i: prototype.new_empty_strided(shape, strides),
            "new_empty": lambda i: prototype.new_empty(shape),
            "empty_like": lambda i: torch.empty_like(prototype),
            "torch.empty": lambda i: torch.empty(shape, device=runtime.device),
            "wrapper checks (compiled minus backend)": None,
            "raw stream": lambda i: torch._C._cuda_getCurrentRawStream(0),
            "_results": lambda i: runtime._results(outputs),
        }
        times = {name: idle_host_us(fn) for name, fn in pieces.items() if fn is not None}
        times["wrapper checks (compiled minus backend)"] = (
            times["compiled(x), Python path"] - times["backend(inputs)"]
        )
        for name in pieces:
            print(f"{name:40s} {times[name]:7.2f} us")
        # the benchmark builds reduce-overhead first: does its presence in the process slow pygraph's calls?
        ro = torch.compile(model, mode="reduce-overhead")
        for x in inputs:
            ro(*x)
        for name in ("compiled(x)", "compiled(x), Python path", "launch only"):
            print(f"{name + ', after reduce-overhead':40s} {idle_host_us(pieces[name]):7.2f} us")
        # the benchmark profiles each system: are driver calls slower once torch.profiler has run?
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
            for x in inputs:
                compiled(*x)
            torch.cuda.synchronize()
        for name in ("compiled(x)", "compiled(x), Python path", "launch only"):
            print(f"{name + ', after torch.profiler':40s} {idle_host_us(pieces[name]):7.2f} us")


if __name__ == "__main__":
    main()
