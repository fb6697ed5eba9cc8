"""The programs of one compiled model (shape variants, measuring runtimes) share one arena per device."""

import pytest
import torch
from gpu_calls import on_two_streams
from gpu_marks import needs_gpu

import pygraph
from pygraph.backend.cuda.arena import Arena
from pygraph.metrics import relative_error


class User:
    """A runtime as the arena sees it: what it was told, in order."""

    def __init__(self, log: list[tuple[str, object]]) -> None:
        self.log, self.storage = log, None

    def leave_arena(self) -> None:
        self.log.append(("leave", self))
        self.storage = None

    def enter_arena(self, storage: torch.Tensor) -> None:
        self.log.append(("enter", self))
        self.storage = storage

    def on_stream(self, raw: int) -> None:
        self.log.append(("stream", raw))


def test_growing_the_arena_synchronises_then_moves_every_user_to_the_new_bytes(monkeypatch):
    log: list[tuple[str, object]] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append(("synchronize", device)))
    arena = Arena(torch.device("cpu"))
    small, large, smaller = User(log), User(log), User(log)
    small.enter_arena(arena.join(small, 1000))
    assert log == [("synchronize", arena.device), ("enter", small)] and arena.storage.numel() == 1000
    log.clear()
    large.enter_arena(arena.join(large, 5000))
    # the old bytes are dropped by every user before the new ones are allocated: never both at once
    assert log == [("synchronize", arena.device), ("leave", small), ("enter", small), ("enter", large)]
    assert small.storage is large.storage is arena.storage and arena.storage.numel() == 5000
    log.clear()
    smaller.enter_arena(arena.join(smaller, 3000))  # fits: nobody moves
    assert log == [("enter", smaller)] and smaller.storage is arena.storage


def test_a_call_on_another_stream_waits_for_the_last_call_of_any_user(monkeypatch):
    log: list[tuple[str, object]] = []

    class Event:
        def record(self, stream: "Stream") -> None:
            log.append(("record on", stream.raw))

    class Stream:
        def __init__(self, raw: int, device: torch.device) -> None:
            self.raw = raw

        def wait_event(self, event: Event) -> None:
            log.append(("wait on", self.raw))

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "ExternalStream", Stream)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    arena = Arena(torch.device("cpu"))
    first, second = User(log), User(log)
    for user in (first, second):
        user.enter_arena(arena.join(user, 100))
    log.clear()
    arena.follow(7)  # the first call: nothing to wait for
    assert log == [("stream", 7), ("stream", 7)]
    log.clear()
    arena.follow(9)  # another stream, whichever program calls: it waits for stream 7's work
    assert log == [("record on", 7), ("wait on", 9), ("stream", 9), ("stream", 9)]


class Mixer(torch.nn.Module):
    """Rows mixed over their features by a softmax between two products, with a residual and a norm."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(256, 512), torch.nn.Linear(512, 256)
        self.norm = torch.nn.LayerNorm(256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.down(torch.softmax(self.up(x), dim=-1)))


def _compiled_for_sizes(sizes: tuple[int, ...]) -> tuple[torch.nn.Module, pygraph.CompiledModel]:
    torch.manual_seed(0)
    model = Mixer().cuda().eval()
    batch = torch.export.Dim("batch", min=1, max=8192)
    with torch.no_grad():
        compiled = pygraph.export_and_compile(
            model, (torch.randn(sizes[0], 256, device="cuda"),), dynamic_shapes={"x": {0: batch}}
        )
        for n in sizes:  # each size's program compiled, smallest first: the arena grows at each
            compiled(torch.randn(n, 256, device="cuda"))
    return model, compiled


@pytest.mark.usefixtures("no_tf32")
@needs_gpu
def test_variants_of_growing_sizes_share_the_largest_arena_and_rebuild_on_it():
    sizes = (32, 128, 1024, 4096)
    model, compiled = _compiled_for_sizes(sizes)
    programs = [compiled, *compiled._variants.values()]
    assert len(programs) == len(sizes)
    arenas = [p._backend.plan.arena_bytes for p in programs]
    storage = {p._backend.arena.data_ptr() for p in programs}
    assert len(storage) == 1 and programs[0]._backend.arena.numel() == max(arenas) < sum(arenas)
    inputs = [torch.randn(n, 256, device="cuda") for n in (*sizes, *reversed(sizes), *sizes)]
    with torch.no_grad():
        outputs = [compiled(x) for x in inputs]  # queued back to back, programs alternating
        torch.cuda.synchronize()
        for x, y in zip(inputs, outputs, strict=True):
            assert relative_error(y, model(x)) <= 1e-4
    assert all(p.stats()["graphs"] >= 1 for p in programs)  # the earlier programs rebuilt on the new bytes


@pytest.mark.usefixtures("no_tf32")
@needs_gpu
def test_programs_called_on_two_streams_wait_for_each_other():
    """Two programs on the one arena, each called on a stream of its own without synchronising: a call waits
    for the other stream's last call, whichever program made it (they would overwrite each other's bytes)."""
    sizes = (4096, 2048)
    model, compiled = _compiled_for_sizes(sizes)
    inputs = [torch.randn(sizes[i % 2], 256, device="cuda") for i in range(16)]
    with torch.no_grad():
        expected = [model(x) for x in inputs]
    results = on_two_streams(compiled, inputs)
    for got, want in zip(results, expected, strict=True):
        assert relative_error(got, want) <= 1e-4
