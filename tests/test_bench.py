"""The benchmark's result handling: merging runs, the table, and the workload definitions."""

import json
from pathlib import Path

import pytest

from pygraph.tools import bench, workloads


def entry(suite: str, ms: dict[str, float], device: str = "H100", command: str = "pygraph bench") -> dict:
    systems = {
        s: {"ms": v, "kernels": 10, "gpu_ms": v / 2, "max_rel_err": 1e-7, "error": None}
        for s, v in ms.items()
    }
    return {"suite": suite, "device": device, "torch": "2.11", "triton": "3.6.0", "date": "2026-11-20",
            "command": command, "floor_ms": ms.get("compile", 1.0) / 2, "systems": systems}  # fmt: skip


def test_merge_keeps_baselines_of_the_same_device_and_versions(tmp_path: Path):
    path = tmp_path / "latest.json"
    bench.merge(path, {"mlp": entry("small", {"eager": 0.5, "compile": 0.4, "ro": 0.12, "pygraph": 0.2})})
    data = bench.merge(
        path, {"mlp": entry("small", {"pygraph": 0.05}, command="pygraph bench --systems pygraph")}
    )
    systems = data["workloads"]["mlp"]["systems"]
    assert systems["pygraph"]["ms"] == 0.05 and systems["ro"]["ms"] == 0.12
    assert "[eager, compile, ro from: pygraph bench on 2026-11-20]" in data["workloads"]["mlp"]["command"]
    # another device: nothing is kept
    data = bench.merge(path, {"mlp": entry("small", {"pygraph": 0.07}, device="H200")})
    assert set(data["workloads"]["mlp"]["systems"]) == {"pygraph"}
    assert json.loads(path.read_text()) == data


def test_merged_commands_name_the_run_of_each_kept_system(tmp_path: Path):
    """Three runs measuring fewer systems each: the command names each system's own run, flat."""
    path = tmp_path / "latest.json"
    bench.merge(
        path, {"mlp": entry("small", {"eager": 0.5, "compile": 0.4, "ro": 0.1, "pygraph": 0.2}, command="a")}
    )
    bench.merge(path, {"mlp": entry("small", {"ro": 0.12, "pygraph": 0.1}, command="b")})
    data = bench.merge(path, {"mlp": entry("small", {"pygraph": 0.05}, command="c")})
    command = data["workloads"]["mlp"]["command"]
    assert command == "c  [ro from: b on 2026-11-20; eager, compile from: a on 2026-11-20]"
    assert bench.provenance(command) == (
        "c",
        {s: "a on 2026-11-20" for s in ("eager", "compile")} | {"ro": "b on 2026-11-20"},
    )
    nested = "c  [ro, eager from: b  [eager from: a on 2026-11-19] on 2026-11-20]"
    assert bench.provenance(nested)[1] == {"ro": "b on 2026-11-20", "eager": "a on 2026-11-19"}


def test_table_has_speedups_and_geomeans():
    data = {"workloads": {
        "a": entry("small", {"eager": 1.0, "compile": 0.5, "ro": 0.25, "pygraph": 0.125}),
        "b": entry("small", {"eager": 2.0, "compile": 1.0, "ro": 1.0, "pygraph": 0.5}),
    }}  # fmt: skip
    text = bench.table(data)
    assert "| a | 1.000 | 0.500 | 0.250 | 0.125 | - | - | 8.00x | 2.00x | 0.125 |" in text
    assert "| geomean (small) | | | | | | | 5.66x | 2.00x |" in text


def test_every_workload_of_the_doc_is_defined():
    names = {w.name for w in workloads.select("all")}
    assert {
        "mlp",
        "resnet18",
        "gpt2",
        "xlnet_I1",
        "mt5_I16",
        "densenet121_I64",
        "pointwise_1m",
        "matmul_4k",
    } <= names
    assert len(names) == 17
    assert [w.name for w in workloads.select("small", "mlp,gpt2")] == ["mlp", "gpt2"]
    with pytest.raises(ValueError, match="unknown workloads: nope"):
        workloads.select("all", "nope")


def test_stress_pointwise_chain_stays_finite():
    import torch

    model, draw = workloads.WORKLOADS["pointwise_1m"].build(torch.device("cpu"))
    a, b, c, d = (t[:4096] for t in draw())
    assert torch.isfinite(model(a, b, c, d)).all()
