"""`pygraph bench`: pygraph against eager, torch.compile and reduce-overhead, in one process and run.

Timing method (the protocol of `../shared/docs/benchmark.md`):
- pygraph's one-time calibration of its cost figures (per device, versions and TF32 setting) runs before
  any measurement, so it counts in no system's time or memory.
- Every system of a workload is built in the same process: eager (the model), `compile`
  (`torch.compile(model)`), `ro` (`torch.compile(model, mode="reduce-overhead")`) and `pygraph`. Systems
  are built one after another; before each, garbage is collected, cuBLAS's workspaces dropped (each
  system allocates its own in its window) and the CUDA cache emptied, and
  `peak_mem_mb` is `torch.cuda.max_memory_allocated()` during its build and warm-up minus what was
  allocated before. TorchDynamo is reset once per workload (resetting between systems would discard
  the compiled ones, which the interleaved rounds still need).
- `pygraph` compiles with `profile=True`: each segment is measured as a graph and as eager launches on
  the GPU and the faster kept (stored per device, so a second compilation reuses the figures).
- `compile_s`: building plus three warm-up calls (torch.compile compiles on the first call and
  reduce-overhead records its graphs on the following ones), synchronised.
- `ms`: 5 rounds; each round times every system over 50 calls (wall clock, synchronised before and
  after the 50 calls), starting at another system each round (pointwise_1m's pygraph and
  pygraph_all_graphs, one identical graph, read 2% apart in a fixed order and within 0.3% alternated
  in both orders: `probe-twins-pointwise-h200.log`), each batch after 5 untimed calls of its system
  (distilgpt2's pygraph and pygraph_all_graphs, one identical graph, read 1.739 and 1.684 ms without
  them: a batch right after another system may pay for the state that one left);
  `ms` is the median of the rounds, `ms_min`/`ms_max` the extremes. Inputs rotate
  among 32 input sets, so a system that copies inputs or caches by address pays as a user would.
- `host_us`: median over 20 calls of the time until the call returns, the GPU idle before each call;
  for pygraph also `launch_us`, the bare `cuGraphLaunch` of its first graph measured the same way, right
  after `host_us` (after the profiler has run, driver calls measured up to 2 us slower on the H200).
- `pygraph_all_graphs` / `pygraph_no_graphs`: pygraph with every segment forced into a graph / launched
  node by node (PYGRAPH_GRAPHS=all / none), the references select-graphs is judged against.
- `kernels`, `gpu_ms`: torch.profiler over 10 calls: kernel launches per call (graph replays included;
  memcpy and memset apart) and the union of kernel intervals per call (overlapping kernels count once).
  The same trace gives `kernels.json` (beside `latest.json`): per system, the kernels that took the
  most GPU time per call, to say which kernels cost a difference.
- `copied_bytes`: pygraph's `stats()["copied_bytes_per_call"]`, its `memcpy_bytes_per_call` part (copy
  kernels aside) checked against the profiler's memcpy bytes; `ro`: the bytes of its inputs (CUDA Graph Trees copy every non-static input before a replay,
  with a kernel, so the profiler shows no memcpy); eager/compile: null.
- `max_rel_err`: a separate check after timing, with TF32 off and systems built for it: the worst
  per-output ||got - ref|| / ||ref|| over 3 input sets against eager (float64 arithmetic). `--check`
  limits it to some systems (each check compiles its system again); the others report null.
- Inference under `torch.no_grad()`, float32, TF32 matmuls and convolutions allowed during timing.
  `--dtype float16|bfloat16` casts each model and its floating inputs to that dtype first (results go to
  the directory `--out` names, with `dtype` in each entry; `max_rel_err` then compares two computations
  in that dtype, so the float32 bound does not apply).
"""

from __future__ import annotations

import datetime
import gc
import json
import math
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..metrics import relative_error
from .workloads import SUITES, Workload, select

SYSTEMS = ("eager", "compile", "ro", "pygraph", "pygraph_all_graphs", "pygraph_no_graphs")
PYGRAPHS = {"pygraph": "auto", "pygraph_all_graphs": "all", "pygraph_no_graphs": "none"}  # PYGRAPH_GRAPHS
BASELINES = ("eager", "compile", "ro")
ROUNDS, CALLS, ROTATION = 5, 50, 32
SETTLE_CALLS = 5  # untimed calls before each timed batch (module docstring)
TOP_KERNELS = 12  # kernels per system kept in kernels.json (most GPU time first)


def _tf32(enabled: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def _build(
    system: str, model: torch.nn.Module, example: tuple[torch.Tensor, ...], timed: bool = True
) -> Callable:
    """The system as a callable; `timed`: built for the timed runs (pygraph then profiles its segments)."""
    if system == "eager":
        return model
    if system == "compile":
        return torch.compile(model)
    if system == "ro":
        return torch.compile(model, mode="reduce-overhead")
    if system in PYGRAPHS:
        import pygraph

        from ..knobs import knobs

        # pygraph measures its segments' candidates (profile=True, as the paper's selective graphs do); the
        # forced variants need no measurement.
        with knobs.scope(graphs=PYGRAPHS[system]):
            return pygraph.export_and_compile(model, example, profile=timed and system == "pygraph")
    raise ValueError(f"unknown system {system}")


def _clean() -> None:
    """Frees what earlier systems left, cuBLAS's workspaces included: a graph capture drops those, so a
    system that captures would otherwise free memory counted in its base and report too little."""
    gc.collect()
    torch.cuda.synchronize()
    torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.empty_cache()


def _check(system: str, model: torch.nn.Module, inputs: list[tuple], refs: list[Any]) -> float:
    """Worst relative error against eager over 3 input sets, on a system built with TF32 off."""
    fn = _build(system, model, inputs[0], timed=False)
    worst = 0.0
    for x, ref in zip(inputs[:3], refs, strict=True):
        worst = max(worst, relative_error(fn(*x), ref))
    del fn
    return worst


def _profile(fn: Callable, inputs: list[tuple], calls: int = 10) -> dict[str, Any]:
    """Kernels per call, union of kernel time per call (ms), memcpy bytes per call and the kernels that
    take the most time (name, us and launches per call), from a trace."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(*inputs[i % len(inputs)])
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    kernels = [e for e in events if e.get("cat") == "kernel" and "dur" in e]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    intervals = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in kernels)
    busy, end = 0.0, -math.inf
    for start, stop in intervals:
        if stop > end:
            busy += stop - max(start, end)
            end = stop
    copied = sum(int(e.get("args", {}).get("bytes", 0)) for e in copies)
    by_name: dict[str, list[float]] = {}
    for e in kernels:
        total = by_name.setdefault(e["name"][:120], [0.0, 0])
        total[0] += float(e["dur"])
        total[1] += 1
    top = sorted(by_name.items(), key=lambda item: -item[1][0])[:TOP_KERNELS]
    return {
        "kernels": len(kernels) / calls,
        "gpu_ms": busy / 1000 / calls,
        "memcpy_bytes": copied / calls,
        "top": [{"name": n, "us": round(t / calls, 2), "launches": c / calls} for n, (t, c) in top],
    }


def _host_us(fn: Callable, inputs: list[tuple], calls: int = 20) -> float:
    times = []
    for i in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn(*inputs[i % len(inputs)])
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def measure(
    workload: Workload,
    systems: tuple[str, ...],
    log: Callable[[str], None],
    checked: tuple[str, ...] = SYSTEMS,
    dtype: torch.dtype = torch.float32,
) -> dict[str, dict[str, Any]]:
    """Every measured field of every system of one workload (see the module docstring), with the model
    and its floating inputs in `dtype`."""
    device = torch.device("cuda")
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, draw = workload.build(device)
    model = model.to(dtype)
    inputs = [tuple(x.to(dtype) if x.is_floating_point() else x for x in draw()) for _ in range(ROTATION)]
    results: dict[str, dict[str, Any]] = {s: {"error": None} for s in systems}

    if any(s in PYGRAPHS for s in systems):  # pygraph's one-time calibration, outside every window below
        from ..backend.cuda.calibrate import costs_for

        for tf32 in (True, False):
            _tf32(tf32)
            costs_for(device)

    with torch.no_grad():
        _tf32(True)
        live: dict[str, Callable] = {}
        for system in systems:
            if results[system]["error"]:
                continue
            _clean()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            try:
                start = time.perf_counter()
                fn = _build(system, model, inputs[0])
                for x in inputs[:3]:
                    fn(*x)
                torch.cuda.synchronize()
                results[system]["compile_s"] = round(time.perf_counter() - start, 3)
                results[system]["peak_mem_mb"] = round((torch.cuda.max_memory_allocated() - base) / 2**20, 2)
                results[system]["host_us"] = round(_host_us(fn, inputs), 2)
                if system in PYGRAPHS:  # right after host_us, in the same state of the process
                    results[system]["launch_us"] = (
                        round(fn._backend.measure_launch_us(inputs[0]) or 0.0, 2) or None
                    )
                live[system] = fn
            except Exception as exc:
                results[system]["error"] = f"{type(exc).__name__}: {exc}"
                log(f"   {system}: failed: {results[system]['error']}\n{traceback.format_exc(limit=6)}")

        rounds: dict[str, list[float]] = {s: [] for s in live}
        order = list(live)
        for r in range(ROUNDS):  # each round starts at another system: no system always follows the same one
            for system in order[r % len(order) :] + order[: r % len(order)]:
                fn = live[system]
                for i in range(SETTLE_CALLS):
                    fn(*inputs[i % ROTATION])
                torch.cuda.synchronize()
                start = time.perf_counter()
                for i in range(CALLS):
                    fn(*inputs[i % ROTATION])
                torch.cuda.synchronize()
                rounds[system].append((time.perf_counter() - start) * 1e3 / CALLS)
        for system, fn in live.items():
            r = results[system]
            r["ms"] = round(statistics.median(rounds[system]), 4)
            r["ms_min"], r["ms_max"] = round(min(rounds[system]), 4), round(max(rounds[system]), 4)
            prof = _profile(fn, inputs)
            r["kernels"], r["gpu_ms"] = round(prof["kernels"], 2), round(prof["gpu_ms"], 4)
            r["top_kernels"] = prof["top"]  # written to kernels.json, beside latest.json
            r["copied_bytes"] = None
            if system in PYGRAPHS:
                stats = fn.stats()
                r["graph_nodes"] = stats["nodes"]
                r["copied_bytes"] = stats["copied_bytes_per_call"]
                for item in fn.explain().io:  # profiled: each input's and output's mechanism, measured
                    if item["kind"] in ("input", "output") and item["measured"]:
                        log(
                            f"   {system} {item['kind']} {item['name']}: {item['mechanism']}, measured {item['measured']}"
                        )
                memcpy = stats["memcpy_bytes_per_call"]
                if abs(prof["memcpy_bytes"] - memcpy) > 0.01 * max(1, memcpy):
                    log(
                        f"   {system}: profiler saw {prof['memcpy_bytes']:.0f} memcpy bytes per call, stats say {memcpy}"
                    )
            elif system == "ro":
                r["copied_bytes"] = sum(t.numel() * t.element_size() for t in inputs[0])
        live.clear()
        _clean()
        torch._dynamo.reset()
        # The correctness check comes last: reduce-overhead keeps one memory pool per device for good, so
        # a check first would hide its memory from the measurement above.
        _tf32(False)
        refs = [model(*x) for x in inputs[:3]]
        for system in (s for s in systems if s in checked and not results[s]["error"]):
            try:
                results[system]["max_rel_err"] = (
                    0.0 if system == "eager" else _check(system, model, inputs, refs)
                )
            except Exception as exc:
                results[system]["error"] = f"{type(exc).__name__}: {exc}"
                log(f"   {system}: check failed: {results[system]['error']}\n{traceback.format_exc(limit=6)}")
            _clean()
        _tf32(True)
    for system in systems:
        for key in (
            "ms",
            "ms_min",
            "ms_max",
            "kernels",
            "gpu_ms",
            "host_us",
            "copied_bytes",
            "compile_s",
            "peak_mem_mb",
            "max_rel_err",
        ):
            results[system].setdefault(key, None)
    return results


# ------------------------------------------------------------------------------------------ results


def provenance(command: str) -> tuple[str, dict[str, str]]:
    """An entry's command split into the run that wrote the entry and, for each system kept from earlier
    runs, the run that measured it ("COMMAND on DATE"); reads the flat form `cited` writes and the nested
    one of older entries ("[a from: COMMAND  [b from: ...] on DATE]")."""
    run, bracket, rest = command.partition("  [")
    if not bracket:
        return command, {}
    origins: dict[str, str] = {}
    depth, start, parts = 0, 0, []
    body = rest[:-1]  # (without the closing bracket)
    for i, ch in enumerate(body):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth == 0 and body.startswith("; ", i):
            parts.append(body[start:i])
            start = i + 2
    parts.append(body[start:])
    for part in parts:
        names, _, source = part.partition(" from: ")
        earlier, _, date = source.rpartition(" on ")
        earlier_run, earlier_origins = provenance(earlier)
        for system in names.split(", "):
            origins[system] = earlier_origins.get(system, f"{earlier_run} on {date}")
    return run, origins


def cited(origins: dict[str, str]) -> str:
    """The suffix naming the run each kept system comes from: "  [a, b from: RUN on DATE; c from: ...]"."""
    if not origins:
        return ""
    by_run: dict[str, list[str]] = {}
    for system, source in origins.items():
        by_run.setdefault(source, []).append(system)
    return "  [" + "; ".join(f"{', '.join(names)} from: {source}" for source, names in by_run.items()) + "]"


def merge(path: Path, entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Merges new workload entries into `path`; systems a run did not measure keep their earlier figures
    when the device and versions match (the entry's command says which run they come from)."""
    data = json.loads(path.read_text()) if path.exists() else {"workloads": {}}
    for name, entry in entries.items():
        old = data["workloads"].get(name)
        if old and all(old.get(k) == entry[k] for k in ("device", "torch", "triton")):
            kept = [s for s in old["systems"] if s not in entry["systems"]]
            for s in kept:
                entry["systems"][s] = old["systems"][s]
            run, origins = provenance(old["command"])
            entry["command"] += cited({s: origins.get(s, f"{run} on {old['date']}") for s in kept})
            if "compile" in kept:
                entry["floor_ms"] = old.get("floor_ms")
        data["workloads"][name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    return data


def _merge_kernels(path: Path, workload: str, kernels: dict[str, Any]) -> None:
    """`kernels.json`: per workload and system, the kernels that took the most GPU time per call."""
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault(workload, {}).update({s: k for s, k in kernels.items() if k is not None})
    path.write_text(json.dumps(data, indent=1) + "\n")


def _speedup(systems: dict[str, Any], over: str, system: str = "pygraph") -> float | None:
    a, b = systems.get(over, {}).get("ms"), systems.get(system, {}).get("ms")
    return a / b if a and b else None


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def table(data: dict[str, Any]) -> str:
    """Markdown: ms per system, pygraph's speedups over eager and ro (geometric means per suite), and
    pygraph against the best of eager and its own all-graphs / no-graphs variants (select-graphs' bar)."""
    head = (
        "| workload | eager ms | compile ms | ro ms | pygraph ms | all graphs ms | no graphs ms | pygraph / eager "
        "| pygraph / ro | pygraph vs best of eager, all, none | kernels pygraph (compile) | pygraph gpu_ms (floor) | pygraph error |"
    )
    columns = head.count("|") - 1
    lines = [head, "|" + "---|" * columns]
    for suite in SUITES:
        rows = {n: e for n, e in data["workloads"].items() if e["suite"] == suite}
        if not rows:
            continue
        lines.append(f"| **{suite}** |" + " |" * (columns - 1))
        over_eager, over_ro = [], []
        for name, e in rows.items():
            s = e["systems"]
            ms = [_fmt(s.get(k, {}).get("ms")) for k in SYSTEMS]
            se, sr = _speedup(s, "eager"), _speedup(s, "ro")
            over_eager += [se] if se else []
            over_ro += [sr] if sr else []
            refs = [s.get(k, {}).get("ms") for k in ("eager", "pygraph_all_graphs", "pygraph_no_graphs")]
            refs = [r for r in refs if r]
            p = s.get("pygraph", {})
            vs_best = f"{p['ms'] / min(refs):.3f}" if p.get("ms") and refs else "-"
            err = p.get("error") or (f"{p['max_rel_err']:.1e}" if p.get("max_rel_err") is not None else "-")
            kernels = f"{_fmt(p.get('kernels'), 0)} ({_fmt(s.get('compile', {}).get('kernels'), 0)})"
            gpu = f"{_fmt(p.get('gpu_ms'))} ({_fmt(e.get('floor_ms'))})"
            cells = [*ms, f"{_fmt(se, 2)}x", f"{_fmt(sr, 2)}x", vs_best, kernels, gpu, str(err)[:60]]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        blank = " |" * (columns - 9)
        lines.append(
            f"| geomean ({suite}) |"
            + " |" * 6
            + f" {_fmt(_geomean(over_eager), 2)}x | {_fmt(_geomean(over_ro), 2)}x |"
            + blank
        )
    return "\n".join(lines) + "\n"


def _geomean(xs: list[float]) -> float | None:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def chart(data: dict[str, Any], path: Path) -> bool:
    """A PNG bar chart of each system's speedup over reduce-overhead (log scale); False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [n for s in SUITES for n, e in data["workloads"].items() if e["suite"] == s]
    systems = [s for s in SYSTEMS if s != "ro"]
    fig, ax = plt.subplots(figsize=(max(10, 0.85 * len(names)), 5))
    width = 0.8 / len(systems)
    for i, system in enumerate(systems):
        values = [_speedup(data["workloads"][n]["systems"], "ro", system) or 0 for n in names]
        ax.bar([x + i * width for x in range(len(names))], values, width, label=system)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("speedup over reduce-overhead (x)")
    ax.set_xticks(
        [x + width * (len(systems) - 1) / 2 for x in range(len(names))], names, rotation=45, ha="right"
    )
    ax.legend(loc="upper center", ncol=len(systems), fontsize="small")
    ax.set_title("time per call, relative to torch.compile(mode='reduce-overhead')")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_reports(data: dict[str, Any], out: Path) -> None:
    (out / "latest.md").write_text(table(data))
    chart(data, out / "speedup_vs_ro.png")


# --------------------------------------------------------------------------------------------- main


def main(
    suite: str,
    names: str | None,
    systems: str | None,
    out: Path,
    emulate: bool,
    report_only: bool,
    check: str | None = None,
    dtype: str = "float32",
) -> int:
    out.mkdir(parents=True, exist_ok=True)
    if report_only:
        write_reports(json.loads((out / "latest.json").read_text()), out)
        return 0
    chosen = select(suite, names)
    if emulate:
        if dtype != "float32":
            raise SystemExit("--emulate checks the workloads in float32; --dtype applies to measurements")
        from .check import main as check_on_cpu

        return check_on_cpu(suite, ",".join(w.name for w in chosen), out)
    if not torch.cuda.is_available():
        print(
            "pygraph bench measures on a CUDA GPU; use --emulate to check correctness on the CPU",
            file=sys.stderr,
        )
        return 2
    wanted = tuple(systems.split(",")) if systems else SYSTEMS
    unknown = [s for s in wanted if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown systems: {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    import triton

    command = "pygraph bench " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["bench"] else sys.argv[1:])
    entries = {}
    for workload in chosen:
        print(f"== {workload.name} ({workload.suite})", flush=True)
        start = time.perf_counter()
        try:
            checked = tuple(check.split(",")) if check else SYSTEMS
            results = measure(
                workload, wanted, lambda line: print(line, flush=True), checked, getattr(torch, dtype)
            )
        except Exception as exc:  # the model itself could not be built: every system shares the error
            print(traceback.format_exc(limit=6), flush=True)
            results = {
                s: {"error": f"building the workload failed: {type(exc).__name__}: {exc}"} for s in wanted
            }
        entry = {
            "suite": workload.suite,
            "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
            "triton": triton.__version__,
            "date": datetime.date.today().isoformat(),
            "command": command,
            "floor_ms": results.get("compile", {}).get("gpu_ms"),
            "systems": results,
        }
        if dtype != "float32":
            entry["dtype"] = dtype
        entries[workload.name] = entry
        kernels = {s: r.pop("top_kernels", None) for s, r in results.items()}
        _merge_kernels(out / "kernels.json", workload.name, kernels)
        data = merge(out / "latest.json", {workload.name: entry})
        summary = ", ".join(
            f"{s} {_fmt(r.get('ms'))} ms" + (" (error)" if r.get("error") else "") for s, r in results.items()
        )
        print(f"   {summary}  [{time.perf_counter() - start:.0f} s]", flush=True)
        write_reports(data, out)
    return 0
