"""Another process holding the write lock of a key store's SQLite file, as the CLI does while it writes."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("begin immediate")
connection.execute("update keys set status = 'inactive'")
print("holding the write lock", flush=True)
sys.stdin.readline()
connection.execute("commit")
"""


@contextlib.contextmanager
def another_process_writing(path: Path):
    """A process that has deactivated every key in a transaction it holds open until the block ends, then
    commits."""
    writer = subprocess.Popen([sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "holding the write lock\n"
        yield
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.wait(timeout=30) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait()
        writer.stdin.close()
        writer.stdout.close()
