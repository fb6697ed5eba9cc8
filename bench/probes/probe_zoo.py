"""Models in no suite: timm and torchvision models of many families, compiled for the GPU and compared with eager.

Usage (GPU machine): `python3 bench/probes/probe_zoo.py [--zoo timm|torchvision] [--dtype float16|bfloat16]
[--shard K/N] [--dynamic-batch] [names...]`.
Each model is built with random weights in eval mode, compiled with `target="cuda"` on example inputs of its
usual size (torchvision's detection models take a list of images, its optical-flow model two frames) and
called on two fresh inputs; TF32 is off and the error is the design's relative error against eager, with
eager's and pygraph's own errors against the model in float64 beside it. One line per model: PASS or FAIL
with the error's first line, and the time taken. With `--dynamic-batch` the batch is declared dynamic and
two calls of 3 and 5 rows follow (padded to 4 and 8 where the rows are independent: pygraph/padding.py).
"""

from __future__ import annotations

import argparse
import copy
import inspect
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

import pygraph
from pygraph.metrics import relative_error

TIMM = [
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

# name -> shape of one example input (a list of shapes: the model takes that many tensors; "images":
# a list of images as one argument, as torchvision's detection models take them).
TORCHVISION: dict[str, Any] = {
    "resnet50": [(2, 3, 224, 224)],
    "resnext50_32x4d": [(2, 3, 224, 224)],
    "wide_resnet50_2": [(2, 3, 224, 224)],
    "efficientnet_v2_s": [(2, 3, 224, 224)],
    "convnext_tiny": [(2, 3, 224, 224)],
    "swin_v2_t": [(2, 3, 256, 256)],
    "maxvit_t": [(2, 3, 224, 224)],
    "vit_b_16": [(2, 3, 224, 224)],
    "regnet_y_400mf": [(2, 3, 224, 224)],
    "mnasnet0_5": [(2, 3, 224, 224)],
    "shufflenet_v2_x0_5": [(2, 3, 224, 224)],
    "squeezenet1_1": [(2, 3, 224, 224)],
    "googlenet": [(2, 3, 224, 224)],
    "mobilenet_v2": [(2, 3, 224, 224)],
    "vgg11_bn": [(2, 3, 224, 224)],
    "fcn_resnet50": [(2, 3, 224, 224)],
    "deeplabv3_mobilenet_v3_large": [(2, 3, 224, 224)],
    "lraspp_mobilenet_v3_large": [(2, 3, 224, 224)],
    "r3d_18": [(2, 3, 8, 112, 112)],
    "s3d": [(1, 3, 16, 224, 224)],
    "mvit_v2_s": [(1, 3, 16, 224, 224)],
    "swin3d_t": [(1, 3, 16, 224, 224)],
    "raft_small": [(1, 3, 224, 224), (1, 3, 224, 224)],
    "fasterrcnn_mobilenet_v3_large_320_fpn": "images",
    "ssdlite320_mobilenet_v3_large": "images",
    "retinanet_resnet50_fpn": "images",
    "fcos_resnet50_fpn": "images",
    "maskrcnn_resnet50_fpn": "images",
    "keypointrcnn_resnet50_fpn": "images",
}


def timm_model(name: str) -> tuple[torch.nn.Module, Callable[[], tuple]]:
    import timm

    model = timm.create_model(name, pretrained=False)
    size = model.pretrained_cfg.get("input_size", (3, 224, 224))
    return model, lambda batch=2: (torch.randn(batch, *size, device="cuda"),)


def torchvision_model(name: str) -> tuple[torch.nn.Module, Callable[[], tuple]]:
    import torchvision

    builder = torchvision.models.get_model_builder(name)
    no_downloads = (
        {"weights_backbone": None} if "weights_backbone" in inspect.signature(builder).parameters else {}
    )
    model = builder(weights=None, **no_downloads)
    shapes = TORCHVISION[name]
    if shapes == "images":
        return model, lambda batch=2: ([torch.rand(3, 320, 320, device="cuda") for _ in range(batch)],)
    return model, lambda batch=2: tuple(torch.randn(batch, *shape[1:], device="cuda") for shape in shapes)


ZOOS = {"timm": (TIMM, timm_model), "torchvision": (list(TORCHVISION), torchvision_model)}


def cast(value: Any, dtype: torch.dtype) -> Any:
    """The floating tensors in `value` in `dtype` (integer ones kept)."""
    return pytree.tree_map_only(torch.Tensor, lambda t: t.to(dtype) if t.is_floating_point() else t, value)


def run(
    name: str,
    build: Callable[[str], tuple[torch.nn.Module, Callable[..., tuple]]],
    dtype: torch.dtype,
    dynamic_batch: bool = False,
) -> str:
    """In float32 a model passes within the design's 1e-4 of eager; in half precision, where eager's own
    rounding shows, if pygraph's error against the model in float64 is at most twice eager's."""
    torch.manual_seed(0)
    start = time.time()
    try:
        model, inputs = build(name)
        model = model.cuda().eval()
        with torch.no_grad():  # zero-initialised heads (torchvision's ViT) would make every output zero
            for weight in model.parameters():
                if weight.dim() >= 2 and not weight.any():
                    weight.normal_(std=0.02)
        exact = copy.deepcopy(model).double()
        model = model.to(dtype)
        example = cast(inputs(), dtype)
        batch = torch.export.Dim("batch", min=1, max=32)
        dims = tuple({0: batch} for _ in example) if dynamic_batch else None
        with torch.no_grad():
            compiled = pygraph.export_and_compile(model, example, target="cuda", dynamic_shapes=dims)
            worst = eager64 = ours64 = 0.0
            for size in (2, 2, 3, 5) if dynamic_batch else (2, 2):
                args = inputs(size)
                ours, eager = compiled(*cast(args, dtype)), model(*cast(args, dtype))
                worst = max(worst, relative_error(ours, eager))
                try:
                    reference = exact(*cast(args, torch.float64))
                    eager64 = max(eager64, relative_error(cast(eager, torch.float64), reference))
                    ours64 = max(ours64, relative_error(cast(ours, torch.float64), reference))
                except Exception:  # a model that runs in float32 only: no float64 figures
                    eager64 = ours64 = float("nan")
        stats = compiled.stats()
        if dtype == torch.float32:
            passed = worst <= 1e-4
        else:
            passed = ours64 <= max(2 * eager64, torch.finfo(dtype).eps)
        verdict = "PASS" if passed else "FAIL"
        if dynamic_batch:
            (padding,) = compiled._padding.values() or [None]
            how = "padding off" if padding is None else padding.refusal or "padded"
            verdict += f" batch 3 and 5: {len(compiled._padded_calls)} padded calls, {how};"
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
    parser.add_argument("names", nargs="*")
    parser.add_argument("--zoo", choices=sorted(ZOOS), default="timm")
    parser.add_argument("--shard", default="0/1", help="K/N: every N-th model from the K-th")
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    parser.add_argument(
        "--dynamic-batch", action="store_true", help="declare the batch dynamic, also call with 3 and 5 rows"
    )
    args = parser.parse_args()
    names, build = ZOOS[args.zoo]
    k, n = (int(v) for v in args.shard.split("/"))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in (args.names or names)[k::n]:
        print(run(name, build, getattr(torch, args.dtype), args.dynamic_batch), flush=True)


if __name__ == "__main__":
    main()
