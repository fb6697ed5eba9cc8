"""Every environment variable pygraph reads, declared once.

A knob reads its variable each time it is asked (so tests and users can set the environment late)
unless a value was set from Python; `scope()` sets values for a block and restores them after.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class _Knob:
    def __init__(self, env: str, default: Any, doc: str) -> None:
        self.env, self.default, self.doc = env, default, doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if self.name in obj._overrides:
            return obj._overrides[self.name]
        raw = os.environ.get(self.env)
        return self.default if raw in (None, "") else self.parse(raw)

    def __set__(self, obj: Any, value: Any) -> None:
        obj._overrides[self.name] = value

    def parse(self, raw: str) -> Any:
        return raw


class _PathKnob(_Knob):
    def parse(self, raw: str) -> Path:
        return Path(raw).expanduser()


class _IntKnob(_Knob):
    def parse(self, raw: str) -> int:
        return int(raw)


class Knobs:
    dump_dir = _PathKnob(
        "PYGRAPH_DUMP_DIR", None, "write every stage (NAME.torch.mlir, ...) of each compilation here"
    )
    override_dir = _PathKnob(
        "PYGRAPH_OVERRIDE_DIR", None, "read a stage from NAME.<stage>.mlir here instead of producing it"
    )
    cache_dir = _PathKnob(
        "PYGRAPH_CACHE_DIR",
        Path("~/.cache/pygraph").expanduser(),
        "generated kernel sources and cubins, cost cache",
    )
    max_variants = _IntKnob(
        "PYGRAPH_MAX_VARIANTS",
        8,
        "input shapes (dims declared in dynamic_shapes), ways through decisions on data or Python attributes, "
        "and settings (autocast, TF32, default dtype) a compiled model compiles programs for beside its "
        "example's; calls past it run eagerly",
    )
    padding = _Knob(
        "PYGRAPH_PADDING",
        "auto",
        "calls of new sizes of a dim declared dynamic whose entries no op mixes (frontend/row_prefixes.py): "
        "auto: padded to the next power of two's program (pygraph/padding.py); off: each size compiled",
    )
    verify = _IntKnob(
        "PYGRAPH_VERIFY", 1, "0: verify at pipeline entry and exit; 1 (default): after every pass"
    )
    graphs = _Knob(
        "PYGRAPH_GRAPHS",
        "auto",
        "auto: select-graphs chooses per segment; all / none: every segment a graph / eager",
    )
    gpu_layouts = _Knob(
        "PYGRAPH_GPU_LAYOUTS",
        "auto",
        "auto: on a GPU, 2-D convolutions read NHWC tensors (frontend/channels_last.py), their means over "
        "few channels' pixels are summed in two steps (frontend/spatial_means.py), matmuls write aligned "
        "rows (frontend/align_matmuls.py) and attentions are routed by PYGRAPH_ATTENTION "
        "(frontend/attention.py); on: on every device (tests); off: none of these",
    )
    derived = _Knob(
        "PYGRAPH_DERIVED",
        "auto",
        "computations on the model's tensors alone (NHWC weights, padded weights; frontend/derived_state.py): "
        "auto: held between calls up to the program's working memory, the largest beyond it computed in each "
        "call; all: all held; none: all computed in each call",
    )
    attention = _Knob(
        "PYGRAPH_ATTENTION",
        "auto",
        "how scaled_dot_product_attention runs where the generated kernel can compute it (float32, on the "
        "devices PYGRAPH_GPU_LAYOUTS names, frontend/attention.py): auto: as measured per shape and TF32 "
        "setting; kernel: one generated flash-attention kernel; decompose: matmul, softmax kernel, matmul; "
        "aten: ATen's fused call",
    )
    split_keys = _Knob(
        "PYGRAPH_SPLIT_KEYS",
        "auto",
        "attentions of few query rows per key head (decoding steps) as two generated kernels, their keys split "
        "across programs (passes/split_keys.py): auto: as measured per shape; off: never; a power of two of "
        "at least 16: that many keys per program wherever the rows fit one program",
    )
    matvec = _Knob(
        "PYGRAPH_MATVEC",
        "auto",
        "how a linear, mm, addmm or matmul of one row, or of at most 64 half-precision rows, runs "
        "(passes/matvec_kernel.py): auto: the generated matrix-vector kernel (a few rows: the matmul kernel's "
        "tensor-core dots) where it can compute it; vendor: the vendor library (cuBLAS)",
    )
    matmul = _Knob(
        "PYGRAPH_MATMUL",
        "auto",
        "which products of more than one row become generated matmuls with their pointwise consumers fused "
        "(passes/matmul_kernel.py): auto: where measured faster than the vendor call and a kernel (TF32 "
        "dots allowed, small products); all: every one the kernel can compute and fuse; off: none",
    )
    native = _Knob(
        "PYGRAPH_NATIVE",
        "auto",
        "calls that only replay graphs run through a C helper compiled on first use with the system's C "
        "compiler (backend/cuda/replay.c): auto: where it builds (a warning where not); on: fail where it "
        "does not; off: the Python path",
    )
    pdl = _Knob(
        "PYGRAPH_PDL",
        "auto",
        "programmatic dependent launch (backend/cuda/compile.py): auto: on GPUs of compute capability 9.0 "
        "and newer, generated kernels wait for their predecessors first and graphs launch them early; off: "
        "plain graph edges",
    )
    debug = _IntKnob("PYGRAPH_DEBUG", 0, "1: print each stage of a compilation to stderr")

    def __init__(self) -> None:
        self._overrides: dict[str, Any] = {}

    @contextlib.contextmanager
    def scope(self, **values: Any) -> Iterator[None]:
        """Set knobs for the duration of a block (tests)."""
        saved = dict(self._overrides)
        self._overrides.update(values)
        try:
            yield
        finally:
            self._overrides = saved

    @classmethod
    def describe(cls) -> list[tuple[str, str]]:
        return [(k.env, k.doc) for k in vars(cls).values() if isinstance(k, _Knob)]


knobs = Knobs()
