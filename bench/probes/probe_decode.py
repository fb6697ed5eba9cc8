"""One decoding step of a Llama-style model in bfloat16 at batch 1 (the workload CUDA graphs exist for: one
token through every layer, products of one row), with transformers' static cache held as buffers and
written in place: eager, reduce-overhead and pygraph, time per step and the logits against eager's.

On the GPU machine: `python3 bench/probes/probe_decode.py [--batch B] [--size S]` (output: bench/results/probe-decode-s2[5-9]*-h200.log:
per step, the time, the GPU time from torch.profiler and the kernels costing most; "no-pdl" is pygraph with
plain graph edges).
The model has random weights: hidden 2048, 8 layers, 16 heads over 4 key-value heads, MLP 5632, 32000
words, a cache of 512 positions; each timed step writes the next position. `--batch` decodes B sequences
at once (their products have B rows); `--size 7b` and `--size 8b` take the layers of Llama-2-7B (hidden
4096, MLP 11008, 32 heads) and Llama-3-8B (MLP 14336, 8 key-value heads, 128256 words), 8 of them.
"""

import argparse
import time

import torch
import transformers
from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

STEPS, ROUNDS = 50, 5
BATCH = 1
# --size: (hidden, MLP, heads, key-value heads, words); "7b" and "8b" have Llama-2-7B's and Llama-3-8B's layers
SIZES = {
    "small": (2048, 5632, 16, 4, 32000),
    "7b": (4096, 11008, 32, 32, 32000),
    "8b": (4096, 14336, 32, 8, 128256),
}
SIZE = "small"


class Step(torch.nn.Module):
    def __init__(self, step: torch.nn.Module) -> None:
        super().__init__()
        self.step = step

    def forward(self, ids: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return self.step(input_ids=ids, cache_position=position)


def build() -> Step:
    torch.manual_seed(0)
    hidden, mlp, heads, kv_heads, words = SIZES[SIZE]
    config = transformers.LlamaConfig(
        hidden_size=hidden,
        intermediate_size=mlp,
        num_hidden_layers=8,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        vocab_size=words,
        max_position_embeddings=512,
    )
    model = transformers.LlamaForCausalLM(config).to(
        "cuda", torch.bfloat16
    )  # (the cache is made on its device)
    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    step = TorchExportableModuleWithStaticCache(model, batch_size=BATCH, max_cache_len=512)
    return Step(step).eval()


def inputs(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randint(0, 32000, (BATCH, 1), device="cuda"), torch.tensor([8 + i % 400], device="cuda")


def per_step_ms(fn) -> float:
    rounds = []
    for r in range(ROUNDS):
        steps = [inputs(r * STEPS + i) for i in range(STEPS)]  # (made before the clock starts)
        for x in steps[:5]:
            fn(*x)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for x in steps:
            fn(*x)
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - start) * 1e3 / STEPS)
    return sorted(rounds)[ROUNDS // 2]


def gpu_time(fn, steps: int = 10) -> str:
    """Kernel time per step from torch.profiler (graph replays included) and the kernels costing most."""
    xs = [inputs(i) for i in range(steps)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for x in xs:
            fn(*x)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    total: dict[str, list[float]] = {}
    for e in kernels:
        total.setdefault(e.name[:60], []).append(e.device_time)
    top = sorted(total.items(), key=lambda kv: -sum(kv[1]))[:8]
    lines = [f"  {sum(t) / steps:8.1f} us/step  {len(t) / steps:5.1f}x  {name}" for name, t in top]
    per_step = sum(e.device_time for e in kernels) / steps
    return f"GPU {per_step:.1f} us per step in {len(kernels) / steps:.0f} kernels\n" + "\n".join(lines)


def without_pdl(step: Step) -> pygraph.CompiledModel:
    """pygraph with plain graph edges (no programmatic dependent launch, backend/cuda/compile.py)."""
    with knobs.scope(pdl="off"):
        return pygraph.export_and_compile(step, inputs(0))


def main() -> None:
    global BATCH, SIZE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", choices=SIZES, default=SIZE)
    parser.add_argument("--systems", default="eager,pygraph,no-pdl,ro")
    args = parser.parse_args()
    BATCH, SIZE = args.batch, args.size
    with torch.no_grad():
        step = build()
        check = [inputs(i) for i in range(3)]
        reference = [step(*x).float() for x in check]
        systems = {
            "eager": lambda: step,
            "pygraph": lambda: pygraph.export_and_compile(step, inputs(0)),
            "no-pdl": lambda: without_pdl(step),
            "ro": lambda: torch.compile(step, mode="reduce-overhead"),
        }
        for name in args.systems.split(","):
            make = systems[name]
            start = time.perf_counter()
            fn = make()
            for x in check:  # (warm-up; the cache positions they write are written again below)
                fn(*x)
            torch.cuda.synchronize()
            built = time.perf_counter() - start
            errors = [relative_error(fn(*x).float(), ref) for x, ref in zip(check, reference, strict=True)]
            ms = per_step_ms(fn)
            print(
                f"{name:8s} {ms:.4f} ms per step; built and warmed in {built:.1f} s; logits against eager's "
                f"(bfloat16 both): {max(errors):.1e}",
                flush=True,
            )
            print(gpu_time(fn), flush=True)
            if name == "pygraph":
                print(f"         {fn.stats()}", flush=True)
            del fn
            torch._dynamo.reset()


if __name__ == "__main__":
    main()
