"""Gathers as generated kernels (`pygraph/passes/gathers.py`) on the GPU: results against eager, GPU time
per call with the gather fused (bounds checked by `trap_unless`), fused without the trap (the helper a
no-op: the check's cost) and left to ATen (the vendor call before this change), and what an index out of
range does, in pygraph and in eager (each in a subprocess: the CUDA context does not survive either).

    python3 bench/probes/probe_gather.py
"""

import subprocess
import sys

import torch

import pygraph
from pygraph.passes import gathers
from pygraph.tools.bench import _profile

VOCAB, DIM = 30522, 768
_NO_TRAP = "@triton.jit\ndef trap_unless(ok, index):\n    return index\n\n\n"


class Embeddings(torch.nn.Module):
    """BERT's: token, position and token-type embeddings summed, then a layer norm."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, DIM)
        self.pos = torch.nn.Embedding(512, DIM)
        self.typ = torch.nn.Embedding(2, DIM)
        self.norm = torch.nn.LayerNorm(DIM)

    def forward(self, ids: torch.Tensor, positions: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        return self.norm(self.tok(ids) + self.pos(positions) + self.typ(types))


class RelativeScores(torch.nn.Module):
    """DeBERTa's c2p term: scores plus a gather of position scores, then softmax; and `x[:, idx]` (index)
    with negative indices."""

    def forward(self, scores: torch.Tensor, c2p: torch.Tensor, pos: torch.Tensor, idx: torch.Tensor):
        index = pos.expand(scores.shape)
        return torch.softmax(scores + torch.gather(c2p, -1, index), -1), scores[:, idx] * 2


def embedding_inputs(batch: int, length: int) -> tuple[torch.Tensor, ...]:
    ids = torch.randint(0, VOCAB, (batch, length), device="cuda")
    positions = torch.arange(length, device="cuda").expand(batch, length)
    return ids, positions, torch.randint(0, 2, (batch, length), device="cuda")


def relative_inputs(heads: int, length: int) -> tuple[torch.Tensor, ...]:
    scores = torch.randn(heads, length, length, device="cuda")
    c2p = torch.randn(heads, length, 2 * length, device="cuda")
    pos = (torch.arange(length)[:, None] - torch.arange(length)[None, :] + length).clamp(0, 2 * length - 1)
    idx = torch.randint(-length, length, (length // 2,), device="cuda")
    return scores, c2p, pos[None].cuda(), idx


def variant(name: str) -> None:
    """Sets what compilations do with gathers: `kernel` (this change), `no-trap`, `vendor` (ATen)."""
    gathers.TRAP_HELPER = _NO_TRAP if name == "no-trap" else _TRAP_HELPER
    gathers.refusal = (
        (lambda op: "probe" if op.operation.name.split(".")[-1] in _NAMES else None)
        if name == "vendor"
        else _REFUSAL
    )


_TRAP_HELPER, _REFUSAL = gathers.TRAP_HELPER, gathers.refusal
_NAMES = {"embedding", "index_select", "gather", "Tensor"}


def relative_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    return ((got.double() - ref.double()).norm() / ref.double().norm()).item()


def measure(label: str, model: torch.nn.Module, draw) -> None:
    inputs = [draw() for _ in range(4)]
    for name in ("kernel", "no-trap", "vendor"):
        variant(name)
        with torch.no_grad():
            compiled = pygraph.export_and_compile(model, inputs[0])
            refs = model(*inputs[1])
            outs = compiled(*inputs[1])
        refs, outs = (refs,) if torch.is_tensor(refs) else refs, (outs,) if torch.is_tensor(outs) else outs
        errors = ", ".join(f"{relative_error(o, r):.1e}" for o, r in zip(outs, refs, strict=True))
        profiled = _profile(compiled, inputs, calls=100)
        top = ", ".join(f"{k['name'][:48]} {k['us']:.2f}" for k in profiled["top"][:4])
        print(
            f"{label:34s} {name:8s} kernels {profiled['kernels']:.0f}  gpu {profiled['gpu_ms'] * 1e3:7.2f} us/call  "
            f"err {errors}  ({top})",
            flush=True,
        )
    variant("kernel")


def bad(mode: str) -> None:
    """An index out of range (`mode`: pygraph or eager), reported as each raises it."""
    torch.manual_seed(0)
    model = Embeddings().cuda().eval()
    ids, positions, types = embedding_inputs(1, 128)
    run = model
    if mode == "pygraph":
        with torch.no_grad():
            run = pygraph.export_and_compile(model, (ids, positions, types))
            run(ids, positions, types)
        torch.cuda.synchronize()
    ids[0, 5] = VOCAB + 7
    try:
        with torch.no_grad():
            out = run(ids, positions, types)
        print(f"{mode}: the call returned", flush=True)
        torch.cuda.synchronize()
        print(f"{mode}: synchronized, NO ERROR; out finite: {bool(out.isfinite().all())}", flush=True)
    except Exception as exc:  # (the probe reports whatever it is)
        print(f"{mode}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), flush=True)
    embeddings = Embeddings().cuda().eval()
    for batch, length in ((1, 128), (32, 512)):
        measure(
            f"embeddings [{batch}, {length}] x {DIM}",
            embeddings,
            lambda b=batch, n=length: embedding_inputs(b, n),
        )
    for heads, length in ((12, 128),):
        measure(
            f"c2p gather + softmax [{heads}, {length}]",
            RelativeScores(),
            lambda h=heads, n=length: relative_inputs(h, n),
        )
    for mode in ("pygraph", "eager"):
        result = subprocess.run(
            [sys.executable, __file__, "bad", mode], capture_output=True, text=True, timeout=300, check=False
        )
        lines = [
            line for line in result.stdout.splitlines() + result.stderr.splitlines() if mode in line[:10]
        ]
        print("\n".join(lines) or f"{mode}: exit {result.returncode}: {result.stderr[-300:]}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["bad"]:
        bad(sys.argv[2])
    else:
        main()
