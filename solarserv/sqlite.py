"""``sqlite_utils``, imported without pandas: import it, and its ``Migrations``, from here.

sqlite_utils imports pandas at its own import whenever pandas is installed, only so that it can take
DataFrames, which solarserv never gives it. Where pandas is installed (pvlib, a test and benchmark
dependency, brings it; so do many environments), that cost every serving process 0.35 s of start-up
and 33 MB of memory. So sqlite_utils is imported with pandas hidden; anything else may still import
pandas afterwards.
"""

from __future__ import annotations

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

__all__ = ["Migrations", "sqlite_utils"]
