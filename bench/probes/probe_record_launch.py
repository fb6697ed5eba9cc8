"""Does the way vendor calls are recorded change the launch time of the graphs holding them? A workload
compiled twice per way, alternating: recordings made by `torch.cuda.graph` (which synchronises, collects
garbage and empties the allocator's cache before each capture) or by the runtime's own capture
(`graph.record`). Prints the bare `cuGraphLaunch` time of the first graph, the host time of a call and
the peak memory of the build, per compilation.

    python3 bench/probes/probe_record_launch.py mt5_I16
"""

import gc
import sys
import time

import torch

import pygraph
from pygraph.backend.cuda import graph, runtime
from pygraph.tools.bench import _host_us
from pygraph.tools.workloads import select


def record_as_torch_graph(call, stream, pool):
    recording = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(recording, pool=pool, stream=stream):
        outputs = call()
    return graph.Recording(recording), outputs


def main(name: str) -> None:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    (workload,) = select("all", name)
    model, draw = workload.build(torch.device("cuda"))
    x = draw()
    ways = {"torch.cuda.graph": record_as_torch_graph, "own capture": graph.record}
    with torch.no_grad():
        for _ in range(2):
            for way, record in ways.items():
                runtime.record = record
                gc.collect()
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                start = time.perf_counter()
                compiled = pygraph.export_and_compile(model, x, target="cuda")
                for _ in range(3):
                    compiled(*x)
                torch.cuda.synchronize()
                build_s = time.perf_counter() - start
                peak = (torch.cuda.max_memory_allocated() - base) / 2**20
                launch = compiled._backend.measure_launch_us(x)
                print(
                    f"{name} {way:17s} launch {launch:7.2f} us  host {_host_us(compiled, [x]):7.2f} us  "
                    f"peak {peak:8.2f} MB  build {build_s:5.1f} s  graphs {len(compiled._backend._graphs)}",
                    flush=True,
                )
                del compiled
    runtime.record = graph.record


if __name__ == "__main__":
    main(sys.argv[1])
