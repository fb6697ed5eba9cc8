"""End to end on a CUDA GPU (run on the GPU machine): queued calls, state changes, profiling, memory."""

import concurrent.futures
import dataclasses
import gc
import weakref

import pytest
import torch
from gpu_calls import on_two_streams
from gpu_marks import needs_gpu

import pygraph
from pygraph.backend.cuda import runtime
from pygraph.backend.cuda.calibrate import costs_for
from pygraph.ir import costs
from pygraph.knobs import knobs
from pygraph.metrics import relative_error

pytestmark = [pytest.mark.gpu, needs_gpu, pytest.mark.usefixtures("no_tf32")]


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(256, 512), torch.nn.Linear(512, 256)
        self.norm = torch.nn.LayerNorm(256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


def test_eight_queued_calls_on_rotating_inputs_see_their_own_addresses():
    torch.manual_seed(0)
    model = Block().cuda().eval()
    inputs = [torch.randn(32, 256, device="cuda") for _ in range(8)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (inputs[0],))
        compiled(inputs[0])  # warm-up and graph build
        torch.cuda.synchronize()
        outputs = [compiled(x) for x in inputs]  # queued back to back, no synchronisation between them
        torch.cuda.synchronize()
        for x, y in zip(inputs, outputs, strict=True):
            assert relative_error(y, model(x)) <= 1e-4
    stats = compiled.stats()
    assert stats["graphs"] >= 1 and stats["captures"] == stats["library_calls"]
    assert stats["nodes"]["kernel"] >= 1
    assert stats["nodes"]["child"] + stats["nodes"]["inlined"] == stats["nodes"]["library"]


def test_calls_from_threads_and_streams_compute_their_own_results():
    """A thread whose first CUDA call is the compiled model's (no context current on it yet: a crash in the
    driver before), threads calling at once (they raced on the runtime's words), and calls alternating
    between two streams without synchronising (they raced on the arena): each result is eager's."""
    torch.manual_seed(0)
    model = Block().cuda().eval()
    inputs = [torch.randn(32, 256, device="cuda") for _ in range(24)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (inputs[0],))
        compiled(inputs[0])
        expected = [model(x) for x in inputs]
    torch.cuda.synchronize()

    def call(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            y = compiled(x)
        torch.cuda.current_stream().synchronize()
        return y

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a fresh thread, first call
        assert relative_error(pool.submit(call, inputs[1]).result(), expected[1]) <= 1e-4
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(call, inputs))
    for got, want in zip(results, expected, strict=True):
        assert relative_error(got, want) <= 1e-4
    results = on_two_streams(compiled, inputs)
    for got, want in zip(results, expected, strict=True):
        assert relative_error(got, want) <= 1e-4


@pytest.fixture
def cheap_patching(no_tf32):
    """Parameter updates priced near zero on this GPU, so that parameter-indirection patches the inputs and
    outputs these tests exercise: with calibrated figures the choice for an input of a few KB is close
    (one update of 1.7 us on the host against a 0.8 us copy kernel on one H200, the other way on another).
    A copy node keeps its default price: a calibration on a busy GPU read it near zero, and copies won."""
    key = costs_for(torch.device("cuda"))
    calibrated = costs.load(key)
    cheap = dataclasses.replace(calibrated, set_params_us=0.05, kernel_node_us=costs.Costs().kernel_node_us)
    costs.save(key, cheap)
    try:
        yield
    finally:
        costs.save(key, calibrated)


@pytest.fixture
def vendor_gemv():
    """Products of one row as cuBLAS's gemv (PYGRAPH_MATVEC=vendor), not the generated matvec kernel: the
    tests that use it exercise vendor calls reached by patching."""
    with knobs.scope(matvec="vendor"):
        yield


class Gemv(torch.nn.Module):
    """One row through a linear layer (cuBLAS's gemv, with `vendor_gemv`), GELU and layer norm: the input
    feeds a vendor call."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.norm = torch.nn.Linear(512, 512), torch.nn.LayerNorm(512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.nn.functional.gelu(self.fc(x)))


class Conv(torch.nn.Module):
    """A convolution of the input (channels-last on the GPU: cuDNN), then ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class Batched(torch.nn.Module):
    """A batched matrix product of the input with a parameter, then a scale."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 32, 64) / 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, self.w) * 0.5


class Lookup(torch.nn.Module):
    """A table indexed by two integer tensors (ATen's index kernel: one-index gathers are generated
    kernels), then a scale."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(1000, 1000))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table[ids, ids] * 0.5


class TwoReaders(torch.nn.Module):
    """The input read by two vendor calls: staged for both, it must be one staging buffer (a second one left
    the first recording reading a stale copy: half-precision bidirectional LSTMs, whose cuBLAS kernels
    cannot be patched, replayed wrong)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(512, 512), torch.nn.Linear(512, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc1(x)) + self.fc2(x)


PATCHED = {
    "gemv": (Gemv, lambda: torch.randn(1, 512, device="cuda")),
    "conv": (Conv, lambda: torch.randn(2, 16, 20, 20, device="cuda").to(memory_format=torch.channels_last)),
    "bmm": (Batched, lambda: torch.randn(4, 48, 32, device="cuda")),
    "embedding": (Lookup, lambda: torch.randint(0, 1000, (2, 24), device="cuda")),
}


def _poison(x: torch.Tensor) -> None:
    x.fill_(float("nan") if x.is_floating_point() else 999_999)  # NaN, or an id far out of range


@pytest.mark.parametrize("name", PATCHED)
@pytest.mark.usefixtures("vendor_gemv", "cheap_patching")
def test_a_patched_vendor_call_reads_each_calls_input_and_never_the_old_one(name):
    torch.manual_seed(3)
    make, draw = PATCHED[name]
    model = make().cuda().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (draw(),))
        assert [io["mechanism"] for io in compiled.explain().io if io["kind"] == "input"] == ["patch"]
        first = draw()
        compiled(first)  # the warm-up, then the graphs are built with `first`'s address in them
        kept = [draw() for _ in range(3)]
        results = [compiled(x) for x in kept]
        _poison(first)  # a graph that still read the address it was built with would now see poison
        again = draw()
        result = compiled(again)
        torch.cuda.synchronize()
        assert relative_error(result, model(again)) <= 1e-4
        for x, y in zip(kept, results, strict=True):  # earlier results are fresh tensors, still intact
            assert relative_error(y, model(x)) <= 1e-4
    stats = compiled.stats()
    assert stats["patched_nodes"] >= 1 and stats["patches_staged"] == 0
    assert stats["nodes"]["inlined"] >= 1 and stats["copied_bytes_per_call"] == 0


class Logits(torch.nn.Module):
    """A norm, then a linear layer whose result is the output (a language-model head)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm, self.head = torch.nn.LayerNorm(256), torch.nn.Linear(256, 4096)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(x))


@pytest.mark.usefixtures("cheap_patching")
def test_a_vendor_call_writes_each_calls_fresh_output():
    torch.manual_seed(7)
    model = Logits().cuda().eval()
    inputs = [torch.randn(64, 256, device="cuda") for _ in range(5)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (inputs[0],))
        assert [io["mechanism"] for io in compiled.explain().io if io["kind"] == "output"] == ["patch"]
        outputs = [compiled(x) for x in inputs]  # the first builds the graphs; the rest replay, queued
        torch.cuda.synchronize()
        assert len({y.data_ptr() for y in outputs}) == len(outputs)
        for x, y in zip(inputs, outputs, strict=True):  # each result its own, intact after later calls
            assert relative_error(y, model(x)) <= 1e-4
    stats = compiled.stats()
    assert stats["nodes"]["inlined"] >= 1 and stats["patches_staged"] == 0
    assert stats["copied_bytes_per_call"] == 0 and stats["host_ops"] == 0


@pytest.mark.usefixtures("cheap_patching")
def test_a_patched_node_is_updated_only_when_its_addresses_change(monkeypatch):
    """The same input again, the last result dropped (the allocator hands its block out again): no
    patched node is updated (the table's writer, if any, is). A failed update leaves the node to be
    updated at the next call, whatever its addresses, so that no call replays another call's address."""
    from pygraph.backend.cuda import driver

    torch.manual_seed(5)
    model = Logits().cuda().eval()
    x, other = torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda")
    updates, real = [], driver.set_kernel_params

    def count(*args: object) -> None:
        updates.append(args)
        real(*args)

    monkeypatch.setattr(driver, "set_kernel_params", count)
    with (
        torch.no_grad(),
        knobs.scope(native="off"),
    ):  # the Python path's updates (replay.c: test_native_replay)
        compiled = pygraph.export_and_compile(model, (x,))
        assert [io["mechanism"] for io in compiled.explain().io if io["kind"] == "output"] == ["patch"]
        compiled(x)  # the warm-up and the build
        address = compiled(x).data_ptr()
        writers = sum(g.writer is not None for g in compiled._backend._graphs)
        del updates[:]
        y = compiled(x)
        assert y.data_ptr() == address and len(updates) == writers  # the output's block again
        assert relative_error(y, model(x)) <= 1e-4
        del updates[:]
        z = compiled(other)  # y is alive: a new output address
        assert len(updates) > writers and relative_error(z, model(other)) <= 1e-4
        del y, z

        def fail(*args: object) -> None:
            raise driver.CudaError(
                "cuGraphExecKernelNodeSetParams", driver.cu.CUresult.CUDA_ERROR_INVALID_VALUE
            )

        compiled(other)  # the output's block is free again; the next call's output takes another
        keep = compiled(other)
        monkeypatch.setattr(driver, "set_kernel_params", fail)
        with pytest.raises(driver.CudaError):
            compiled(other)
        monkeypatch.setattr(driver, "set_kernel_params", count)
        del updates[:]
        y = compiled(other)
        assert len(updates) > writers and relative_error(y, model(other)) <= 1e-4
        del keep


@pytest.mark.parametrize("make", [Block, Conv], ids=["vendor products", "derived NHWC weight"])
def test_the_native_replay_takes_all_graph_calls_and_hands_back_the_rest(make):
    """The C replay (backend/cuda/replay.c) takes queued calls on rotating inputs; an input of other
    strides, an in-place change of a weight that derived state (NHWC copies) follows, and a replaced
    parameter go through the Python path, and every result matches eager, also with the replay off."""
    torch.manual_seed(11)
    model = make().cuda().eval()
    shape = (32, 256) if make is Block else (2, 16, 20, 20)
    layout = torch.contiguous_format if make is Block else torch.channels_last
    inputs = [torch.randn(shape, device="cuda").contiguous(memory_format=layout) for _ in range(6)]
    with torch.no_grad(), knobs.scope(graphs="all"):
        compiled = pygraph.export_and_compile(model, (inputs[0],))
        compiled(inputs[0])
        assert compiled._backend.native is not None and compiled._replay is compiled._backend.native
        outputs = [compiled(x) for x in inputs]  # queued back to back
        for x, y in zip(inputs, outputs, strict=True):
            assert relative_error(y, model(x)) <= 1e-4
        other = inputs[1].contiguous() if make is Conv else inputs[1].t().contiguous().t()
        assert relative_error(compiled(other), model(other)) <= 1e-4
        layer = next(m for m in model.modules() if isinstance(m, torch.nn.Linear | torch.nn.Conv2d))
        layer.weight.mul_(-2)  # in place: the version changes, nothing is re-registered
        assert relative_error(compiled(inputs[2]), model(inputs[2])) <= 1e-4
        layer.weight = torch.nn.Parameter(torch.randn_like(layer.weight) / 16)
        assert relative_error(compiled(inputs[3]), model(inputs[3])) <= 1e-4
        assert compiled._replay is compiled._backend.native is not None  # the rebuilt graphs' replay
        with knobs.scope(native="off"):
            python = pygraph.export_and_compile(model, (inputs[0],))
            python(inputs[0])
            assert python._backend.native is None
            assert relative_error(python(inputs[4]), compiled(inputs[4])) <= 1e-6


class Numbers(torch.nn.Module):
    """A float, an int and a bool argument, and a float attribute a caller sets before calls."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.temperature = torch.nn.Linear(64, 64), 0.5

    def forward(self, x: torch.Tensor, scale: float, step: int, flip: bool) -> torch.Tensor:
        return (self.fc(x) * scale / self.temperature + step) * (1 - 2 * flip)


def test_python_numbers_and_attributes_set_per_call_stay_in_the_native_replay():
    """Numbers travel by value in the table; the C replay writes their bits (replay.c), also for the
    program that takes a changed attribute as an input: each call matches eager, and the calls after the
    first ones of each program run in C (the Python path's `_run` is not entered)."""
    torch.manual_seed(12)
    model = Numbers().cuda().eval()
    x = torch.randn(8, 64, device="cuda")
    calls = [(0.25 * k, k - 3, k % 2 == 0) for k in range(8)]
    with torch.no_grad(), knobs.scope(graphs="all"):
        compiled = pygraph.export_and_compile(model, (x, 0.5, 2, False))
        compiled(x, *calls[0])
        ran = []
        original = pygraph.CompiledModel._run
        pygraph.CompiledModel._run = lambda self, *given: ran.append(self) or original(self, *given)
        try:
            for args in calls:
                torch.testing.assert_close(compiled(x, *args), model(x, *args), rtol=1e-5, atol=1e-5)
            assert ran == [] and compiled._replay is compiled._backend.native is not None
            for k, args in enumerate(calls):
                model.temperature = 0.5 + k
                torch.testing.assert_close(compiled(x, *args), model(x, *args), rtol=1e-5, atol=1e-5)
        finally:
            pygraph.CompiledModel._run = original
    lifted = next(way for way in compiled._ways if way is not None)
    assert [read.path for read in lifted._lifted] == ["temperature"] and lifted._replay is not None
    assert len(ran) <= 4  # the traced program's checks, the way traced and its first calls


class AttentionThenIndexAdd(torch.nn.Module):
    """One head's attention (the generated kernel writes [B, 1, L, D] with the head's stride D) read by
    ATen's `index_put(accumulate=True)`, which torch 2.11 gets wrong on such a stride."""

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.scaled_dot_product_attention(x, x, x)
        return y.index_add(2, index, y.new_ones([x.shape[0], 1, index.shape[0], x.shape[-1]]) * 0.5)


def test_a_library_call_reads_size_1_dims_at_dense_strides():
    torch.manual_seed(13)
    model, x = AttentionThenIndexAdd(), torch.randn(8, 1, 3, 8, device="cuda")
    index = torch.tensor([0, 0, 1, 2, 2, 2], device="cuda")
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x, index))
        for _ in range(3):
            x = torch.randn(8, 1, 3, 8, device="cuda")
            assert relative_error(compiled(x, index), model(x, index)) <= 1e-5


@pytest.mark.usefixtures("vendor_gemv")
def test_a_patched_vendor_input_may_be_misaligned_or_strided():
    """cuBLAS's kernels were recorded on an aligned, contiguous input; a view 4 bytes into a larger tensor
    or every other element of a row is copied into the plan's layout first, as eager's results show."""
    torch.manual_seed(6)
    model = Gemv().cuda().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (torch.randn(1, 512, device="cuda"),))
        compiled(torch.randn(1, 512, device="cuda"))
        shifted = torch.randn(513, device="cuda")[1:].view(1, 512)  # 4 bytes past an aligned start
        strided = torch.randn(1, 1024, device="cuda")[:, ::2]
        for x in (shifted, strided, torch.randn(1, 512, device="cuda")):
            assert relative_error(compiled(x), model(x)) <= 1e-4
    assert compiled.stats()["patches_staged"] == 0


@pytest.mark.parametrize(
    "make, result_is_output, output_bytes",
    [
        (Gemv, False, 512 * 4),
        (lambda: torch.nn.Linear(512, 256), True, 256 * 4),
        (TwoReaders, False, 512 * 4),
    ],
    ids=["input staged", "input staged, output copied", "input of two recordings staged once"],
)
@pytest.mark.usefixtures("vendor_gemv", "cheap_patching")
def test_an_unpatchable_recording_stages_its_input_and_copies_its_output(
    monkeypatch, make, result_is_output, output_bytes
):
    """Where a recording cannot be patched, its input is staged, once however many recordings read it; where
    it writes the output's bytes (a linear layer alone, or a result that memory planning placed there as
    scratch, which it may do when patches are cheap), each call returns a copy of them, so earlier results
    stay intact."""
    from pygraph.backend.cuda import graph

    def refuse(*args, **kwargs):
        raise graph.NotPatchable("refused by the test")

    monkeypatch.setattr(graph.GraphBuilder, "inline", refuse)
    torch.manual_seed(4)
    model = make().cuda().eval()
    inputs = [torch.randn(1, 512, device="cuda") for _ in range(4)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (inputs[0],))
        outputs = [compiled(x) for x in inputs]
        torch.cuda.synchronize()
        for x, y in zip(inputs, outputs, strict=True):
            assert relative_error(y, model(x)) <= 1e-4
    assert len({y.data_ptr() for y in outputs}) == len(outputs)
    reasons = compiled._backend.staging_reasons
    staged = [r for r in reasons if r.startswith("input '")]
    copied = [r for r in reasons if r.startswith("output 0 is copied")]
    assert len(staged) == 1 and len(staged) + len(copied) == len(reasons), reasons
    assert len(copied) == 1 if result_is_output else len(copied) <= 1, reasons
    stats = compiled.stats()
    assert stats["nodes"]["inlined"] == 0
    assert stats["copied_bytes_per_call"] == 512 * 4 + len(copied) * output_bytes


@pytest.mark.parametrize("make", [Block, Logits], ids=["kernel output", "vendor output"])
def test_parameter_changes_are_seen_on_the_gpu(make):
    """A replaced parameter rebuilds the graphs: the next call warms up again and returns what it computed
    (a vendor call's own result, not the fresh tensor that only the graph it replaces wrote)."""
    torch.manual_seed(1)
    model = make().cuda().eval()
    x = torch.randn(32, 256, device="cuda")
    with torch.no_grad(), knobs.scope(graphs="all"):
        compiled = pygraph.export_and_compile(model, (x,))
        compiled(x)
        model.load_state_dict(make().cuda().state_dict())
        assert relative_error(compiled(x), model(x)) <= 1e-4
        layer = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
        layer.weight = torch.nn.Parameter(torch.randn_like(layer.weight) / 16)
        assert relative_error(compiled(x), model(x)) <= 1e-4


def test_a_profiled_choice_is_measured_once_and_reused(tmp_path, monkeypatch):
    torch.manual_seed(2)
    model = Block().cuda().eval()
    x = torch.randn(32, 256, device="cuda")
    with knobs.scope(cache_dir=tmp_path), torch.no_grad():
        profiled = pygraph.export_and_compile(model, (x,), profile=True)
        reasons = [s["info"]["reason"] for s in profiled.explain().segments]
        assert all("measured" in r for r in reasons), reasons
        assert relative_error(profiled(x), model(x)) <= 1e-4
        import pygraph.backend.cuda.profile as profile_module

        monkeypatch.setattr(profile_module, "profile_segments", lambda *a, **k: pytest.fail("measured again"))
        again = pygraph.export_and_compile(model, (x,))  # no profile=True: the stored figures decide
        assert [s["info"]["reason"] for s in again.explain().segments] == reasons
        key = (
            next(p.name for p in tmp_path.glob("segments-*.json"))
            .removeprefix("segments-")
            .removesuffix(".json")
        )
        assert costs.measured_segments(key)


class Shared(torch.nn.Module):
    """A linear layer's result, returned and read again: a copy kernel returns it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(256, 256)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.fc(x)
        return h, torch.relu(h)


@pytest.mark.parametrize("make", [Gemv, Block, Shared], ids=["patched", "table", "copy kernel"])
@pytest.mark.usefixtures("vendor_gemv")
def test_profile_measures_how_each_input_and_output_is_reached(tmp_path, make):
    torch.manual_seed(5)
    model = make().cuda().eval()
    x = torch.randn(1 if make is Gemv else 32, 512 if make is Gemv else 256, device="cuda")
    with knobs.scope(cache_dir=tmp_path), torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,), profile=True)
        assert relative_error(compiled(x), model(x)) <= 1e-4
    items = [i for i in compiled.explain().io if i["kind"] in ("input", "output")]
    if make is Shared:  # written into the output that measuring binds, through the table
        assert items[1]["mechanism"] == "copy kernel", items
    for item in items:
        measured = item["measured"]
        assert set(measured) == {"host_us", "gpu_us"}, item
        if item["mechanism"] == "patch":  # parameter updates on the host, nothing on the GPU
            assert measured["host_us"] > 0 and measured["gpu_us"] == 0, item
        else:  # a share of the table's writer node at least
            assert measured["gpu_us"] > 0, item
    assert "measured: host" in str(compiled.explain())


def test_launch_floor_is_measured():
    model = Block().cuda().eval()
    x = torch.randn(32, 256, device="cuda")
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (x,))
        compiled(x)
    launch = compiled._backend.measure_launch_us((x,))
    assert launch is not None and 0 < launch < 1000


class Tower(torch.nn.Module):
    """Sixteen vendor matmuls in a row with kernels between: each matmul's result dies at the next kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(1024, 1024) for _ in range(16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.tanh(layer(x)) * 0.5 + x
        return x


@pytest.mark.parametrize("graphs", ["all", "none"])
def test_vendor_results_are_freed_after_their_last_use(graphs):
    """Recorded into graphs (their pool reuses the memory) or run eagerly at every call (dropped as eager
    drops them): either way the model never holds all its intermediates at once."""
    torch.manual_seed(3)
    model = Tower().cuda().eval()
    inputs = [torch.randn(2048, 1024, device="cuda") for _ in range(3)]
    results_mb = 16 * 2048 * 1024 * 4 / 2**20  # what the matmul results would hold if none were freed
    with torch.no_grad(), knobs.scope(graphs=graphs):  # forced: select-graphs could choose either
        compiled = pygraph.export_and_compile(model, (inputs[0],))
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()
        compiled(inputs[0])  # the warm-up, then the recordings
        torch.cuda.synchronize()
        peak_mb = (torch.cuda.max_memory_allocated() - allocated) / 2**20
        torch.cuda.empty_cache()  # what stays reserved is the arena, the graphs' pool and the output
        reserved_mb = (torch.cuda.memory_reserved() - reserved) / 2**20
        compiled(inputs[2])  # the build dropped cuBLAS's workspaces: a first eager matmul makes one again
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        compiled(inputs[1])  # a later call: a replay, or eager launches dropping results as they go
        torch.cuda.synchronize()
        call_mb = (torch.cuda.max_memory_allocated() - before) / 2**20
        outputs = [compiled(x) for x in inputs]  # queued back to back; the reused memory is ordered
        torch.cuda.synchronize()
        for x, y in zip(inputs, outputs, strict=True):
            assert relative_error(y, model(x)) <= 1e-4
    stats = compiled.stats()
    assert stats["captures"] == (stats["library_calls"] if graphs == "all" else 0)
    # arena (two 8 MB activations), output (8 MB), a few live matmul results and, recorded, the
    # recordings' cuBLAS workspace (32 MiB on Hopper, in their pool): not all sixteen results
    assert peak_mb < 0.7 * results_mb, peak_mb
    assert reserved_mb < 0.6 * results_mb, reserved_mb
    assert call_mb < 0.3 * results_mb, call_mb  # its output and, eagerly, a few live results


def test_graphs_survive_cublas_dropping_its_workspaces():
    """Recorded matmuls own their cuBLAS workspace (in the runtime's pool), so another library dropping
    cuBLAS's per-stream workspaces (reduce-overhead's recordings do) and the cache being emptied leave
    the graphs correct; they once used the side stream's workspace and failed to launch after it."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(4)]).cuda().eval()
    x = torch.randn(2048, 2048, device="cuda")
    compiled = pygraph.export_and_compile(model, (x,), target="cuda")
    compiled(x)
    torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.empty_cache()
    filler = [torch.full((8 << 20,), float("nan"), device="cuda") for _ in range(8)]  # takes freed memory
    for _ in range(3):
        x = torch.randn(2048, 2048, device="cuda")
        assert relative_error(compiled(x), model(x)) < 1e-5
    torch.cuda.synchronize()
    assert all(t.isnan().all() for t in filler)


class Positional(torch.nn.Module):
    """A product of parameters alone (derived state, computed at export) and a product of the input."""

    def __init__(self) -> None:
        super().__init__()
        self.positions = torch.nn.Parameter(torch.randn(64, 512))
        self.mix = torch.nn.Parameter(torch.randn(512, 512) / 512**0.5)
        self.weight = torch.nn.Parameter(torch.randn(512, 512) / 512**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight + self.positions @ self.mix


def test_the_warm_up_holds_one_cublas_workspace():
    """Derived state computed at export leaves cuBLAS a workspace for the caller's stream; the warm-up of
    recorded products makes one for the side stream. XLNet's peak held both (64 MiB on Hopper) until the
    warm-up dropped the first."""
    torch.manual_seed(0)
    model = Positional().cuda().eval()
    x = torch.randn(64, 512, device="cuda")
    torch._C._cuda_clearCublasWorkspaces()
    before = torch.cuda.memory_allocated()
    with torch.cuda.stream(torch.cuda.Stream()):
        product = model.weight @ model.weight
        torch.cuda.synchronize()
    workspace = torch.cuda.memory_allocated() - before - product.nbytes
    assert workspace > 0
    del product
    torch._C._cuda_clearCublasWorkspaces()
    with torch.no_grad(), knobs.scope(graphs="all"):
        compiled = pygraph.export_and_compile(model, (x,), target="cuda")
        assert any(a.role == "derived" for a in compiled.plan.arguments)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        y = compiled(x)  # the warm-up, then the recordings
        torch.cuda.synchronize()
        first_call = torch.cuda.max_memory_allocated() - base
        assert relative_error(y, model(x)) <= 1e-4
    assert first_call < workspace / 2, (first_call, workspace)


def test_a_recording_waits_for_the_callers_stream_to_read_the_warm_ups_results(monkeypatch):
    """The first call frees a vendor call's warm-up result before recording that call on the side stream,
    where torch's capture set-up allocates the CUDA generator's seed and offset words from the side stream's
    pool and fills them: the result's first bytes, unless the caller's stream has read it by then. Here the
    caller's stream is kept busy after each vendor call's warm-up, as GPU contention did by chance."""
    original = runtime.check_results

    def then_busy(*args):  # runs on the host right after the side stream's work is joined
        original(*args)
        torch.cuda._sleep(100_000_000)  # ~50 ms of the caller's stream

    monkeypatch.setattr(runtime, "check_results", then_busy)
    gc.collect()  # graphs of earlier tests gone: torch allocates the generator's words anew
    torch.manual_seed(0)
    model = Positional().cuda().eval()
    x = torch.randn(64, 512, device="cuda")
    with torch.no_grad(), knobs.scope(graphs="all"):
        compiled = pygraph.export_and_compile(model, (x,), target="cuda")
        y = compiled(x)
        assert relative_error(y, model(x)) <= 1e-4


class Outer(torch.nn.Module):
    """Each element of the input times 64 factors: one generated kernel writes an output 64 times as large."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.randn(64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(-1) * self.scale


# Models whose output (256 MiB) dwarfs everything else: written by a generated kernel, or a vendor
# call's result (a language-model head, as mt5's and distilgpt2's logits).
LARGE = {"kernel": (Outer, (4096, 256)), "vendor": (Logits, (16384, 256))}
LARGE_MB = 256


@pytest.mark.parametrize("graphs", ["all", "none"])
@pytest.mark.parametrize("name", LARGE)
def test_a_result_lives_as_long_as_its_caller_keeps_it(name, graphs):
    """The runtime keeps no reference to what a call returned, nor to the warm-up's results, and allocates
    no output it does not return: a result the caller drops is freed at once, and a call's peak is its own
    output (for a vendor output's warm-up, its result beside its recording's). It used to keep the last
    call's outputs beside the next call's, and a fresh tensor that a vendor call's own result stood for."""
    torch.manual_seed(8)
    make, shape = LARGE[name]
    model = make().cuda().eval()
    x = torch.randn(shape, device="cuda")
    with torch.no_grad(), knobs.scope(graphs=graphs):  # forced: select-graphs could choose either
        compiled = pygraph.export_and_compile(model, (x,))
        expected = model(x)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()  # the model, the arena, `expected`
        peaks_mb = []
        for _ in range(3):  # the warm-up and the build, then replays (or eager launches)
            torch.cuda.reset_peak_memory_stats()
            y = compiled(x)
            torch.cuda.synchronize()
            peaks_mb.append((torch.cuda.max_memory_allocated() - base) / 2**20)
            assert relative_error(y, expected) <= 1e-4
            result = weakref.ref(y)
            del y
            gc.collect()
            assert result() is None
            held_mb = (torch.cuda.memory_allocated() - base) / 2**20
            assert held_mb < 0.5 * LARGE_MB, held_mb  # no output; a cuBLAS workspace (32 MiB) at most
    # the warm-up's result and its recording's, each 256 MiB, and the recording's cuBLAS workspace
    assert peaks_mb[0] < 2.5 * LARGE_MB, peaks_mb
    assert max(peaks_mb[1:]) < 1.5 * LARGE_MB, peaks_mb


@pytest.mark.parametrize("name", LARGE)
def test_profiling_holds_one_calls_outputs_at_a_time(tmp_path, name):
    """profile=True calls each measuring runtime two dozen times, dropping each result at once: its peak
    is one call's output (for a vendor output, the warm-up's result beside its recording's), not three."""
    torch.manual_seed(9)
    make, shape = LARGE[name]
    model = make().cuda().eval()
    x = torch.randn(shape, device="cuda")
    with knobs.scope(cache_dir=tmp_path), torch.no_grad():
        costs_for(x.device)  # calibrated first: what it allocates is not the profile's
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        compiled = pygraph.export_and_compile(model, (x,), profile=True)
        torch.cuda.synchronize()
        peak_mb = (torch.cuda.max_memory_allocated() - base) / 2**20
        held_mb = (torch.cuda.memory_allocated() - base) / 2**20
        assert relative_error(compiled(x), model(x)) <= 1e-4
    assert held_mb < 0.5 * LARGE_MB, held_mb
    assert peak_mb < (2.5 if name == "vendor" else 1.5) * LARGE_MB, peak_mb


@pytest.mark.parametrize("make", [Block, Logits], ids=["kernel output", "vendor output"])
def test_static_outputs_are_the_graphs_own_buffers(make):
    """static_outputs=True: after the warm-up, every call returns the graph's own buffer, which the runtime
    keeps (by design) and the next call overwrites."""
    torch.manual_seed(10)
    model = make().cuda().eval()
    inputs = [torch.randn(32, 256, device="cuda") for _ in range(3)]
    with torch.no_grad(), knobs.scope(graphs="all"):
        compiled = pygraph.export_and_compile(model, (inputs[0],), static_outputs=True)
        assert [io["mechanism"] for io in compiled.explain().io if io["kind"] == "output"] == ["static"]
        compiled(inputs[0])  # the warm-up returns its own result; the graphs are built
        addresses = set()
        for x in inputs:
            y = compiled(x)
            assert relative_error(y, model(x)) <= 1e-4
            addresses.add(y.data_ptr())
    assert len(addresses) == 1


def test_sizes_of_a_dynamic_dim_alternate_on_the_gpu():
    """Each batch size replays its own graphs; calls of different sizes queued without synchronising."""
    torch.manual_seed(11)
    model = Block().cuda().eval()
    batch = torch.export.Dim("batch", min=1, max=256)
    inputs = [torch.randn(n, 256, device="cuda") for n in (32, 7, 128, 32, 7, 128)]
    with torch.no_grad():
        compiled = pygraph.export_and_compile(model, (inputs[0],), dynamic_shapes={"x": {0: batch}})
        outputs = [compiled(x) for x in inputs]
        torch.cuda.synchronize()
        for x, y in zip(inputs, outputs, strict=True):
            assert relative_error(y, model(x)) <= 1e-4
    assert len(compiled._variants) == 2 and all(v.stats()["graphs"] >= 1 for v in compiled._variants.values())


class Upsampled(torch.nn.Module):
    """A channels-last convolution's 8 channels upsampled bilinearly (DPT's fusion stage): ATen's CUDA kernel
    returns them channels-last, where its fake kernel (hence the plan) says contiguous."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.out = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.interpolate(
            self.conv(x), scale_factor=2, mode="bilinear", align_corners=False
        )
        return self.out(torch.relu(h)) + h.mean(1, keepdim=True)


def test_a_recorded_call_returning_other_strides_than_planned_is_copied_into_the_plan_layout():
    model = Upsampled().cuda().eval()
    with torch.no_grad():
        compiled = pygraph.export_and_compile(
            model, (torch.randn(2, 3, 16, 16, device="cuda"),), target="cuda"
        )
        for _ in range(3):
            x = torch.randn(2, 3, 16, 16, device="cuda")
            assert relative_error(compiled(x), model(x)) <= 1e-5


class Chain(torch.nn.Module):
    """Generated kernels one after another (one-row products with norms in their prologues, activations
    and residuals in their epilogues or the next one's prologue): every edge between them may be
    programmatic."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(512, 512) for _ in range(4))
        self.norm = torch.nn.LayerNorm(512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + torch.nn.functional.gelu(layer(self.norm(x)))
        return x


def test_kernels_launched_early_wait_for_what_they_read():
    """On compute capability 9.0 and newer, the edges between generated kernels are programmatic (each
    kernel waits for its predecessors first, backend/cuda/compile.py): results on changing inputs match
    eager and the same plan with plain edges (PYGRAPH_PDL=off), call after call without synchronising."""
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("programmatic dependent launch needs compute capability 9.0")
    torch.manual_seed(12)
    model = Chain().cuda().eval()
    inputs = [torch.randn(1, 512, device="cuda") for _ in range(8)]
    with torch.no_grad(), knobs.scope(graphs="all"):
        early = pygraph.export_and_compile(model, (inputs[0],))
        with knobs.scope(pdl="off"):
            plain = pygraph.export_and_compile(model, (inputs[0],))
            plain(inputs[0])
        outputs = [early(x) for x in inputs]
        kernels = early.stats()["nodes"]["kernel"]  # (a chain: each kernel after the first waits for one)
        assert early.stats()["programmatic_edges"] >= kernels - 1 >= len(model.layers) - 1
        assert plain.stats()["programmatic_edges"] == 0
        for x, y in zip(inputs, outputs, strict=True):
            assert relative_error(y, model(x)) <= 1e-4
            torch.testing.assert_close(y, plain(x), rtol=0, atol=0)
