"""`pygraph check`: compile workloads, run them on fresh inputs and compare with eager (TF32 off).

On a GPU this is the end-to-end test of the CUDA backend (every library op recorded, graphs read
back); on a CPU machine it runs the workloads it can build through the emulator.
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any

import torch

import pygraph

from ..metrics import relative_error
from .workloads import Workload, select


def check_workload(workload: Workload, device: torch.device, calls: int = 3) -> dict[str, Any]:
    torch.manual_seed(0)
    model, draw = workload.build(device)
    result: dict[str, Any] = {"suite": workload.suite, "device": str(device)}
    try:
        with torch.no_grad():
            start = time.perf_counter()
            compiled = pygraph.export_and_compile(model, draw())
            result["compile_s"] = round(time.perf_counter() - start, 2)
            errors = []
            kept = []
            for _ in range(calls):
                inputs = draw()
                got = compiled(*inputs)
                ref = model(*inputs)
                kept.append((got, ref.clone() if isinstance(ref, torch.Tensor) else ref))
                errors.append(relative_error(got, ref))
            # Results of earlier calls must stay intact after later calls.
            errors.append(max(relative_error(g, r) for g, r in kept))
        result["max_rel_err"] = max(errors)
        result["stats"] = compiled.stats()
        graphed = sum(
            n.kind == "library" for seg in compiled.plan.segments if seg.mode == "graph" for n in seg.nodes
        )
        result["captures_equal_graphed_library_ops"] = (
            result["stats"]["captures"] == graphed if device.type == "cuda" else None
        )
        result["coverage"] = compiled.explain().coverage
        result["ok"] = (
            result["max_rel_err"] <= 1e-4 and result["captures_equal_graphed_library_ops"] is not False
        )
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc(limit=8)
        result["ok"] = False
    return result


def main(suite: str, names: str | None, out: Path | None) -> int:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    results = {}
    for workload in select(suite, names):
        print(f"== {workload.name} ({workload.suite}) on {device}", flush=True)
        try:
            result = check_workload(workload, device)
        except ImportError as exc:
            result = {"suite": workload.suite, "error": f"cannot build: {exc}", "ok": False}
        results[workload.name] = result
        if "error" in result:
            print(f"   FAILED: {result['error']}\n{result.get('traceback', '')}", flush=True)
        else:
            stats = result["stats"]
            print(
                f"   {'OK' if result['ok'] else 'FAILED'}: max_rel_err {result['max_rel_err']:.2e}, compile {result['compile_s']} s, "
                f"graphs {stats['graphs']}, nodes {stats['nodes']}, captures {stats['captures']}, "
                f"library calls {stats['library_calls']}, generated kernels {stats['generated_kernels']}",
                flush=True,
            )
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"check-{suite}.json").write_text(json.dumps(results, indent=1, default=str))
    failed = [n for n, r in results.items() if not r["ok"]]
    print(
        f"{len(results) - len(failed)}/{len(results)} workloads OK"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0
