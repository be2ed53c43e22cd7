"""Writing the files a test gives the service: plugins, templates."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write(directory: Path, name: str, source: str) -> Path:
    """``source``, dedented, as ``directory/name`` (the directory made if need be)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path
