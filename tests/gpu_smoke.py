"""GPU smoke test of pygraph's CUDA backend, one run: `python3 tests/gpu_smoke.py` (prints PASS/FAIL per check).

Part 1 needs only torch, triton and cuda-bindings: Triton kernels compiled to cubins and launched
through the driver, then one explicitly built graph (kernel, memcpy and memset nodes and a child graph
holding a recorded torch.mm), its node kinds read back, and three replays on new data checked against
torch. Part 2 also needs torch-mlir (to read a plan): the runtime on `plan_text()`, a hand-written plan
with graph and eager segments, a host step, views and an input the plan writes, replayed
on new inputs, rebuilt for a new parameter and its `stats()` read back. `tests/test_cuda_backend.py`
runs the same plan under pytest, and on the CPU emulator.
"""

from __future__ import annotations

import math
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# ------------------------------------------------------------------------------------------ kernels


@triton.jit
def scale2(x_ptr, y_ptr):  # y = 2x, 2048 elements, grid 2
    offs = tl.program_id(0) * 1024 + tl.arange(0, 1024)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)


@triton.jit
def bias_relu(m_ptr, b_ptr, out_ptr):  # out = relu(m + b), m 64x16, b 16
    offs = tl.arange(0, 1024)
    v = tl.load(m_ptr + offs) + tl.load(b_ptr + offs % 16)
    tl.store(out_ptr + offs, tl.maximum(v, 0.0))


@triton.jit
def add_one(y_ptr):  # y += 1 in place, 1024 elements
    offs = tl.arange(0, 1024)
    tl.store(y_ptr + offs, tl.load(y_ptr + offs) + 1.0)


@triton.jit
def scale2_64(x_ptr, y_ptr):  # y = 2x, 64 elements
    offs = tl.arange(0, 64)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)


@triton.jit
def combine(m_ptr, h_ptr, t_ptr, out_ptr):  # out = m + h[:, None] + t[:, None], m 64x16
    offs = tl.arange(0, 1024)
    row = offs // 16
    tl.store(out_ptr + offs, tl.load(m_ptr + offs) + tl.load(h_ptr + row) + tl.load(t_ptr + row))


KERNELS = {
    "scale2": scale2,
    "bias_relu": bias_relu,
    "add_one": add_one,
    "scale2_64": scale2_64,
    "combine": combine,
}


def kernel_source(fn: triton.runtime.jit.JITFunction) -> str:
    return "import triton\nimport triton.language as tl\n\n\n@triton.jit\n" + fn.src


# --------------------------------------------------------------------------------------------- plan


def _layout(shape: list[int], strides: list[int] | None = None, offset: int = 0) -> str:
    strides = strides or [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    return f"#pygraph.layout<{shape}, {strides}, {offset} : i64, f32>"


def _string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def plan_text() -> str:
    """The plan part 2 runs. Arguments: x (input, copy), y (input, copy, the plan adds 1 to it in place),
    w and b (parameters, direct). See `reference` for what it computes."""
    m2, v = _layout([64, 16]), _layout([64])
    b2 = "(!pygraph.buf, !pygraph.buf) -> ()"
    aligned = '"*fp32:16"'
    kernels = "\n".join(
        f'  "pygraph.triton_kernel"() {{sym_name = "{name}", entry = "{name}", source = {_string(kernel_source(fn))}, '
        f"signature = [{', '.join([aligned] * len(fn.arg_names))}], num_warps = 4 : i64, num_stages = 1 : i64}} : () -> ()"
        for name, fn in KERNELS.items()
    )

    def arg(name: str, role: str, layout: str, io: str) -> str:
        return (
            f'%{name}: !pygraph.buf {{pygraph.role = "{role}", pygraph.name = "{name}", pygraph.layout = {layout}, '
            f'pygraph.io = "{io}", pygraph.device = "cuda"}}'
        )

    def alloc(name: str, layout: str, offset: int) -> str:
        return f'    %{name} = "pygraph.alloc"() {{layout = {layout}, arena_offset = {offset} : i64}} : () -> !pygraph.buf'

    def aten(
        kind: str, result: str, op: str, inputs: list[str], args: str, layout: str, extra: str = ""
    ) -> str:
        types = ", ".join(["!pygraph.buf"] * len(inputs))
        return (
            f'      %{result} = "pygraph.{kind}"({", ".join(inputs)}) {{op = "{op}", args = [{args}], layouts = [{layout}],{extra} '
            f"operandSegmentSizes = array<i32: {len(inputs)}>, resultSegmentSizes = array<i32: 1>}} : ({types}) -> !pygraph.buf"
        )

    def kernel(name: str, args: list[str], access: list[str], grid: int = 1) -> str:
        types = ", ".join(["!pygraph.buf"] * len(args))
        modes = ", ".join(f'"{a}"' for a in access)
        return (
            f'      "pygraph.kernel"({", ".join(args)}) {{kernel = @{name}, grid = [{grid}, 1, 1], access = [{modes}], '
            f"operandSegmentSizes = array<i32: {len(args)}>}} : ({types}) -> ()"
        )

    results = ", ".join(
        f"!pygraph.buf {{pygraph.io = {io}}}" for io in ['"copy"'] * 4 + ['"direct"'] + ['"copy"'] * 3
    )
    return f"""module {{
{kernels}
  func.func @main({arg("x", "input", _layout([64, 32]), "stage")}, {arg("y", "input", m2, "stage")},
                  {arg("w", "parameter", _layout([32, 16]), "direct")}, {arg("b", "parameter", _layout([16]), "direct")})
      -> ({results}) attributes {{pygraph.arena_bytes = 25344 : i64}} {{
{alloc("t1", _layout([64, 32]), 0)}
{alloc("t2", m2, 8192)}
{alloc("t3", m2, 12288)}
{alloc("t4", m2, 16384)}
{alloc("t5", v, 20480)}
{alloc("t6", v, 20736)}
{alloc("t7", v, 20992)}
{alloc("t8", m2, 21248)}
    %m = "pygraph.segment"() ({{
{kernel("scale2", ["%x", "%t1"], ["r", "w"], grid=2)}
{aten("library", "m0", "aten.mm.default", ["%t1", "%w"], "0 : index, 1 : index", m2)}
{kernel("bias_relu", ["%m0", "%b", "%t2"], ["r", "r", "w"])}
      "pygraph.copy"(%t2, %t3) : {b2}
      "pygraph.fill"(%t4) {{byte = 0 : i64}} : (!pygraph.buf) -> ()
{kernel("add_one", ["%y"], ["rw"])}
      "pygraph.yield"(%m0) {{operandSegmentSizes = array<i32: 1>}} : (!pygraph.buf) -> ()
    }}) {{mode = "graph", info = {{}}, resultSegmentSizes = array<i32: 1>}} : () -> !pygraph.buf
{aten("host", "h", "aten.sum.dim_IntList", ["%t3"], "0 : index, [1], false, unit", v, ' reason = "smoke", slots = [-1],')}
    "pygraph.segment"() ({{
{aten("library", "hc", "aten.mul.Scalar", ["%h"], "0 : index, 2.500000e-01 : f64", v)}
{kernel("scale2_64", ["%hc", "%t5"], ["r", "w"])}
      "pygraph.copy"(%t5, %t6) : {b2}
      "pygraph.fill"(%t7) {{byte = 0 : i64}} : (!pygraph.buf) -> ()
      "pygraph.yield"() {{operandSegmentSizes = array<i32: 0>}} : () -> ()
    }}) {{mode = "eager", info = {{}}, resultSegmentSizes = array<i32: 0>}} : () -> ()
    %r = "pygraph.segment"() ({{
{kernel("combine", ["%m", "%h", "%t6", "%t8"], ["r", "r", "r", "w"])}
{aten("library", "r0", "aten.add.Tensor", ["%t8", "%m"], "0 : index, 1 : index, 1 : i64", m2)}
      "pygraph.yield"(%r0) {{operandSegmentSizes = array<i32: 1>}} : (!pygraph.buf) -> ()
    }}) {{mode = "graph", info = {{}}, resultSegmentSizes = array<i32: 1>}} : () -> !pygraph.buf
    %mt = "pygraph.view"(%m) {{layout = {_layout([16, 64], [1, 16])}}} : (!pygraph.buf) -> !pygraph.buf
    %t3b = "pygraph.view"(%t3) {{layout = {_layout([32, 16], [16, 1], 512)}}} : (!pygraph.buf) -> !pygraph.buf
    return %t3, %h, %r, %t4, %m, %t7, %mt, %t3b : {", ".join(["!pygraph.buf"] * 8)}
  }}
}}
"""


def reference(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> list[torch.Tensor]:
    """What `plan_text()` computes, in eager torch: its outputs, then the new value of y."""
    m = (2 * x) @ w
    t3 = torch.relu(m + b)
    h = t3.sum(1)
    t6 = 2 * (h * 0.25)
    r = m + h[:, None] + t6[:, None] + m
    return [t3, h, r, torch.zeros_like(t3), m, torch.zeros_like(h), m.t(), t3[32:], y + 1]


def plan_inputs(seed: int, device: str | torch.device) -> list[torch.Tensor]:
    """x and y: new tensors each call, as a user passes them."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(64, 32, generator=g).to(device), torch.randn(64, 16, generator=g).to(device)]


def plan_parameters(seed: int, device: str | torch.device) -> list[torch.Tensor]:
    """w and b: the graphs are built on these tensors; new ones make the runtime rebuild."""
    g = torch.Generator().manual_seed(1000 + seed)
    return [torch.randn(32, 16, generator=g).to(device), torch.randn(16, generator=g).to(device)]


# ---------------------------------------------------------------------------------------- the checks


def close(got: torch.Tensor, want: torch.Tensor) -> bool:
    got, want = got.double().cpu(), want.double().cpu()
    return got.shape == want.shape and bool(
        torch.linalg.norm(got - want) <= 1e-4 * torch.linalg.norm(want) + 1e-12
    )


FAILED = object()


class Checks:
    def __init__(self) -> None:
        self.failed = 0

    def check(self, name: str, fn: Callable[[], object]) -> object:
        """Runs one check: its result, or FAILED when it raised or returned False."""
        try:
            result = fn()
        except Exception:
            result, trace = FAILED, traceback.format_exc()
        else:
            trace = ""
        if result is False or result is FAILED:
            self.failed += 1
            print(f"FAIL {name}\n{trace}", flush=True)
            return FAILED
        print(f"PASS {name}" + ("" if result in (True, None) else f": {result}"), flush=True)
        return result


def part1(c: Checks, device: torch.device) -> None:
    """Driver, compiler and builder alone: no plan, no MLIR."""
    from pygraph.backend.cuda import driver
    from pygraph.backend.cuda.compile import compile_function, load
    from pygraph.backend.cuda.graph import GraphBuilder, node_kinds, record

    major, minor = torch.cuda.get_device_capability(device)
    arch = 10 * major + minor
    cubins = {}

    def compile_all() -> str:
        for name in ("scale2", "bias_relu"):
            fn = KERNELS[name]
            types = dict.fromkeys(fn.arg_names, "*fp32")
            attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(types))}
            cubins[name] = compile_function(fn, types, attrs, 4, 1, arch, f"smoke-{name}-{arch}", name)
            assert cubins[name].num_params == len(types) + 2, cubins[name]
        return f"sm_{arch}, params {[cb.num_params for cb in cubins.values()]}"

    if c.check("compile Triton kernels to cubins (2 scratch pointers appended)", compile_all) is FAILED:
        return
    x = torch.randn(64, 32, device=device)
    w = torch.randn(32, 16, device=device)
    b = torch.randn(16, device=device)
    t1, t2, t3 = (torch.empty(64, n, device=device) for n in (32, 16, 16))
    z = torch.zeros(1000, dtype=torch.uint8, device=device)
    functions = {}

    def load_all() -> None:
        context = driver.current_context(device.index)
        functions.update((name, load(cubin, context)) for name, cubin in cubins.items())

    if c.check("load cubins (cuModuleLoadData, cuModuleGetFunction)", load_all) is FAILED:
        return
    stream = driver.cu.CUstream(torch.cuda.current_stream(device).cuda_stream)

    def eager_launch() -> bool:
        scale = functions["scale2"]
        scale.launch((2, 1, 1), scale.params([x.data_ptr(), t1.data_ptr()]), stream)
        torch.cuda.synchronize(device)
        return close(t1, 2 * x)

    c.check("eager launch (cuLaunchKernel)", eager_launch)

    side = torch.cuda.Stream(device)
    pool = torch.cuda.graph_pool_handle()
    state = {}

    def build() -> str:
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            torch.mm(t1, w)  # warm-up on the recording stream
        torch.cuda.current_stream(device).wait_stream(side)
        torch.cuda.synchronize(device)
        recording = record(lambda: [torch.mm(t1, w)], side, pool)
        m = recording.outputs[0]
        builder = GraphBuilder(driver.current_context(device.index))
        scale, relu = functions["scale2"], functions["bias_relu"]
        builder.kernel([], scale, (2, 1, 1), scale.params([x.data_ptr(), t1.data_ptr()]))  # 0
        builder.child([0], recording.handle)  # 1
        builder.kernel([1], relu, (1, 1, 1), relu.params([m.data_ptr(), b.data_ptr(), t2.data_ptr()]))  # 2
        builder.memcpy([2], t3.data_ptr(), t2.data_ptr(), t2.numel() * 4)  # 3
        builder.memset([], z.data_ptr(), 0x3F, z.numel())  # 4
        builder.skip([3, 4])  # 5: stands for nothing; a node after it waits for 3 and 4
        builder.memset([5], z.data_ptr() + 990, 0x11, 10)  # 6
        state.update(graph=builder.graph, exec=builder.instantiate(), recording=recording, m=m)
        return f"recorded mm holds {node_kinds(recording.handle)}"

    if c.check("build a graph: kernels, a child (recorded torch.mm), memcpy, memsets", build) is FAILED:
        return

    def readback() -> bool:
        kinds = sorted(node_kinds(state["graph"]))
        print(f"     node kinds read back: {kinds}")
        return kinds == ["child", "kernel", "kernel", "memcpy", "memset", "memset"]

    c.check("read back node kinds (cuGraphGetNodes, cuGraphNodeGetType)", readback)

    def replays() -> bool:
        ok = True
        for seed in range(3):
            g = torch.Generator().manual_seed(100 + seed)
            x.copy_(torch.randn(64, 32, generator=g))
            w.copy_(torch.randn(32, 16, generator=g))
            b.copy_(torch.randn(16, generator=g))
            z.zero_()
            t3.zero_()
            driver.launch_graph(
                state["exec"], driver.cu.CUstream(torch.cuda.current_stream(device).cuda_stream)
            )
            torch.cuda.synchronize(device)
            want = torch.relu((2 * x) @ w + b)
            bytes_ok = bool((z[:990] == 0x3F).all() and (z[990:] == 0x11).all())
            ok &= close(t3, want) and close(state["m"], (2 * x) @ w) and bytes_ok
        return ok

    c.check("replay the graph 3 times on new data (cuGraphLaunch) vs torch", replays)

    def destroy() -> None:
        driver.call("cuGraphExecDestroy", state["exec"])
        driver.call("cuGraphDestroy", state["graph"])

    c.check("destroy (cuGraphExecDestroy, cuGraphDestroy)", destroy)


def part2(c: Checks, device: torch.device) -> None:
    """The runtime on a hand-written plan."""
    try:
        from pygraph.backend.cuda.runtime import CudaRuntime
        from pygraph.backend.stats import plan_stats
        from pygraph.ir.context import parse
        from pygraph.ir.plan import read_plan
    except ImportError as exc:
        print(f"SKIP part 2 (the runtime on a plan): {exc}")
        return
    plan = c.check("read the hand-written plan", lambda: read_plan(parse(plan_text())))
    if plan is FAILED:
        return
    runtime = c.check("CudaRuntime(plan) compiles and loads its kernels", lambda: CudaRuntime(plan, device))
    if runtime is FAILED:
        return
    params = plan_parameters(1, device)
    first: list[torch.Tensor] = []

    def call(seed: int, parameters: list[torch.Tensor]) -> bool:
        inputs = plan_inputs(seed, device) + parameters
        want = reference(*inputs)
        runtime.bind_state(parameters)
        got = runtime(inputs[:2])
        torch.cuda.synchronize(device)
        if not first:
            first.extend(got)
        bad = [i for i, (g, w) in enumerate(zip([*got, inputs[1]], want, strict=True)) if not close(g, w)]
        if bad:
            print(f"     outputs differing from eager (index 8 is y, written in place): {bad}")
        return not bad

    c.check("call 1: eager warm-up, then build (outputs and y vs eager)", lambda: call(1, params))
    for seed in (2, 3, 4):
        c.check(f"replay on new inputs (seed {seed}) vs eager", lambda seed=seed: call(seed, params))
    c.check(
        "outputs of call 1 kept their values (io copy returns copies; output 4, m, is direct)",
        lambda: all(
            close(a, b)
            for i, (a, b) in enumerate(
                zip(first, reference(*plan_inputs(1, device), *params)[:8], strict=True)
            )
            if i != 4
        ),
    )

    def stats() -> str:
        s = runtime.stats()
        want_nodes = {"kernel": 4, "memcpy": 1, "memset": 1, "child": 2, "library": 2, "host": 1}
        assert s["nodes"] == want_nodes, s["nodes"]
        assert (s["graphs"], s["segments"], s["captures"], s["host_ops"]) == (2, 3, 2, 1), s
        extra = 64 * 16 * 4 + 64 * 4  # y copied back, the host result copied to its home
        assert s["copied_bytes_per_call"] == plan_stats(plan, 0)["copied_bytes_per_call"] + extra, s
        return str(s)

    c.check("stats() read back from the instantiated graphs", stats)

    def new_parameter() -> bool:
        moved = [params[0] + 1, params[1]]  # w at a new address: the graphs must be rebuilt
        ok = call(5, moved) and runtime.captures == 4
        return ok and call(6, moved) and runtime.captures == 4

    c.check("a parameter at a new address rebuilds the graphs, then replays", new_parameter)


def main() -> int:
    if not torch.cuda.is_available():
        print("FAIL no CUDA device")
        return 1
    device = torch.device("cuda", torch.cuda.current_device())
    import cuda.bindings

    print(
        f"torch {torch.__version__}, triton {triton.__version__}, cuda-bindings {cuda.bindings.__version__}, "
        f"{torch.cuda.get_device_name(device)}"
    )
    c = Checks()
    part1(c, device)
    part2(c, device)
    print("ALL PASS" if c.failed == 0 else f"{c.failed} FAILED")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
