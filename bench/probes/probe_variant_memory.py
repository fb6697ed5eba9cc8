"""Memory a model called at several sizes holds: pygraph (one program per size, dims declared dynamic)
against reduce-overhead (which recompiles for the new sizes and records a graph per size into one pool).

A BERT-sized encoder layer (768 wide, 12 heads, MLP 3072) at batch 8 is called at sequence lengths 64,
128, 256 and 512, smallest first (each new size larger than all before; `--largest-first` reverses
that), then every size again, with TF32 on as the benchmark times (pygraph's calibration done
beforehand). Per system: the memory allocated beside the model's weights once every size ran (what
stays), the peak over the whole run, what the allocator reserves after emptying its cache (graphs'
pools included: memory no one else can use), and the time per call at each size; for pygraph also the
sum of its programs' arenas (what one arena per program would hold) and the arena it holds; `--trace`
prints the blocks live at the peak. Run it for two checkouts to compare code versions (output:
bench/results/probe-variant-memory-*.log):

    PYTHONPATH=old:$SITE python3 bench/probes/probe_variant_memory.py --label old   (old: `git archive REV pygraph`)
    PYTHONPATH=.:$SITE python3 bench/probes/probe_variant_memory.py --label new
"""

import argparse
import gc

import torch
from probe_peak_trace import blocks_at_peak, where
from timing import queued_us

import pygraph
from pygraph.backend.cuda.calibrate import costs_for

MB = 2**20
LENGTHS = (64, 128, 256, 512)


class EncoderLayer(torch.nn.Module):
    def __init__(self, width: int = 768, heads: int = 12) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.out = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.up, self.down = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, w = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        x = self.norm1(x + self.out(a.transpose(1, 2).reshape(b, s, w)))
        return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))


def build(system: str, model: torch.nn.Module, x: torch.Tensor) -> object:
    if system == "ro":
        return torch.compile(model, mode="reduce-overhead")
    length = torch.export.Dim("length", min=2, max=4096)
    return pygraph.export_and_compile(model, (x,), dynamic_shapes={"x": {1: length}})


def print_peak(trace: list[dict], smallest: int = 4 * MB) -> None:
    """The blocks of `smallest` bytes or more live at the peak of the allocator's history `trace`."""
    peak, at_peak = blocks_at_peak(trace)
    print(
        f"  peak of the traced blocks {peak / MB:.1f} MB; blocks of {smallest / MB:.0f} MB or more live then:"
    )
    for size, frames in sorted(at_peak, key=lambda v: -v[0]):
        if size >= smallest:
            print(f"  {size / MB:8.2f} MB  {where(frames)}")


def measure(system: str, label: str, trace: bool, order: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    model = EncoderLayer().cuda().eval()
    inputs = {n: [torch.randn(8, n, 768, device="cuda") for _ in range(4)] for n in LENGTHS}
    gc.collect()
    torch.cuda.synchronize()
    torch._C._cuda_clearCublasWorkspaces()  # (as the benchmark: a capture drops them, which would count)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base, reserved_base = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    if trace:
        torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
    with torch.no_grad():
        fn = build(system, model, inputs[order[0]][0])
        for n in (*order, *order):
            for x in inputs[n][:3]:  # (reduce-overhead records at its third call of a size)
                fn(x)
        torch.cuda.synchronize()
    if trace:
        print_peak(torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()])
        torch.cuda.memory._record_memory_history(enabled=None)
    held = (torch.cuda.memory_allocated() - base) / MB
    peak = (torch.cuda.max_memory_allocated() - base) / MB
    gc.collect()
    torch.cuda.empty_cache()  # what the allocator still reserves then is held: pools, live blocks
    reserved = (torch.cuda.memory_reserved() - reserved_base) / MB
    with torch.no_grad():
        times = {n: queued_us(lambda i, n=n: fn(inputs[n][i % 4]), 200) for n in LENGTHS}
        worst = max(
            (fn(x) - model(x)).norm().item() / model(x).norm().item() for n in LENGTHS for x in inputs[n][:1]
        )
    line = f"{label} {system}: held {held:.2f} MB, peak {peak:.2f} MB, reserved {reserved:.2f} MB"
    if system == "pygraph":
        programs = [fn, *fn._variants.values()]
        arenas = sum(p.plan.arena_bytes for p in programs) / MB
        holds = sum({p._backend.arena.data_ptr(): p._backend.arena.numel() for p in programs}.values()) / MB
        line += f", {len(programs)} programs: their arenas {arenas:.2f} MB, arena storage held {holds:.2f} MB"
    times_text = ", ".join(f"{n}: {t:.1f}" for n, t in times.items())
    print(f"{line}; us per call by length {times_text}; worst relative error {worst:.1e}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", default="new")
    parser.add_argument("--systems", default="pygraph,ro")
    parser.add_argument("--trace", action="store_true", help="print what is allocated at the peak")
    parser.add_argument("--largest-first", action="store_true", help="sizes called largest first")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    costs_for(torch.device("cuda"))  # pygraph's one-time calibration, outside every window
    for system in args.systems.split(","):
        order = tuple(reversed(LENGTHS)) if args.largest_first else LENGTHS
        measure(system, args.label, args.trace, order)
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
