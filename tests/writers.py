"""Another process changing a key store's SQLite file under the server: holding its write lock, as the CLI does
while it writes, or overwriting it."""

from __future__ import annotations

import contextlib
import sqlite3
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


def overwritten_under_the_server(path: Path) -> None:
    """The key store at ``path`` overwritten while a server has it open, as a bad copy or a disk fault leaves it.
    Its log is checkpointed into it first, as another process's connection does, or the server would go on
    reading its rows from the log."""
    with contextlib.closing(sqlite3.connect(path)) as other_process:
        other_process.execute("pragma wal_checkpoint(truncate)")
    with path.open("r+b") as database:
        database.write(b"Not a database any more.\n" * 40)
