"""The bundled example: a transformer block compiled, explained, run and checked against eager."""

from __future__ import annotations

import collections
import re

import torch

import pygraph

from ..metrics import relative_error


class ExampleBlock(torch.nn.Module):
    """Pre-norm transformer block: attention (scaled_dot_product_attention), layer norm, GELU MLP."""

    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))


_OP = re.compile(
    r'^\s*(?:%\S+ = )?"?((?:torch\.aten|torch\.operator|pygraph|func\.call)[\w.]*)', re.MULTILINE
)


def _op_census(text: str) -> str:
    """The most frequent compute ops of a stage (constants and list plumbing left out)."""
    ops = collections.Counter(_OP.findall(text))
    return ", ".join(f"{n} {name}" for name, n in ops.most_common(8))


def main(print_ir: bool = False) -> int:
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = ExampleBlock().to(device).eval()
    x = torch.randn(2, 16, 64, device=device)
    print(f"pygraph example: {ExampleBlock.__doc__}")
    print(f"input {tuple(x.shape)}, device {device}")
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,))
        print(f"target: {compiled.target}\n")
        for stage in pygraph.STAGES:
            text = compiled.ir(stage)
            print(f"stage {stage}: {_op_census(text)}")
            if print_ir:
                print(text)
        classes = collections.Counter(re.findall(r'pygraph.class = "(\w+)"', compiled.ir("pygraph")))
        print(f"\nclassification: {dict(classes)}")
        print(f"arena: {compiled.plan.arena_bytes} bytes\n")
        print(compiled.explain())
        errors = []
        for _ in range(3):
            x = torch.randn_like(x)
            errors.append(relative_error(compiled(x), model(x)))
        print(f"\nstats after 3 calls: {compiled.stats()}\n")
    worst = max(errors)
    ok = worst <= 1e-4
    print(
        f"check against eager on 3 random inputs: worst relative error {worst:.2e} (fp32 passes at 1e-4): {'OK' if ok else 'FAILED'}"
    )
    return 0 if ok else 1
