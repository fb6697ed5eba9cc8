"""A Llama-style model whose rotary embedding multiplies complex numbers (Meta's reference code, torchtitan),
under eager, torch.compile, reduce-overhead and pygraph (frontend/complex_as_real.py); and pygraph on the
same model with the rotary embedding written in reals (`rotate_half`), which should cost the same.

    python3 bench/probes/probe_complex_rotary.py [--dtype bfloat16] [--batch 1] [--seq 128]
"""

import argparse
import sys
import time

import torch
from timing import gpu_us, queued_us
from torch import nn

sys.path[:0] = ["tests", "tests/frontend"]
from test_complex_as_real import apply_rotary_emb, precompute_freqs_cis  # noqa: E402

import pygraph  # noqa: E402
from pygraph.metrics import relative_error  # noqa: E402


def rotate_half_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    """The same rotation in reals, on interleaved pairs as `apply_rotary_emb` takes them."""
    cos = freqs_cis.real.repeat_interleave(2, -1)[None, :, None]
    sin = freqs_cis.imag.repeat_interleave(2, -1)[None, :, None]

    def rotate(x: torch.Tensor) -> torch.Tensor:
        pairs = x.float().unflatten(-1, (-1, 2))
        turned = torch.stack([-pairs[..., 1], pairs[..., 0]], -1).flatten(-2)
        return (x.float() * cos + turned * sin).type_as(x)

    return rotate(xq), rotate(xk)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, rotary) -> None:
        super().__init__()
        self.heads, self.head_dim, self.rotary = heads, dim // heads, rotary
        self.attention_norm, self.ffn_norm = nn.RMSNorm(dim), nn.RMSNorm(dim)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        hidden = 4 * dim * 2 // 3
        self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        h = self.attention_norm(x)
        q, k, v = (w(h).view(b, s, self.heads, self.head_dim) for w in (self.wq, self.wk, self.wv))
        q, k = self.rotary(q, k, freqs_cis)
        out = nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
        )
        x = x + self.wo(out.transpose(1, 2).reshape(b, s, -1))
        h = self.ffn_norm(x)
        return x + self.w2(nn.functional.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, rotary, dim: int = 512, heads: int = 8, layers: int = 4, max_seq: int = 512) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(dim, heads, rotary) for _ in range(layers))
        self.norm = nn.RMSNorm(dim)
        self.register_buffer("freqs_cis", precompute_freqs_cis(dim // heads, max_seq), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        freqs_cis = self.freqs_cis[: x.shape[1]]
        for layer in self.layers:
            x = layer(x, freqs_cis)
        return self.norm(x)


def build(rotary, dtype: torch.dtype) -> Llama:
    torch.manual_seed(0)
    model = Llama(rotary).cuda().eval()
    for module in model.modules():
        if not isinstance(module, Llama):
            module.to(dtype)  # (the complex buffer stays complex64)
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    inputs = [torch.randn(args.batch, args.seq, 512, device="cuda", dtype=dtype) for _ in range(4)]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args}")

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    check = build(apply_rotary_emb, torch.float32)
    x32 = inputs[0].float()
    for name, rotary in (("complex", apply_rotary_emb), ("reals", rotate_half_emb)):
        model = build(rotary, torch.float32)
        compiled = pygraph.export_and_compile(model, (x32,))
        with torch.no_grad():
            print(
                f"float32 check, pygraph ({name} rotary) against eager: {relative_error(compiled(x32), check(x32)):.2e}"
            )

    systems = {}
    with torch.no_grad():
        for name, rotary in (("complex", apply_rotary_emb), ("reals", rotate_half_emb)):
            model = build(rotary, dtype)
            start = time.perf_counter()
            compiled = pygraph.export_and_compile(model, (inputs[0],))
            compiled(inputs[0])
            systems[f"pygraph ({name} rotary)"] = (compiled, time.perf_counter() - start)
            if name == "complex":
                systems["eager"] = (model, 0.0)
                for mode in ("default", "reduce-overhead"):
                    start = time.perf_counter()
                    fn = torch.compile(model, mode=mode)
                    for _ in range(3):
                        fn(inputs[0])
                    systems[f"compile {mode}"] = (fn, time.perf_counter() - start)
        reference = systems["eager"][0](inputs[1])
        for name, (fn, build_s) in systems.items():
            error = relative_error(fn(inputs[1]).float(), reference.float())
            per_call = queued_us(lambda i, fn=fn: fn(inputs[i % 4]))
            gpu = gpu_us(lambda fn=fn: fn(inputs[0])) if name.startswith("eager") else float("nan")
            print(
                f"{name:30s} {per_call:8.1f} us/call queued  gpu {gpu:7.1f} us  err {error:.1e}  build {build_s:5.1f} s"
            )


if __name__ == "__main__":
    main()
