"""Commands run as file modes bind them, as they bind an operator's account, even where the tests run as root."""

from __future__ import annotations

import os
import shutil

import pytest

# What lets root read and write files whatever their modes.
OVERRIDES = "-dac_override,-dac_read_search"


def bound_by_file_modes(command: list[str]) -> list[str]:
    """``command`` as it is for a user; for root (containers, CI), under setpriv without the capabilities that let
    it write a read-only file."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes bind no process of this test")
    return [setpriv, f"--inh-caps={OVERRIDES}", f"--bounding-set={OVERRIDES}", *command]
