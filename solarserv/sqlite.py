"""``sqlite_utils``, imported without pandas: import it, and its ``Migrations``, from here; and how SQLite's
failures are told apart (``is_busy``, ``is_file_failure``).

sqlite_utils imports pandas at its own import whenever pandas is installed, only so that it can take
DataFrames, which solarserv never gives it. Where pandas is installed (pvlib, a test and benchmark
dependency, brings it; so do many environments), that cost every serving process 0.35 s of start-up
and 33 MB of memory. So sqlite_utils is imported with pandas hidden; anything else may still import
pandas afterwards.
"""

from __future__ import annotations

import sqlite3
import sys

if "pandas" in sys.modules:
    import sqlite_utils
else:
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` raises ImportError
    try:
        import sqlite_utils
    finally:
        del sys.modules["pandas"]

from sqlite_utils.migrations import Migrations  # noqa: E402  (after the guarded import above)

__all__ = ["Migrations", "is_busy", "is_file_failure", "sqlite_utils"]

# SQLite's primary result codes for a database file that cannot be used as it is, whatever the SQL: it cannot be
# opened or written by this user, is not a database or is damaged, or its disk failed or is full.
_FILE_FAILURES = frozenset({sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_READONLY,
                            sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL})


def is_file_failure(error: BaseException) -> bool:
    """Whether ``error`` is SQLite failing because of the database file (see _FILE_FAILURES), not because of the
    statement or a lock. Errors that Python's sqlite3 raises itself (a closed connection) carry no SQLite code:
    they are not."""
    return _primary_code(error) in _FILE_FAILURES


def is_busy(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's "database is locked": another connection held a write longer than this one
    waited."""
    return _primary_code(error) == sqlite3.SQLITE_BUSY


def _primary_code(error: BaseException) -> int:
    # Extended result codes (SQLITE_READONLY_DBMOVED, …) carry the primary code in their low byte.
    return getattr(error, "sqlite_errorcode", 0) & 0xFF
