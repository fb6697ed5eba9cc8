"""The native replay (`replay.c`): built on first use with the system's C compiler, cached on disk.

Why native: a call that replays graphs only is a few checks, one allocation per output, the parameter
updates and `cuGraphLaunch`; from Python that costs several microseconds more than the launch itself,
the whole per-call price of a small model (mlp: about 7 us against a 1.6 us launch on an H200). The C
function does the same steps with the same rules and hands every call it cannot take (other shapes,
strides, devices, changed watched tensors) back to the Python path.

It is compiled like Triton's own launcher stubs: `cc` on the one C file, with Python's headers and no
CUDA header (driver functions arrive as pointers from `cuGetProcAddress`). `PYGRAPH_NATIVE` (knobs.py)
chooses: auto (the default) uses it where it builds and warns once where it does not; on fails instead;
off keeps the Python path.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from ...knobs import knobs
from .driver import CudaError, cu

SOURCE = Path(__file__).with_name("replay.c")
MODULE = "pygraph_replay"
_loaded: dict[Path, ModuleType | None] = {}


def replay_module() -> ModuleType | None:
    """The compiled module, or None where `PYGRAPH_NATIVE` is off or (auto) it cannot be built."""
    mode = knobs.native
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"PYGRAPH_NATIVE must be auto, on or off, not {mode!r}")
    if mode == "off":
        return None
    path = _library_path()
    if path not in _loaded:
        try:
            _loaded[path] = _load(path)
        except (OSError, RuntimeError, ImportError) as exc:
            if mode == "on":
                raise
            warnings.warn(f"pygraph replays through Python (PYGRAPH_NATIVE=auto): {exc}", stacklevel=2)
            _loaded[path] = None
    return _loaded[path]


def _library_path() -> Path:
    """Where the module for this source and this Python lives in the cache."""
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + sys.version.encode() + sysconfig.get_platform().encode()).hexdigest()[:16]
    return knobs.cache_dir / "native" / key / f"{MODULE}{sysconfig.get_config_var('EXT_SUFFIX')}"


def _load(path: Path) -> ModuleType:
    if not path.exists():
        _compile(path)
    spec = importlib.util.spec_from_file_location(MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compile(path: Path) -> None:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler found (set CC, or install cc)")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        built = Path(scratch) / path.name
        command = [
            compiler,
            "-O2",
            "-shared",
            "-fPIC",
            f"-I{sysconfig.get_paths()['include']}",
            str(SOURCE),
            "-o",
            str(built),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr.strip()}")
        os.replace(built, path)  # atomic: a concurrent build finds a whole file or none


def driver_functions() -> tuple[int, int]:
    """Pointers to `cuGraphExecKernelNodeSetParams` (the version taking cuda-python's
    CUDA_KERNEL_NODE_PARAMS) and `cuGraphLaunch` (a null stream meaning the legacy default stream, as
    torch's default stream is)."""
    result, driver_version = cu.cuDriverGetVersion()
    if result != cu.CUresult.CUDA_SUCCESS:
        raise CudaError("cuDriverGetVersion", result)
    version = min(cu.CUDA_VERSION, driver_version)
    flags = cu.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_LEGACY_STREAM
    pointers = []
    for name in ("cuGraphExecKernelNodeSetParams", "cuGraphLaunch"):
        result, pointer, _ = cu.cuGetProcAddress(name.encode(), version, flags)
        if result != cu.CUresult.CUDA_SUCCESS or not pointer:
            raise CudaError(f"cuGetProcAddress({name})", result)
        pointers.append(int(pointer))
    return pointers[0], pointers[1]


def raise_cuda_error(call: str, result: int) -> Any:
    """What the C function calls when a driver call fails: the backend's usual error."""
    raise CudaError(call, cu.CUresult(result))
