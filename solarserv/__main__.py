"""The `solarserv` command (`python -m solarserv` too): solarserv.cli's, and what Ctrl-C does before it is done."""

import signal


def main() -> int:
    try:
        from solarserv import cli  # a second on a busy machine: Ctrl-C here too is one of those seen to

        return cli.main()
    except KeyboardInterrupt:
        # Ctrl-C before the command was done, serve's among them while it loads what it serves (later, Ctrl-C is its
        # clean stop): no traceback, and the status a shell gives a command Ctrl-C ended.
        return 128 + signal.SIGINT


if __name__ == "__main__":
    raise SystemExit(main())
