"""Fixtures shared by the test modules."""

import pytest
import torch


@pytest.fixture
def no_tf32():
    """fp32 matmuls and convolutions in full precision, so results compare with rtol about 1e-4."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
