"""Fixtures shared by the test modules."""

from collections.abc import Iterator

import pytest
import torch
from gpu_marks import GPU_REASON


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that `needs_gpu` is a `gpu` test too, so that `pytest -m gpu` on the GPU machine runs it
    (a test given the skip alone was left out of those runs)."""
    for item in items:
        if any(m.kwargs.get("reason") == GPU_REASON for m in item.iter_markers("skipif")):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture
def no_tf32():
    """fp32 matmuls and convolutions in full precision, so results compare with rtol about 1e-4."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture
def tf32():
    """TF32 matmuls allowed, as the benchmark times them (only then are products of unaligned rows
    rewritten: align_matmuls.py, row_phases.py)."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    yield
    torch.backends.cuda.matmul.allow_tf32 = before


@pytest.fixture
def kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Generated kernels' sources and cubins cached in this test run's directory, not the user's cache."""
    from pygraph.knobs import knobs

    with knobs.scope(cache_dir=tmp_path_factory.getbasetemp() / "pygraph-cache"):
        yield
