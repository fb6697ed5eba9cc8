"""Decoding steps of many decoder families: transformers' static-cache export recipe
(`TorchExportableModuleWithStaticCache`, the cache held as buffers and written in place through the cache
object), compiled by pygraph and called at twelve positions against eager; the logits and the caches
compared after each family's run. Small random models (hidden 64, 2 layers, 4 query heads over 2 key
heads where the family has them).

`python bench/probes/probe_decoders.py [--device cuda] [--dtype bfloat16] [--cache 40] [--batch B] [FAMILY ...]`
(`--batch`: B sequences a step, their products B rows; output:
bench/results/probe-decoders-s25-*.log; with PYGRAPH_SPLIT_KEYS=16 and a cache of 40 positions, every
attention split in three, probe-decoders-s27-split16-*.log). Models are built on their device and in their dtype: `.to()`
would replace the buffers but not the cache object's tensors.
"""

import argparse

import torch
import transformers
from probe_decode import Step
from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

import pygraph
from pygraph.metrics import relative_error

BASE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=100,
    max_position_embeddings=32,
)
FAMILIES = {
    "llama": ("LlamaForCausalLM", "LlamaConfig", {}),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", {}),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", {"head_dim": 16}),
    "mistral": ("MistralForCausalLM", "MistralConfig", {"sliding_window": 8}),
    "phi3": ("Phi3ForCausalLM", "Phi3Config", {"pad_token_id": 0}),
    "gemma": ("GemmaForCausalLM", "GemmaConfig", {"head_dim": 16}),
    "gemma2": ("Gemma2ForCausalLM", "Gemma2Config", {"head_dim": 16, "sliding_window": 8}),
    "gemma3": ("Gemma3ForCausalLM", "Gemma3TextConfig", {"head_dim": 16, "sliding_window": 8}),
    "smollm3": ("SmolLM3ForCausalLM", "SmolLM3Config", {"pad_token_id": 0}),
    "olmo2": ("Olmo2ForCausalLM", "Olmo2Config", {}),
    "granite": ("GraniteForCausalLM", "GraniteConfig", {}),
    "stablelm": ("StableLmForCausalLM", "StableLmConfig", {}),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig", {"num_key_value_heads": 4}),
    "cohere": ("CohereForCausalLM", "CohereConfig", {}),
}
POSITIONS = 12  # past the sliding windows of 8


def build(family: str, device: str, dtype: torch.dtype, cache: int = 16, batch: int = 1) -> Step:
    cls_name, config_name, extra = FAMILIES[family]
    torch.manual_seed(0)
    config = getattr(transformers, config_name)(**{**BASE, **extra})
    with torch.device(device):
        model = getattr(transformers, cls_name)(config).to(dtype).eval()
    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    return Step(TorchExportableModuleWithStaticCache(model, batch_size=batch, max_cache_len=cache)).eval()


def run(family: str, device: str, dtype: torch.dtype, cache: int, batch: int = 1) -> str:
    """PASS where every step's logits are within 1e-5 of eager's in float32, or in half precision within
    twice eager's own error against the model in float32 (as the sweep judges)."""
    compiled_model, eager_model = (build(family, device, dtype, cache, batch) for _ in range(2))
    exact_model = build(family, device, torch.float32, cache, batch) if dtype != torch.float32 else None

    def token(i: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, 100, (batch, 1), generator=torch.Generator().manual_seed(i))
        return ids.to(device), torch.tensor([i], device=device)

    try:
        worst, bound = 0.0, 1e-5
        with torch.no_grad():
            compiled = pygraph.export_and_compile(compiled_model, token(0), target="auto")
            for i in range(POSITIONS):
                got, eager = compiled(*token(i)).float(), eager_model(*token(i)).float()
                if exact_model is None:
                    worst = max(worst, relative_error(got, eager))
                    continue
                exact = exact_model(*token(i))
                worst = max(worst, relative_error(got, exact))
                bound = max(bound, 2 * relative_error(eager, exact), torch.finfo(dtype).eps)
        caches = [
            relative_error(a.float(), b.float())
            for a, b in zip(compiled_model.buffers(), eager_model.buffers(), strict=True)
            if a.dim() == 4
        ]
        status = "PASS" if worst <= bound else "MISMATCH"
        return f"{status} {family}: logits {worst:.1e} (bound {bound:.1e}), caches against eager's {max(caches):.1e}"
    except Exception as error:  # (the next family runs)
        return f"FAIL {family}: {type(error).__name__}: {str(error)[:300]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--cache", type=int, default=16, help="positions of the static cache")
    parser.add_argument("--batch", type=int, default=1, help="sequences decoded at once")
    parser.add_argument("families", nargs="*", default=list(FAMILIES))
    args = parser.parse_args()
    for family in args.families:
        print(run(family, args.device, getattr(torch, args.dtype), args.cache, args.batch), flush=True)


if __name__ == "__main__":
    main()
