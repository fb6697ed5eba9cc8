"""The benchmark's workloads (`../shared/docs/benchmark.md`), built offline with random weights.

Each workload builds a model in eval mode and a function that draws fresh inputs, so that callers can
rotate inputs as a user with new tensors would. Hugging Face models are built with `use_cache=False`
and wrapped to return their first output as a plain tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

Inputs = tuple[torch.Tensor, ...]


@dataclass(frozen=True)
class Workload:
    name: str
    suite: str
    build: Callable[[torch.device], tuple[torch.nn.Module, Callable[[], Inputs]]]
    needs: str = ""  # the package the model comes from ("torchvision", "timm", "transformers")


class FirstOutput(torch.nn.Module):
    """A Hugging Face model called with `return_dict=False`, returning its first output (logits or hidden state)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        names = ("input_ids", "attention_mask", "decoder_input_ids")
        return self.model(**dict(zip(names, inputs, strict=False)), return_dict=False)[0]


def _ids(batch: int, length: int, device: torch.device) -> Callable[[], Inputs]:
    return lambda: (torch.randint(0, 1000, (batch, length), device=device),)


def _seq2seq(batch: int, length: int, device: torch.device) -> Callable[[], Inputs]:
    def draw() -> Inputs:
        ids = torch.randint(0, 1000, (batch, length), device=device)
        mask = torch.ones(batch, length, dtype=torch.int64, device=device)
        return ids, mask, torch.randint(0, 1000, (batch, length), device=device)

    return draw


def _images(batch: int, size: int, device: torch.device) -> Callable[[], Inputs]:
    return lambda: (torch.randn(batch, 3, size, size, device=device),)


def _hf(config_name: str, model_name: str, inputs: Callable, **config: object) -> Callable:
    def build(device: torch.device) -> tuple[torch.nn.Module, Callable[[], Inputs]]:
        import transformers

        cfg = getattr(transformers, config_name)(use_cache=False, **config)
        model = FirstOutput(getattr(transformers, model_name)(cfg))
        return model.to(device).eval(), inputs(device)

    return build


def _timm(name: str, batch: int) -> Callable:
    def build(device: torch.device) -> tuple[torch.nn.Module, Callable[[], Inputs]]:
        import timm

        return timm.create_model(name, pretrained=False).to(device).eval(), _images(batch, 224, device)

    return build


def _torchvision(name: str, batch: int) -> Callable:
    def build(device: torch.device) -> tuple[torch.nn.Module, Callable[[], Inputs]]:
        import torchvision

        return getattr(torchvision.models, name)().to(device).eval(), _images(batch, 224, device)

    return build


class MLP(torch.nn.Module):
    """8 x (Linear(512, 512), GELU, LayerNorm(512))."""

    def __init__(self) -> None:
        super().__init__()
        layers = [
            m for _ in range(8) for m in (torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.LayerNorm(512))
        ]
        self.layers = torch.nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def _mlp(device: torch.device) -> tuple[torch.nn.Module, Callable[[], Inputs]]:
    return MLP().to(device).eval(), lambda: (torch.randn(1, 512, device=device),)


class PointwiseChain(torch.nn.Module):
    """About 100 pointwise ops over four arrays, staying finite (the `stress` suite's definition)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        for _ in range(15):
            t = torch.tanh(a * b + c) * torch.exp(-d * d) + torch.log1p((a * b + c) ** 2)
            a, b, c, d = b, c, d, t
        return a + b + c + d


def _pointwise(device: torch.device) -> tuple[torch.nn.Module, Callable[[], Inputs]]:
    return PointwiseChain(), lambda: tuple(torch.rand(1 << 20, device=device) for _ in range(4))


class MatmulChain(torch.nn.Module):
    """Four chained fp32 matmuls `x = tanh(x @ w_i)` with 4096 x 4096 weights."""

    def __init__(self) -> None:
        super().__init__()
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.randn(4096, 4096) / 64) for _ in range(4)]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for w in self.weights:
            x = torch.tanh(x @ w)
        return x


def _matmul(device: torch.device) -> tuple[torch.nn.Module, Callable[[], Inputs]]:
    return MatmulChain().to(device).eval(), lambda: (torch.randn(4096, 4096, device=device),)


WORKLOADS = {
    w.name: w
    for w in [
        Workload("mlp", "small", _mlp),
        Workload("resnet18", "small", _torchvision("resnet18", 1), "torchvision"),
        Workload("mobilenetv3_small", "small", _timm("mobilenetv3_small_100", 1), "timm"),
        Workload("vit_tiny", "small", _timm("vit_tiny_patch16_224", 1), "timm"),
        Workload(
            "bert_base",
            "small",
            _hf("BertConfig", "BertModel", lambda dev: _ids(1, 128, dev)),
            "transformers",
        ),
        Workload(
            "gpt2",
            "small",
            _hf("GPT2Config", "GPT2LMHeadModel", lambda dev: _ids(1, 32, dev)),
            "transformers",
        ),
        Workload(
            "xlnet_I1",
            "paper",
            _hf("XLNetConfig", "XLNetLMHeadModel", lambda dev: _ids(1, 128, dev)),
            "transformers",
        ),
        Workload(
            "distilgpt2_I16",
            "paper",
            _hf("GPT2Config", "GPT2LMHeadModel", lambda dev: _ids(16, 128, dev), n_layer=6),
            "transformers",
        ),
        Workload(
            "mobilebert_qa_I128",
            "paper",
            _hf("MobileBertConfig", "MobileBertForQuestionAnswering", lambda dev: _ids(128, 128, dev)),
            "transformers",
        ),
        Workload(
            "debertav2_qa_I1",
            "paper",
            _hf("DebertaV2Config", "DebertaV2ForQuestionAnswering", lambda dev: _ids(1, 128, dev)),
            "transformers",
        ),
        Workload(
            "mt5_I16",
            "paper",
            _hf("MT5Config", "MT5ForConditionalGeneration", lambda dev: _seq2seq(16, 128, dev)),
            "transformers",
        ),
        Workload(
            "blenderbot_small_I64",
            "paper",
            _hf(
                "BlenderbotSmallConfig",
                "BlenderbotSmallForConditionalGeneration",
                lambda dev: _seq2seq(64, 128, dev),
            ),
            "transformers",
        ),
        Workload("lcnet_050_I256", "paper", _timm("lcnet_050", 256), "timm"),
        Workload("alexnet_I2", "paper", _torchvision("alexnet", 2), "torchvision"),
        Workload("densenet121_I64", "paper", _torchvision("densenet121", 64), "torchvision"),
        Workload("pointwise_1m", "stress", _pointwise),
        Workload("matmul_4k", "stress", _matmul),
    ]
}
SUITES = ("small", "paper", "stress")


def select(suite: str, names: str | None = None) -> list[Workload]:
    """Workloads of `suite` ("all" for every suite), restricted to the comma-separated `names` if given."""
    if suite not in (*SUITES, "all"):
        raise ValueError(f"suite must be one of {', '.join(SUITES)} or all, not {suite}")
    chosen = [w for w in WORKLOADS.values() if suite == "all" or w.suite == suite]
    if names:
        wanted = names.split(",")
        unknown = [n for n in wanted if n not in WORKLOADS]
        if unknown:
            raise ValueError(f"unknown workloads: {', '.join(unknown)} (known: {', '.join(WORKLOADS)})")
        chosen = [WORKLOADS[n] for n in wanted]
    return chosen
