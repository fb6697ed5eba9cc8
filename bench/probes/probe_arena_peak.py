"""What pygraph's arena holds where it is fullest: the plan's arena buffers live at that node, with the
node that first touches each and the last, and how each output is reached.

On the GPU machine, as the benchmark compiles (`profile=True`, TF32 on):
`python3 bench/probes/probe_arena_peak.py bert_base,gpt2`; on a CPU machine the same plan is compiled for
the emulator with the GPU's layouts (uncalibrated costs: choices may differ).
"""

import sys

import torch

import pygraph
from pygraph.ir.plan import touched_roots
from pygraph.knobs import knobs
from pygraph.tools.workloads import WORKLOADS

MB = 2**20


def name_of(node: object) -> str:
    return node.op or node.kernel


def main(names: list[str]) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    for name in names:
        torch.manual_seed(0)
        model, draw = WORKLOADS[name].build(device)
        x = tuple(draw())
        with torch.no_grad(), knobs.scope(gpu_layouts="on"):
            if device.type == "cuda":
                compiled = pygraph.export_and_compile(model, x, profile=True)
            else:
                compiled = pygraph.export_and_compile(model, x, target="emulator")
        plan = compiled.plan
        order = [node for step in plan.steps for node in step.nodes]
        touched: dict[int, list[int]] = {}
        for i, node in enumerate(order):
            for root in touched_roots(plan, node):
                touched.setdefault(root, []).append(i)
        allocs = [b for b in plan.buffers if b.kind == "alloc" and b.id == b.root and b.id in touched]
        fullest = (0, 0, [])
        for i in range(len(order)):
            live = [b for b in allocs if touched[b.id][0] <= i <= touched[b.id][-1]]
            ranges = {(b.arena_offset, b.arena_offset + b.layout.nbytes()) for b in live}
            used = sum(end - start for start, end in ranges)
            if used > fullest[0]:
                fullest = (used, i, live)
        used, at, live = fullest
        print(
            f"{name}: arena {plan.arena_bytes / MB:.2f} MB, fullest at node {at} ({name_of(order[at])}): {used / MB:.2f} MB"
        )
        for b in sorted(live, key=lambda b: b.arena_offset):
            first, last = order[touched[b.id][0]], order[touched[b.id][-1]]
            print(
                f"  {b.layout.nbytes() / MB:6.3f} MB at {b.arena_offset:>9} {list(b.layout.shape)}: "
                f"{name_of(first)} .. {name_of(last)}"
            )
        derived = [
            (a.name, plan.buffers[a.buffer].layout.nbytes()) for a in plan.arguments if a.role == "derived"
        ]
        print(f"  derived: {[(n, round(s / MB, 3)) for n, s in derived]}")
        print(
            f"  outputs: {[(o.io, o.choice, round(plan.buffers[o.buffer].layout.nbytes() / MB, 3)) for o in plan.outputs]}"
        )
        print(f"  inputs: {[(a.name, a.io) for a in plan.arguments if a.role == 'input']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1].split(","))
