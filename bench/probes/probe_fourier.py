"""Models whose layers are FFTs (pygraph/pair_ops.py): a Fourier neural operator (four spectral layers on a
64 x 64 grid, as `neuraloperator`'s FNO2d), Hugging Face's FNet encoder, and a spectrogram front end
(`torch.stft`, magnitudes, a small convolutional classifier) under eager, torch.compile, reduce-overhead and
pygraph, float32, TF32 off; per call queued, error against eager, and pygraph's graph coverage.

    python3 bench/probes/probe_fourier.py [--batch 8] [--profile] [names...]

`--profile`: each system's GPU kernels by total time over 20 calls (torch.profiler, graph replays included).
"""

import argparse
import sys
import time
from pathlib import Path

import torch
import transformers
from timing import queued_us
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "frontend")]
from test_complex_as_real import SpectralBlock  # noqa: E402

import pygraph  # noqa: E402
from pygraph.metrics import relative_error  # noqa: E402


class FNO2d(nn.Module):
    def __init__(self, width: int = 32, modes: int = 12, layers: int = 4) -> None:
        super().__init__()
        self.lift = nn.Conv2d(3, width, 1)
        self.layers = nn.ModuleList(SpectralBlock(width, modes) for _ in range(layers))
        self.project = nn.Sequential(nn.Conv2d(width, 128, 1), nn.GELU(), nn.Conv2d(128, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.lift(x)
        for layer in self.layers:
            x = layer(x)
        return self.project(x)


class FNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        config = transformers.FNetConfig(
            vocab_size=1000,
            hidden_size=256,
            num_hidden_layers=4,
            intermediate_size=1024,
            max_position_embeddings=512,
        )
        self.model = transformers.FNetModel(config)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, return_dict=False)[0]


class Spectrogram(nn.Module):
    def __init__(self, n_fft: int = 400, hop: int = 160) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(8),
            nn.Flatten(),
            nn.Linear(1024, 10),
        )

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(audio, self.n_fft, self.hop, window=self.window, return_complex=True)
        return self.net(spec.abs().add(1e-6).log()[:, None])


def workloads(batch: int) -> dict:
    return {
        "fno2d": (FNO2d(), lambda: (torch.randn(batch, 3, 64, 64, device="cuda"),)),
        "fnet": (FNet(), lambda: (torch.randint(0, 1000, (batch, 128), device="cuda"),)),
        "spectrogram": (Spectrogram(), lambda: (torch.randn(batch, 16000, device="cuda"),)),
    }


def kernel_table(call, calls: int = 20) -> str:
    call()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profiler:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    return profiler.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args}")
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    for name, (model, draw) in workloads(args.batch).items():
        if args.names and name not in args.names:
            continue
        model = model.cuda().eval()
        inputs = [draw() for _ in range(4)]
        with torch.no_grad():
            reference = model(*inputs[1])
            systems = {"eager": (model, 0.0)}
            start = time.perf_counter()
            compiled = pygraph.export_and_compile(model, inputs[0])
            compiled(*inputs[0])
            systems["pygraph"] = (compiled, time.perf_counter() - start)
            for mode in ("default", "reduce-overhead"):
                start = time.perf_counter()
                fn = torch.compile(model, mode=mode)
                try:
                    for _ in range(3):
                        fn(*inputs[0])
                except Exception as exc:  # (reported, the others go on)
                    print(f"{name}: compile {mode} failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                    continue
                systems[f"compile {mode}"] = (fn, time.perf_counter() - start)
            coverage = compiled.explain().coverage["after"]
            print(f"{name}: pygraph coverage {coverage:.3f}, stats {compiled.stats()['nodes']}")
            for system, (fn, build_s) in systems.items():
                error = relative_error(fn(*inputs[1]), reference)
                per_call = queued_us(lambda i, fn=fn, inputs=inputs: fn(*inputs[i % 4]), calls=200)
                print(
                    f"  {system:26s} {per_call:9.1f} us/call queued  err {error:.1e}  build {build_s:5.1f} s"
                )
                if args.profile:
                    print(kernel_table(lambda fn=fn, x=inputs[0]: fn(*x)))


if __name__ == "__main__":
    main()
