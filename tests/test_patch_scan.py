"""The rule that decides whether a recorded vendor kernel's parameters can be patched
(`pygraph.backend.cuda.graph.find_addresses`), on synthetic parameter bytes: it needs no GPU."""

import struct

import pytest

from pygraph.backend.cuda.graph import NotPatchable, find_addresses

X, Y = 0x7F00_1000_0000, 0x7F00_2000_0000  # two buffers' addresses
BUFFERS = {0: (X, 4096), 1: (Y, 256)}


def words(*values: int) -> bytes:
    return b"".join(struct.pack("<Q", v) for v in values)


def test_every_aligned_word_holding_an_address_is_a_place_to_patch():
    parameter = words(7, X, 1024, Y, X)  # a struct: a size, x, a stride, y, x again (cuDNN holds it twice)
    assert find_addresses(parameter, BUFFERS) == [(8, 0, 0), (24, 1, 0), (32, 0, 0)]


def test_an_address_inside_a_buffer_is_patched_at_its_distance():
    """A call writing a view of the output (a later row, row-phases' products) holds an address inside
    it: patched to the new address plus the same distance."""
    parameter = words(X + 512, 3, Y + 8)
    assert find_addresses(parameter, BUFFERS) == [(0, 0, 512), (16, 1, 8)]


def test_addresses_of_other_memory_and_plain_numbers_are_left_alone():
    parameter = words(X + 4096, Y - 8, 0, 2**63) + struct.pack("<i", 3)  # just past x, just before y
    assert find_addresses(parameter, BUFFERS) == []


@pytest.mark.parametrize(
    "parameter",
    [struct.pack("<I", 5) + words(X), struct.pack("<I", 5) + words(Y + 8)],
    ids=["start", "inside"],
)
def test_an_address_at_an_unaligned_place_refuses(parameter):
    """In a packed struct, 4 bytes in: not a word the patch can rewrite."""
    with pytest.raises(NotPatchable, match="inside the buffer"):
        find_addresses(parameter, BUFFERS)
