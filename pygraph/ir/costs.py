"""The cost model that passes read, and the measurements they reuse.

Per-call costs are in microseconds. Defaults are figures measured on an H100
(../shared/docs/design.md, "Backend facts"); the backend's calibration replaces them per device and
versions by writing `costs-<key>.json` in the cache directory. `profile=True` compilations store the
measured time of each segment (eager and as a graph) in `segments-<key>.json`, keyed by the segment's
fingerprint, so a later compilation of the same plan chooses from measurements without measuring.
No torch here: passes use this module.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any

from ..cache_files import write_atomically
from ..knobs import knobs


@dataclasses.dataclass(frozen=True)
class Costs:
    graph_launch_us: float = 5.7  # host time of cuGraphLaunch from Python
    driver_launch_us: float = 5.9  # host time of one generated kernel launched through the driver
    eager_launch_us: float = 14.6  # host time of one ATen call (a vendor kernel through torch eager)
    kernel_node_us: float = 1.0  # GPU time a node adds inside a graph, besides its work
    stream_kernel_us: float = 1.5  # GPU time a kernel adds launched on a stream behind another (H200 figure)
    set_params_us: float = 2.1  # cuGraphExecKernelNodeSetParams (the per-call table update)
    runtime_copy_us: float = 5.0  # host time of a tensor copy the runtime issues before a launch
    bandwidth_gb_s: float = 3000.0  # device memory, bytes read plus written per second, / 1e9
    tflops: float = 50.0  # sustained float32 matrix throughput without TF32, for estimates
    instantiate_us_per_node: float = 6.5  # one-time: building and instantiating a graph, per node
    record_us: float = 500.0  # one-time: recording one vendor call into a graph of its own

    def move_us(self, nbytes: int) -> float:
        """GPU time to read and write `nbytes` once."""
        return 2 * nbytes / (self.bandwidth_gb_s * 1e3)

    def compute_us(self, flops: float) -> float:
        return flops / (self.tflops * 1e6)


def _path(kind: str, key: str) -> Path:
    return Path(knobs.cache_dir) / f"{kind}-{key}.json"


def _read(path: Path) -> dict[str, Any]:
    """The file's entries; none where it is missing or unreadable (left by a process killed mid-write
    before writes were atomic): costs are figures for decisions, so they are measured again, with a note."""
    if not path.exists():
        return {}
    try:
        entries = json.loads(path.read_text())
    except ValueError:
        entries = None
    if not isinstance(entries, dict):
        warnings.warn(
            f"pygraph's cache file {path} is unreadable; it is ignored and written again", stacklevel=3
        )
        return {}
    return entries


def calibrated(key: str) -> bool:
    """Whether the backend measured every figure for `key` (a file from a version with fewer is stale)."""
    return {f.name for f in dataclasses.fields(Costs)} <= set(_read(_path("costs", key)))


def load(key: str = "default") -> Costs:
    """Calibrated costs for `key` (a device and versions) if the backend measured them, else the defaults."""
    fields = {f.name for f in dataclasses.fields(Costs)}
    return Costs(**{k: v for k, v in _read(_path("costs", key)).items() if k in fields})


def save(key: str, costs: Costs) -> None:
    write_atomically(_path("costs", key), json.dumps(dataclasses.asdict(costs), indent=1).encode())


def measured_segments(key: str) -> dict[str, dict[str, Any]]:
    """Measured segment times for `key`: fingerprint -> {"eager_us": ..., "graph_us": ...}."""
    return _read(_path("segments", key))


def record_segments(key: str, measured: dict[str, dict[str, Any]]) -> None:
    """Adds `measured` to the file; of two processes recording at once one's entries may be lost (and
    measured again by a later compilation), never half a file read."""
    merged = {**measured_segments(key), **measured}
    write_atomically(_path("segments", key), json.dumps(merged, indent=1, sort_keys=True).encode())
