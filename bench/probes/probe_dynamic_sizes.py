"""A serving loop whose batch size changes every call (1 to 32 sequences, drawn at random): pygraph with
calls padded to the next power of two's program (pygraph/padding.py), pygraph compiling every size
(PYGRAPH_PADDING=off: at most PYGRAPH_MAX_VARIANTS programs, eager past them), reduce-overhead (its
dynamic recompile, then a recording per size) and eager, on a small GPT-2 in float32.

For each system: the stream's first pass (compiles and recordings included), a second pass of the same
sizes (the steady state), the programs compiled, and the error against eager at a few sizes.

    python3 bench/probes/probe_dynamic_sizes.py [--calls 300] [--layers 4] [--max-batch 32]
"""

import argparse
import random
import time
import warnings

import torch
import transformers
from torch.export import Dim

import pygraph
from pygraph.knobs import knobs
from pygraph.metrics import relative_error


class Logits(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, return_dict=False)[0]


def stream_s(fn, batches: list[torch.Tensor]) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    for ids in batches:
        fn(ids)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=32)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args}")
    warnings.simplefilter("ignore")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=args.layers, n_embd=256, n_head=4, vocab_size=1000, n_positions=128, use_cache=False
    )
    model = Logits(transformers.GPT2LMHeadModel(config)).cuda().eval()
    rng = random.Random(0)
    sizes = [rng.randint(1, args.max_batch) for _ in range(args.calls)]
    batches = [torch.randint(0, 1000, (n, args.length), device="cuda") for n in sizes]
    example = torch.randint(0, 1000, (8, args.length), device="cuda")
    dims = {"ids": {0: Dim("batch", min=1, max=args.max_batch)}}
    print(f"{len(set(sizes))} distinct sizes in {args.calls} calls")

    def pygraph_system(padding: str):
        def build():
            with knobs.scope(padding=padding):
                return pygraph.export_and_compile(model, (example,), dynamic_shapes=dims)

        return build

    systems = {
        "eager": lambda: model,
        "reduce-overhead": lambda: torch.compile(model, mode="reduce-overhead"),
        "pygraph (padded)": pygraph_system("auto"),
        "pygraph (each size)": pygraph_system("off"),
    }
    with torch.no_grad():
        for name, build in systems.items():
            torch._dynamo.reset()
            start = time.perf_counter()
            fn = build()
            built = time.perf_counter() - start
            first = stream_s(fn, batches)
            second = stream_s(fn, batches)
            errors = [relative_error(fn(b), model(b)) for b in batches[:8]]
            programs = (1 + len(fn._variants)) if hasattr(fn, "_variants") else ""
            print(
                f"{name:22s} build {built:6.1f} s  first pass {first:6.1f} s  steady {second / args.calls * 1e3:7.3f}"
                f" ms/call  programs {programs!s:3s} worst error {max(errors):.1e}"
            )
            del fn
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
