"""Models in no suite: timm image models of many families, compiled for the GPU and compared with eager.

Usage (GPU machine): `python3 bench/probes/probe_timm.py [--shard K/N] [names...]`. Each model is built with
random weights in eval mode, compiled with `target="cuda"` on a batch of 2 images of its default size,
and called on two fresh batches; TF32 is off and the error is the design's relative error against eager,
with eager's and pygraph's own errors against the model in float64 beside it. One line per model: PASS
or FAIL with the error's first line, and the time taken.
"""

from __future__ import annotations

import argparse
import copy
import time
import traceback

import torch

import pygraph
from pygraph.metrics import relative_error

MODELS = [
    "convnext_atto",
    "efficientnet_b0",
    "regnetx_002",
    "mobilevit_xxs",
    "deit_tiny_patch16_224",
    "swin_tiny_patch4_window7_224",
    "levit_128s",
    "resnest14d",
    "ghostnet_100",
    "coat_lite_tiny",
    "cait_xxs24_224",
    "xcit_nano_12_p16_224",
    "efficientformer_l1",
    "edgenext_xx_small",
    "mobilenetv4_conv_small",
    "repvgg_a0",
    "dla34",
    "hrnet_w18_small",
    "inception_v3",
    "fastvit_t8",
    "ese_vovnet19b_dw",
    "gernet_s",
    "twins_svt_small",
    "pit_ti_224",
    "crossvit_tiny_240",
    "visformer_tiny",
    "nf_resnet26",
    "poolformer_s12",
    "mixer_s16_224",
    "tinynet_e",
    "sequencer2d_s",
    "maxvit_nano_rw_256",
]


def run(name: str) -> str:
    import timm

    torch.manual_seed(0)
    start = time.time()
    try:
        model = timm.create_model(name, pretrained=False).cuda().eval()
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))

        def images() -> torch.Tensor:
            return torch.randn(2, *size, device="cuda")

        exact = copy.deepcopy(model).double()
        with torch.no_grad():
            compiled = pygraph.export_and_compile(model, (images(),), target="cuda")
            worst = eager64 = ours64 = 0.0
            for _ in range(2):
                x = images()
                ours, eager, reference = compiled(x), model(x), exact(x.double())
                worst = max(worst, relative_error(ours, eager))
                eager64 = max(eager64, relative_error(eager.double(), reference))
                ours64 = max(ours64, relative_error(ours.double(), reference))
        stats = compiled.stats()
        verdict = "PASS" if worst <= 1e-4 else "FAIL"
        return (
            f"{verdict} {name} err={worst:.1e} (against float64: eager {eager64:.1e}, pygraph {ours64:.1e}) "
            f"graphs={stats.get('graphs')} "
            f"coverage={compiled.explain().coverage['after']:.3f} ({time.time() - start:.0f}s)"
        )
    except Exception as error:  # the survey goes on
        where = traceback.extract_tb(error.__traceback__)[-1]
        first = str(error).splitlines()[0] if str(error) else ""
        return (
            f"FAIL {name} {type(error).__name__}: {first[:300]} [{where.filename.split('/')[-1]}:{where.lineno}] "
            f"({time.time() - start:.0f}s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=MODELS)
    parser.add_argument("--shard", default="0/1", help="K/N: every N-th model from the K-th")
    args = parser.parse_args()
    k, n = (int(v) for v in args.shard.split("/"))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in args.names[k::n]:
        print(run(name), flush=True)


if __name__ == "__main__":
    main()
