"""The `solarserv` command (`python -m solarserv` too): solarserv.cli's, and what Ctrl-C does before it is done."""

import os
import signal

# numpy's OpenBLAS threads, read once as numpy loads: one, unless the operator says otherwise. Its second thread
# computing a year of the chart (skyfield, a month of days an evaluation) shortened nothing here and spun a core as
# long: 6 years took 0.73 s either way, 1.46 s of CPU with it and 0.74 s without, a core the event loop and the other
# workers needed.
BLAS_THREADS = "1"


def main() -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", BLAS_THREADS)
    try:
        from solarserv import cli  # a second on a busy machine: Ctrl-C here too is one of those seen to

        return cli.main()
    except KeyboardInterrupt:
        # Ctrl-C before the command was done, serve's among them while it loads what it serves (later, Ctrl-C is its
        # clean stop): no traceback, and the status a shell gives a command Ctrl-C ended.
        return 128 + signal.SIGINT


if __name__ == "__main__":
    raise SystemExit(main())
