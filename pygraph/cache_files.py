"""Writing files of pygraph's on-disk cache, which processes compiling at once share.

Each file is written beside its place under a name of its own and renamed into place, so a reader never
sees half a file (processes fuzzing side by side read an empty `costs-*.json` another was writing).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
