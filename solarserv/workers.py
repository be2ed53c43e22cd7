"""The workers of `solarserv serve --processes N`: forked by the parent once it has bound the port, started again
when one stops while the server runs, and stopped together on SIGTERM, SIGINT or SIGHUP to the parent.

Tornado's fork_processes, used before, restarted only a worker that failed (an error status, a signal): one
stopped alone by SIGTERM, status 0, was left stopped, and when it was worker 0, whose listening socket the parent
holds too, the kernel kept sending new connections to that socket, where they waited for ever. It restarted a
failing worker at once, a hundred times over the server's whole life, then ended with a traceback: a worker that
fails as it starts spun a core for seconds, and a hundred crashes a month apart ended a server as surely.
Here a worker is started again whatever ended it; one that fails at start is started again after a pause, longer
each time, and after RESTART_PAUSES_SECONDS are spent the parent gives up in one log line, stops the others and
exits with status 1. A worker still running STOP_WAIT_SECONDS after it was told to stop is killed: the parent
waited for it for ever. A second SIGINT while the workers stop (Ctrl-C pressed again) kills them at once, and the
parent exits with STOPPED_AT_ONCE_STATUS.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Iterable
from typing import Any, NamedTuple, NoReturn

from solarserv.web.server import STOP_GRACE_SECONDS

log = logging.getLogger("solarserv.workers")

# SIGHUP too: the terminal of a server run in the foreground was closed. Unless it was ignored when the process
# started, as `nohup` makes it so that the server outlives the terminal: read here, before any handler is set.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT,
                *([signal.SIGHUP] if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN else []))
# A worker that stops sooner than this after it was started failed at start: starting takes well under a second.
STARTING_SECONDS = 10.0
# The pauses before starting again a worker that fails at start, one for each failure in a row; after the
# last, the server gives up. A worker that ran longer is started again at once.
RESTART_PAUSES_SECONDS = (0.25, 0.5, 1.0, 2.0, 4.0)
GAVE_UP_STATUS = 1
# How long the parent waits for the workers it told to stop before it kills those left (SIGKILL). A worker's stop
# takes STOP_GRACE_SECONDS at most: one still running well past it is stuck (a plugin blocking its event loop, code
# that ignores the signal). Well under systemd's 90 s before it kills every process itself.
STOP_WAIT_SECONDS = STOP_GRACE_SECONDS + 10.0
# The exit status of a server a second SIGINT stopped at once: the one a shell gives a command Ctrl-C ended.
STOPPED_AT_ONCE_STATUS = 128 + signal.SIGINT


class Worker(NamedTuple):
    number: int  # 0 to count - 1


def fork_workers(count: int, listening: Iterable[socket.socket]) -> Worker:
    """Fork ``count`` workers; returns only in each of them, which worker it is. The parent supervises
    them until they have all stopped, then exits: status 0 after a stop signal (STOP_SIGNALS), GAVE_UP_STATUS when a
    worker kept failing at start. ``listening``: the sockets the parent holds for the workers it starts, closed when it
    stops them, so that new connections are refused while the workers answer those they hold."""
    return _Supervisor(count, listening).run()


class _Supervisor:
    def __init__(self, count: int, listening: Iterable[socket.socket]) -> None:
        self.count = count
        self.listening = list(listening)
        self.running: dict[int, tuple[int, float]] = {}  # pid: (worker number, when it was started)
        self.due: dict[int, float] = {}  # worker number: when to start it again
        self.failures_in_a_row = [0] * count
        self.stopping = False
        self.kill_at: float | None = None  # when to kill the workers that have not stopped
        self.gave_up = False
        self.wakeup_read, self.wakeup_write = os.pipe()

    def run(self) -> Worker:
        for descriptor in (self.wakeup_read, self.wakeup_write):
            os.set_blocking(descriptor, False)
        # A signal's handler runs only between two bytecodes, so select would sleep through it: its number written
        # to the pipe wakes select.
        signal.set_wakeup_fd(self.wakeup_write)
        signal.signal(signal.SIGCHLD, _wake_only)
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_stop_signal)
        for number in range(self.count):
            if self._start(number):
                return Worker(number)
        while True:
            self._reap()
            if self.stopping:
                self.due.clear()
            if not self.running and not self.due:
                break
            now = time.monotonic()
            if self.kill_at is not None and self.kill_at <= now:
                self._kill_those_left()
            for number, when in sorted(self.due.items()):
                if when <= now:
                    del self.due[number]
                    if self._start(number):
                        return Worker(number)
            wakeups = [*self.due.values(), *([] if self.kill_at is None else [self.kill_at])]
            timeout = max(0.0, min(wakeups) - now) if wakeups else None
            select.select([self.wakeup_read], [], [], timeout)
            with contextlib.suppress(BlockingIOError):
                os.read(self.wakeup_read, 4096)
        raise SystemExit(GAVE_UP_STATUS if self.gave_up else 0)

    def _start(self, number: int) -> bool:
        """Fork worker ``number``: True in the worker, False in the parent."""
        signals = {signal.SIGCHLD, *STOP_SIGNALS}
        # Held until each process has the handlers it needs: a stop signal the new worker ran the parent's
        # handler for would stop its siblings.
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            os.close(self.wakeup_read)
            os.close(self.wakeup_write)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for signum in STOP_SIGNALS:
                signal.signal(signum, _stop_before_serving)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
            return True
        self.running[pid] = (number, time.monotonic())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
        log.info("Worker %d started (pid %d)", number, pid)
        return False

    def _on_stop_signal(self, signum: int, frame: Any) -> None:
        if self.stopping and signum == signal.SIGINT:  # Ctrl-C pressed again: the parent alone decides, as a
            # worker is sent each Ctrl-C twice, from the terminal and passed on by the parent
            self._stop_at_once()
        if not self.stopping:
            log.info("Stopping on %s: passing it on to every worker (%d running)", signal.Signals(signum).name,
                     len(self.running))
        self._stop(signum)

    def _stop_at_once(self) -> NoReturn:
        left = len(self.running)
        log.warning("Stopping at once on a second SIGINT: killing %d worker%s still running, their requests in flight "
                    "unanswered (exit status %d)", left, "" if left == 1 else "s", STOPPED_AT_ONCE_STATUS)
        for pid in self.running:
            os.kill(pid, signal.SIGKILL)  # not reaped yet, so the pid is still this worker's
        for pid in self.running:
            os.waitpid(pid, 0)
        exit_at_once()

    def _stop(self, signum: int) -> None:
        """Pass a stop signal on to every worker: each stops with status 0, and is not started again."""
        if not self.stopping:
            self.kill_at = time.monotonic() + STOP_WAIT_SECONDS
        self.stopping = True
        # Left open, they would take new connections into their queue, which no worker accepts from any more.
        for listening in self.listening:
            listening.close()
        for pid in self.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _kill_those_left(self) -> None:
        self.kill_at = None
        for pid, (number, _) in self.running.items():
            log.warning("Worker %d (pid %d) still running %g s after it was told to stop: killing it (SIGKILL)",
                        number, pid, STOP_WAIT_SECONDS)
            os.kill(pid, signal.SIGKILL)  # not reaped yet, so the pid is still this worker's

    def _reap(self) -> None:
        while self.running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            if pid in self.running:
                self._ended(pid, status)

    def _ended(self, pid: int, status: int) -> None:
        number, started = self.running.pop(pid)
        ran = time.monotonic() - started
        how = _how_it_ended(status)
        if self.stopping:
            log.info("Worker %d (pid %d) stopped: %s", number, pid, how)
            return
        if ran >= STARTING_SECONDS:
            self.failures_in_a_row[number] = 0
            log.warning("Worker %d (pid %d) ended (%s) after %.0f s: starting it again", number, pid, how, ran)
            self.due[number] = time.monotonic()
            return
        failures = self.failures_in_a_row[number] = self.failures_in_a_row[number] + 1
        if failures > len(RESTART_PAUSES_SECONDS):
            log.error("Worker %d (pid %d) ended (%s) %.1f s after it started, %d times in a row within %g s of its "
                      "start: giving up, stopping the server (exit status %d); the worker's lines above say why",
                      number, pid, how, ran, failures, STARTING_SECONDS, GAVE_UP_STATUS)
            self.gave_up = True
            self._stop(signal.SIGTERM)
            return
        pause = RESTART_PAUSES_SECONDS[failures - 1]
        log.warning("Worker %d (pid %d) ended (%s) %.1f s after it started (%d of %d times in a row within %g s of its "
                    "start before the server gives up): starting it again in %g s", number, pid, how, ran, failures,
                    len(RESTART_PAUSES_SECONDS) + 1, STARTING_SECONDS, pause)
        self.due[number] = time.monotonic() + pause


def exit_at_once() -> NoReturn:
    """End this process now with STOPPED_AT_ONCE_STATUS, waiting for nothing: an exit would wait for the threads
    still running, an online geocoder's calls among them, up to its timeout. The log is flushed line by line, and
    what solarserv prints on stdout as it is written, so no line is lost."""
    os._exit(STOPPED_AT_ONCE_STATUS)


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        return f"killed by signal {signum}, {signal.Signals(signum).name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _wake_only(signum: int, frame: Any) -> None:
    """SIGCHLD's handler: the signal's number written to the wakeup pipe is all the parent needs."""


def _stop_before_serving(signum: int, frame: Any) -> None:
    """A worker's handler of the stop signals until its event loop takes them over: nothing to clean up yet."""
    sys.exit(0)
