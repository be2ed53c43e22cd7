"""solarserv.web.server: a request that stops arriving is dropped after its timeout, and the server holds only as
many connections as its file descriptors allow, without spinning or flooding its log when they run out."""

from __future__ import annotations

import asyncio
import http.client
import logging
import os
import resource
import signal
import socket
import time

import pytest
from servers import refuses_connections, start_solarserv, stop_solarserv

from solarserv.web import server

# Waits for what must happen long before; past them the test fails rather than hang.
WAIT_SECONDS = 30


@pytest.fixture
def short_timeouts(monkeypatch):
    """The server's time limits, shortened before the `http_server` fixture makes its server."""
    monkeypatch.setattr(server, "IDLE_CONNECTION_TIMEOUT_SECONDS", 0.5)
    monkeypatch.setattr(server, "BODY_TIMEOUT_SECONDS", 0.5)


@pytest.mark.parametrize(("sent", "answered"), [
    (b"GET /healthz HTTP/1.1\r\nHost: solarserv\r\n", b""),  # headers never finished
    (b"POST /api/v1/solar-time HTTP/1.1\r\nHost: solarserv\r\nContent-Length: 200\r\n\r\n{", b""),  # nor the body
    (b"GET /healthz HTTP/1.1\r\nHost: solarserv\r\n\r\n", b"HTTP/1.1 200 OK\r\n"),  # answered, then left idle
], ids=["headers", "body", "idle"])
async def test_a_connection_whose_request_stops_arriving_is_closed_after_its_timeout(short_timeouts, http_server,
                                                                                     http_server_port, sent, answered):
    reader, writer = await asyncio.open_connection("127.0.0.1", http_server_port[1])
    try:
        writer.write(sent)
        received = await asyncio.wait_for(reader.read(), WAIT_SECONDS)  # all it gets, up to the server's close
    finally:
        writer.close()
    assert received.startswith(answered) and (answered or received == b"")


async def test_with_no_descriptor_left_accepting_pauses_and_logs_once(http_server, http_server_port, caplog):
    caplog.set_level(logging.INFO)
    http_server.max_connections = 1_000_000  # so that the process's descriptors run out first
    # Connected without giving the event loop a turn: they wait in the listen queue, none accepted yet.
    sockets = [socket.create_connection(("127.0.0.1", http_server_port[1])) for _ in range(8)]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    open_now = {int(name) for name in os.listdir("/dev/fd")}
    free = [number for number in range(soft) if number not in open_now]
    clients = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (free[2], hard))  # room for two of the eight, not three
        try:
            clients = [await asyncio.open_connection(sock=sock) for sock in sockets]
            for _, writer in clients:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: solarserv\r\n\r\n")
            deadline = time.monotonic() + WAIT_SECONDS
            while not [record for record in caplog.records if record.levelno >= logging.WARNING]:
                assert time.monotonic() < deadline, "the server neither paused nor failed"
                await asyncio.sleep(0.05)
            await asyncio.sleep(3 * server.OUT_OF_DESCRIPTORS_PAUSE_SECONDS)  # it tries again, and fails again
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        complaints = [record for record in caplog.records if record.levelno >= logging.WARNING]
        assert len(complaints) == 1 and not complaints[0].exc_info  # one line: no traceback at every turn
        assert complaints[0].getMessage().startswith("Not accepting new connections while it has no file "
                                                     "descriptor left (Too many open files)")
        for reader, _ in clients:  # the limit back up, every connection waiting is accepted and answered
            assert (await asyncio.wait_for(reader.readuntil(b"\r\n"), WAIT_SECONDS)) == b"HTTP/1.1 200 OK\r\n"
    finally:
        for _, writer in clients:
            writer.close()
        for sock in sockets[len(clients):]:
            sock.close()


# A limit under which the server holds about 30 connections (half of those left free after its ~20 at start).
OPEN_FILES = (48, 80)
# More connections than it may hold, fewer than its listen queue's 128.
HELD = 80
# What the log may hold by the end: a few lines (the flood it replaced grew by 4 MB a second).
LOG_BOUND = 4096


@pytest.mark.slow
def test_connections_beyond_the_open_file_limit_wait_while_those_held_are_served(data_dir, tmp_path):
    log_path = tmp_path / "server.log"
    process = start_solarserv(["--port", "0", "--data-dir", str(data_dir)], log_path, open_file_limit=OPEN_FILES)
    held = []
    try:
        port = int(process.stdout.readline().strip().rstrip("/").rsplit(":", 1)[1])
        kept_alive = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_SECONDS)
        kept_alive.request("GET", "/healthz")
        assert kept_alive.getresponse().read() and kept_alive.sock
        for _ in range(HELD):  # each sends the start of a request and nothing more
            held.append(socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS))
            held[-1].sendall(b"GET /healthz HTTP/1.1\r\nHost: solarserv\r\n")
        deadline = time.monotonic() + WAIT_SECONDS
        while "Not accepting new connections" not in log_path.read_text() and log_path.stat().st_size < LOG_BOUND:
            assert time.monotonic() < deadline, "the server neither stopped accepting nor logged"
            time.sleep(0.05)
        kept_alive.request("GET", "/healthz")  # a connection it holds is served meanwhile
        assert kept_alive.getresponse().status == 200
        logged = log_path.read_text()
        assert len(logged) < LOG_BOUND and "Traceback" not in logged
        assert f"Raised the open-file limit from {OPEN_FILES[0]} to its hard limit, {OPEN_FILES[1]}" in logged
        assert logged.count("Not accepting new connections while it holds") == 1
        for connection in held:
            connection.close()
        fresh = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_SECONDS)
        fresh.request("GET", "/healthz")  # accepted once the held ones have closed
        assert fresh.getresponse().status == 200
        fresh.close()
        kept_alive.close()
    finally:
        for connection in held:
            connection.close()
        stop_solarserv(process)


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGHUP], ids=lambda each: each.name)
def test_a_stop_signal_lets_the_requests_in_flight_be_answered_before_it_stops(data_dir, tmp_path, stop_signal):
    # close_all_connections closed every connection at once: a request in flight got its connection closed, no answer.
    # SIGHUP (the terminal of a server in the foreground closed) ended the server at once, status 129, no line said so.
    log_path = tmp_path / "server.log"
    process = start_solarserv(["--port", "0", "--data-dir", str(data_dir)], log_path)
    try:
        port = int(process.stdout.readline().strip().rstrip("/").rsplit(":", 1)[1])
        body = b'{"date": "2026-07-14", "local_time": "14:30", "latitude": 48.8566, "longitude": 2.3522}'
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT_SECONDS) as client:
            client.sendall(b"POST /api/v1/solar-time HTTP/1.1\r\nHost: solarserv\r\nContent-Type: application/json\r\n"
                           b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            assert client.recv(100).startswith(b"HTTP/1.1 100")  # its headers read: the request is in flight
            process.send_signal(stop_signal)
            deadline = time.monotonic() + WAIT_SECONDS
            while not refuses_connections(port):  # the server has stopped accepting: it is stopping
                assert time.monotonic() < deadline, "the server did not stop accepting"
                time.sleep(0.05)
            client.sendall(body)
            answer = client.makefile("rb").read()  # up to the server's close
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b'"true_solar_time"' in answer
        assert process.wait(timeout=WAIT_SECONDS) == 0
        assert (f"INFO solarserv: Stopping on {stop_signal.name}: answering the requests in flight (30 s at most), "
                "then exiting") in log_path.read_text()
    finally:
        stop_solarserv(process)


async def test_a_request_still_in_flight_when_the_grace_is_over_is_cut_off_and_logged(http_server, http_server_port,
                                                                                       monkeypatch, caplog):
    monkeypatch.setattr(server, "STOP_GRACE_SECONDS", 0.1)
    reader, writer = await asyncio.open_connection("127.0.0.1", http_server_port[1])
    try:
        writer.write(b"POST /api/v1/solar-time HTTP/1.1\r\nHost: solarserv\r\nExpect: 100-continue\r\n"
                     b"Content-Length: 2\r\n\r\n")
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100")  # in flight, its body never sent
        await asyncio.wait_for(http_server.stop_after_requests_in_flight(), WAIT_SECONDS)
        assert await asyncio.wait_for(reader.read(), WAIT_SECONDS) == b""  # closed unanswered
    finally:
        writer.close()
    assert caplog.messages == ["Stopping with 1 request still unanswered after 0.1 s: its connection is closed"]


async def test_a_stopping_server_closes_its_idle_connections_and_each_other_after_its_answer(http_server,
                                                                                            http_server_port):
    # Idle keep-alive connections were left open until the last request in flight was answered, and took new
    # requests meanwhile: a client sending one after another kept the server from stopping until its grace ran out.
    port = http_server_port[1]
    busy_reader, busy = await asyncio.open_connection("127.0.0.1", port)
    idle_reader, idle = await asyncio.open_connection("127.0.0.1", port)
    try:
        busy.write(b"POST /api/v1/solar-time HTTP/1.1\r\nHost: solarserv\r\nExpect: 100-continue\r\n"
                   b"Content-Length: 2\r\n\r\n")
        assert (await busy_reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100")  # in flight
        idle.write(b"GET /healthz HTTP/1.1\r\nHost: solarserv\r\n\r\n")
        head = await idle_reader.readuntil(b"\r\n\r\n")
        await idle_reader.readexactly(int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0]))  # now idle
        stopping = asyncio.ensure_future(http_server.stop_after_requests_in_flight())
        assert await asyncio.wait_for(idle_reader.read(), WAIT_SECONDS) == b""  # closed
        busy.write(b"{}")
        answer = await asyncio.wait_for(busy_reader.read(), WAIT_SECONDS)  # up to the server's close
        assert answer.startswith(b"HTTP/1.1 400 ") and b"\r\nConnection: close\r\n" in answer
        await asyncio.wait_for(stopping, WAIT_SECONDS)
    finally:
        busy.close()
        idle.close()
