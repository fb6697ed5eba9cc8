"""select-graphs' decisions on synthetic cost tables, and reuse of measured (profiled) choices."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch

import pygraph
from pygraph.ir import costs
from pygraph.ir.context import parse
from pygraph.ir.plan import read_plan
from pygraph.knobs import knobs
from pygraph.passes.pipeline import parse_pipeline, run_pipeline

PLAN = Path(__file__).parent / "filecheck" / "passes" / "select-graphs.mlir"


def small_segment_plan() -> str:
    """The first case of the FileCheck test: one segment of six tiny kernels."""
    return PLAN.read_text().split("// -----")[0]


def read_plan_segments(module):
    from pygraph.ir import dialect as d
    from pygraph.passes.base import main_function

    return [op for op in main_function(module).regions[0].blocks[0].operations if isinstance(op, d.SegmentOp)]


@pytest.mark.parametrize(
    ("figures", "mode"),
    [
        ({}, "graph"),  # the defaults: six launches cost more than one graph launch
        ({"graph_launch_us": 1000.0}, "eager"),  # a device where graph launches are slow
        # launches nearly free and kernels as close on a stream as in a graph: the graph launch loses
        ({"driver_launch_us": 0.5, "stream_kernel_us": 1.0}, "eager"),
        ({"driver_launch_us": 0.5}, "graph"),  # ... but a graph narrows the gap between kernels
        ({"bandwidth_gb_s": 0.001}, "eager"),  # GPU-bound work: launches are hidden behind it
    ],
)
def test_decisions_follow_the_cost_table(tmp_path: Path, figures: dict, mode: str):
    with knobs.scope(cache_dir=tmp_path):
        costs.save("test", dataclasses.replace(costs.Costs(), **figures))
        modes = [m.value for m in (s.mode for s in read_plan_segments(_selected(small_segment_plan())))]
    assert modes == [mode]


def _selected(text: str):
    module = parse(text)
    run_pipeline(module, parse_pipeline("select-graphs{costs=test}"))
    return module


def test_a_calibration_without_every_figure_is_measured_again(tmp_path: Path):
    """A figure added to the cost model (as `stream_kernel_us` was) makes older calibrations stale: their
    device would otherwise be priced with a default measured elsewhere beside figures measured on it."""
    with knobs.scope(cache_dir=tmp_path):
        costs.save("test", costs.Costs())
        assert costs.calibrated("test")
        figures = json.loads((tmp_path / "costs-test.json").read_text())
        del figures["stream_kernel_us"]
        (tmp_path / "costs-test.json").write_text(json.dumps(figures))
        assert not costs.calibrated("test")


def test_an_unreadable_cache_file_is_measured_again(tmp_path: Path):
    """A file cut mid-write (a process killed, or one reading while another wrote before writes were
    renamed into place) is no calibration: its figures come from the defaults until measured again."""
    with knobs.scope(cache_dir=tmp_path):
        (tmp_path / "costs-test.json").write_text("")
        (tmp_path / "segments-test.json").write_text('{"a": ')
        with pytest.warns(UserWarning, match="costs-test.json is unreadable"):
            assert not costs.calibrated("test")
        with pytest.warns(UserWarning, match="costs-test.json is unreadable"):
            assert costs.load("test") == costs.Costs()
        with pytest.warns(UserWarning, match="segments-test.json is unreadable"):
            assert costs.measured_segments("test") == {}
        costs.save("test", costs.Costs(graph_launch_us=2.0))
        assert costs.calibrated("test") and costs.load("test").graph_launch_us == 2.0


def test_cache_writes_are_whole_for_a_reader_beside_them(tmp_path: Path):
    """Readers in other processes see the old file or the new one, never a part (GPU fuzz shards
    crashed reading an empty costs file another shard was writing)."""
    path = tmp_path / "costs-test.json"
    with knobs.scope(cache_dir=tmp_path):
        costs.save("test", costs.Costs())
        before = path.stat().st_ino
        costs.save("test", costs.Costs(graph_launch_us=2.0))
        assert path.stat().st_ino != before  # a new file renamed over the old, not rewritten in place
        assert [p.name for p in tmp_path.iterdir()] == ["costs-test.json"]  # no temporary left


def test_measured_figures_override_estimates_and_are_reused(tmp_path: Path):
    with knobs.scope(cache_dir=tmp_path):
        module = _selected(small_segment_plan())
        (segment,) = read_plan_segments(module)
        fingerprint = segment.info["fingerprint"].value
        assert segment.mode.value == "graph"  # estimated
        costs.record_segments("test", {fingerprint: {"measured_graph_us": 20.0, "measured_eager_us": 10.0}})
        (segment,) = read_plan_segments(_selected(small_segment_plan()))
        assert segment.mode.value == "eager"
        assert (
            segment.info["reason"].value == "graph 20.0 us, eager 10.0 us (measured): a graph must win by 2%"
        )
        stored = json.loads((tmp_path / "segments-test.json").read_text())
        assert stored == {fingerprint: {"measured_eager_us": 10.0, "measured_graph_us": 20.0}}


def test_forced_modes_reach_the_runtime_through_the_knob():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    x = torch.randn(2, 8)
    for knob, mode in (("all", "graph"), ("none", "eager")):
        with knobs.scope(graphs=knob):
            compiled = pygraph.export_and_compile(model, (x,))
        assert [s.mode for s in compiled.plan.segments] == [mode]
        torch.testing.assert_close(compiled(x), model(x))
        assert compiled.explain().coverage["after"] == (1.0 if mode == "graph" else 0.0)


def test_explain_reports_each_segments_choice():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 8))
    compiled = pygraph.export_and_compile(model, (torch.randn(2, 8),))
    (segment,) = compiled.explain().segments
    assert segment["mode"] == "graph" and "estimated" in segment["info"]["reason"]
    assert {"estimated_eager_us", "estimated_graph_us", "one_time_us", "fingerprint"} <= set(segment["info"])
    assert read_plan(parse(compiled.ir("plan"))).segments[0].info == segment["info"]
