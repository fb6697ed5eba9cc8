"""One decoding step of a Llama-style model in bfloat16 at batch 1 (the workload CUDA graphs exist for: one
token through every layer, products of one row), with transformers' static cache held as buffers and
written in place: eager, reduce-overhead and pygraph, time per step and the logits against eager's.

On the GPU machine: `python3 bench/probes/probe_decode.py` (output: bench/results/probe-decode-s2[5-7]*-h200.log:
per step, the time, the GPU time from torch.profiler and the kernels costing most; "no PDL" is pygraph with
plain graph edges).
The model has random weights: hidden 2048, 8 layers, 16 heads over 4 key-value heads, MLP 5632, 32000
words, a cache of 512 positions; each timed step writes the next position.
"""

import time

import torch
import transformers
from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

STEPS, ROUNDS = 50, 5


class Step(torch.nn.Module):
    def __init__(self, step: torch.nn.Module) -> None:
        super().__init__()
        self.step = step

    def forward(self, ids: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return self.step(input_ids=ids, cache_position=position)


def build() -> Step:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=2048,
        intermediate_size=5632,
        num_hidden_layers=8,
        num_attention_heads=16,
        num_key_value_heads=4,
        vocab_size=32000,
        max_position_embeddings=512,
    )
    model = transformers.LlamaForCausalLM(config).to(
        "cuda", torch.bfloat16
    )  # (the cache is made on its device)
    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    step = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=512)
    return Step(step).eval()


def inputs(i: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randint(0, 32000, (1, 1), device="cuda"), torch.tensor([8 + i % 400], device="cuda")


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
    with torch.no_grad():
        step = build()
        check = [inputs(i) for i in range(3)]
        reference = [step(*x).float() for x in check]
        systems = {
            "eager": lambda: step,
            "pygraph": lambda: pygraph.export_and_compile(step, inputs(0)),
            "no PDL": lambda: without_pdl(step),
            "ro": lambda: torch.compile(step, mode="reduce-overhead"),
        }
        for name, make in systems.items():
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
