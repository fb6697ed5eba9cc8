"""Time per call of a model that decides in Python from its data (an MLP of 8 layers, 64 wide, batch 8: bound
by the host, whose last layer depends on `if x.mean() > 0:`), on the GPU: eager, reduce-overhead (which breaks its graph at the condition) and
pygraph (one graph, the condition read back and checked after it), each on inputs that take the traced way,
then mixes of the two ways: alternating, in runs of 8, and one call in 8 taking the other way (pygraph: the
other way's program is traced on its first call; a call tries first the program the last calls took, which
changes after two calls in a row take the other way, and one whose check fails runs the other; "traced
first" keeps the traced program first). `python bench/probes/probe_branches.py`
(bench/results/probe-branches-*.log)."""

from __future__ import annotations

import time
import warnings

import torch
from torch import nn

import pygraph


class Gated(nn.Module):
    def __init__(self, width: int = 64, depth: int = 8) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.up = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for layer in self.layers:
            h = torch.relu(layer(h)) + h
        if x.mean() > 0:
            return self.up(h).tanh()
        return h * 0.5


def per_call_us(fn, inputs: list[torch.Tensor], rounds: int = 5, calls: int = 200) -> float:
    """The fastest round's mean wall time per call, synchronising after each round."""
    for x in inputs[:10]:
        fn(x)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main() -> None:
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    model = Gated().cuda().eval()
    positive = [torch.rand(8, 64, device="cuda") + 0.1 for _ in range(8)]
    negative = [-x for x in positive]
    mixes = {
        "traced way": positive,
        "alternating ways": [x for pair in zip(positive, negative, strict=True) for x in pair],
        "runs of 8": positive + negative,
        "1 in 8 the other way": [negative[0], *positive[1:]],
    }
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = pygraph.export_and_compile(model, (positive[0],), target="cuda")
        fixed = pygraph.export_and_compile(model, (positive[0],), target="cuda")
        fixed._took = lambda way: None  # the traced program always tried first, for comparison
        ro = torch.compile(model, mode="reduce-overhead")
        for name, inputs in mixes.items():
            for x in inputs[:2]:
                assert torch.allclose(compiled(x), model(x), rtol=1e-4, atol=1e-5)
            times = {
                "eager": per_call_us(model, inputs),
                "ro": per_call_us(ro, inputs),
                "pygraph": per_call_us(compiled, inputs),
                "pygraph traced first": per_call_us(fixed, inputs),
            }
            print(f"{name}: " + ", ".join(f"{k} {v:.1f} us" for k, v in times.items()))


if __name__ == "__main__":
    main()
