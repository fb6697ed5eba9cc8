"""The cost model that passes read: per-call costs in microseconds.

Defaults are figures measured on an H100 (../shared/docs/design.md, "Backend facts"); the backend's
calibration replaces them per device and versions by writing `costs-<key>.json` in the cache
directory, which `load()` reads. No torch here: passes use it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..knobs import knobs


@dataclasses.dataclass(frozen=True)
class Costs:
    graph_launch_us: float = 5.7  # host time of cuGraphLaunch from Python
    eager_launch_us: float = 14.6  # host time of one kernel launched through torch eager
    kernel_node_us: float = 1.0  # GPU time a kernel node adds inside a graph, besides its work
    set_params_us: float = 2.1  # cuGraphExecKernelNodeSetParams (the per-call table update)
    runtime_copy_us: float = 5.0  # host time of a tensor copy the runtime issues before a launch
    bandwidth_gb_s: float = 3000.0  # device memory, bytes read plus written per second, / 1e9

    def move_us(self, nbytes: int) -> float:
        """GPU time to read and write `nbytes` once."""
        return 2 * nbytes / (self.bandwidth_gb_s * 1e3)


def load(key: str = "default") -> Costs:
    """Calibrated costs for `key` (a device and versions) if the backend measured them, else the defaults."""
    path = Path(knobs.cache_dir) / f"costs-{key}.json"
    if not path.exists():
        return Costs()
    fields = {f.name for f in dataclasses.fields(Costs)}
    return Costs(**{k: v for k, v in json.loads(path.read_text()).items() if k in fields})
