"""The process's stdout once its reader has gone away (`solarserv plugins | head -1`, a terminal closed after
`serve &`): what the commands (solarserv.cli) and serve's printed lines (solarserv.serving) both do then."""

from __future__ import annotations

import os
import sys


def discard_stdout() -> None:
    """Send what is written to stdout from now on, Python's own flush at exit among it, nowhere: its reader went
    away, and each write would fail again."""
    nowhere = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(nowhere, sys.stdout.fileno())
    finally:
        os.close(nowhere)  # stdout's descriptor now points at it: a second one would stay open unused
