"""Shared fixtures: settings, one set of services per test session, the real app on a loopback port."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import signal
import warnings
from pathlib import Path
from typing import Any

import pytest
import tornado.httpclient
import tornado.ioloop
import tornado.netutil
from counters import RedisServer
from defaults import NO_INSTALLED_PLUGINS, settings
from hypothesis import settings as hypothesis_settings
from servers import serving_in_thread

from solarserv import config
from solarserv.geo import gazetteer
from solarserv.web.app import Services, make_app
from solarserv.web.server import make_server

# A long hunt with the generators of tests/test_fuzz.py: `scripts/test tests/test_fuzz.py --hypothesis-profile=fuzz`.
# The suite runs them with a few examples, derandomized.
hypothesis_settings.register_profile("fuzz", max_examples=3000, derandomize=False, database=None)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-tornasync 0.6 uses hook styles that pytest 9 deprecates, and its import and registration
    # warnings fire before setup.cfg's filters apply. It is disabled as an auto-loaded plugin there
    # (-p no:tornado) and registered here with those warnings muted.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pytest_tornasync.plugin

        config.pluginmanager.register(pytest_tornasync.plugin, "tornasync-quiet")


# The Redis the tests use, when given (scripts/test starts one); read before hermetic_environment clears
# solarserv's settings, REDIS_URL among them, from the environment.
REDIS_URL = os.environ.get("REDIS_URL")

TRIPWIRE_PLUGIN = """
import pytest

pytest.fail("an installed plugin was loaded: the test built its settings with the allow-list unset, so a plugin "
            "pip-installed into .venv changes its outcome (tests/defaults.py: settings())", pytrace=False)
"""


@pytest.fixture(scope="session", autouse=True)
def hermetic_environment(tmp_path_factory):
    """Every test runs as if in a shell and a venv of its own. The shell's solarserv settings (SOLARSERV_*,
    PLUGINS_DIR, GEOCODER, …) are cleared and the SOLARSERV_PLUGINS allow-list set empty, for `main()` run
    in-process and for the subprocesses, which inherit the environment. And a plugin is installed (on sys.path)
    that fails any test loading it: one that let a contributor's installed plugin change its outcome. And the servers
    the tests start take SIGHUP and SIGINT as from a terminal, also when this run ignores them (`nohup scripts/test`;
    `scripts/test &` in a script, which ignores SIGINT): they inherited the ignoring, and the tests that stop them with
    either signal waited out their timeouts and failed."""
    for signum in (signal.SIGHUP, signal.SIGINT):
        if signal.getsignal(signum) == signal.SIG_IGN:
            # Still ignored here, by a handler of this process's own, which a program it starts does not inherit.
            signal.signal(signum, _ignore)
    site = tmp_path_factory.mktemp("site")
    (site / "solarserv_tripwire.py").write_text(TRIPWIRE_PLUGIN, encoding="utf-8")
    (site / "solarserv_tripwire-1.0.dist-info").mkdir()
    (site / "solarserv_tripwire-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: solarserv-tripwire\nVersion: 1.0\n", encoding="utf-8")
    (site / "solarserv_tripwire-1.0.dist-info" / "entry_points.txt").write_text(
        "[solarserv]\nsolarserv_tripwire = solarserv_tripwire\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        for name in set(os.environ) - set(config.without_settings(os.environ)):
            patch.delenv(name)
        for name, value in NO_INSTALLED_PLUGINS.items():
            patch.setenv(name, value)
        patch.syspath_prepend(str(site))
        yield


def _ignore(signum: int, frame: Any) -> None:
    """A signal's handler that does nothing."""


@pytest.fixture
def io_loop():
    """Replaces pytest-tornasync's fixture, whose deprecated IOLoop.make_current() calls
    asyncio.get_event_loop() and so creates a second loop that is never closed (a ResourceWarning
    whenever the garbage collector later finds it)."""
    loop = tornado.ioloop.IOLoop(make_current=False)
    asyncio.set_event_loop(loop.asyncio_loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close(all_fds=True)


# The gazetteer index takes 15-40 s to build; it is built once per checkout into this cache (its file
# name carries the data versions, so a stale one is never used) and copied into each session.
INDEX_CACHE = Path(__file__).resolve().parent.parent / ".pytest_cache" / "gazetteer"


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory):
    """One data dir for the session, holding a ready gazetteer index before any request is made."""
    directory = tmp_path_factory.mktemp("var")
    cached = gazetteer.ensure_index(INDEX_CACHE)
    shutil.copyfile(cached, gazetteer.index_path(directory))
    return directory


@pytest.fixture(scope="session")
def base_settings(data_dir):
    """Embedded defaults, installed plugins left out, and a limit high enough that the suite's own traffic is
    never refused (rate-limit tests build settings with their own low limits)."""
    return dataclasses.replace(settings(), data_dir=data_dir, anon_rpm=1_000_000)


@pytest.fixture(scope="session")
def services(base_settings) -> Services:
    return Services.build(base_settings)


@pytest.fixture(scope="session")
def redis_url():
    """A real Redis: REDIS_URL (scripts/test starts one), else a redis-server started here for the session."""
    if REDIS_URL:
        yield REDIS_URL
        return
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def app(base_settings, services):
    """The application pytest-tornasync serves on a loopback port for `http_server_client`."""
    return make_app(base_settings, services)


@pytest.fixture
def http_server(request, io_loop, http_server_port, app):
    """Replaces pytest-tornasync's fixture, whose server has Tornado's default limits, not those of
    `solarserv serve` (make_server)."""
    server = make_server(app)
    server.add_socket(http_server_port[0])
    yield server
    server.stop()
    io_loop.run_sync(server.close_all_connections, timeout=request.config.option.async_test_timeout)


@dataclasses.dataclass
class Reply:
    status: int
    headers: Any
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture
def api(http_server_client):
    """fetch(path, method="GET", body=None, headers=None) → Reply, never raising on an error status."""

    async def fetch(path: str, method: str = "GET", body: Any = None, headers: dict | None = None) -> Reply:
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            headers = {"Content-Type": "application/json", **(headers or {})}
        try:
            response = await http_server_client.fetch(path, method=method, body=body, headers=headers,
                                                      raise_error=False)
        except tornado.httpclient.HTTPClientError as exc:  # pragma: no cover - raise_error=False
            response = exc.response
        return Reply(response.code, response.headers, response.body)

    return fetch


@pytest.fixture(scope="session")
def live_server(base_settings):
    """The real app served from a background thread (see servers.py). Yields the base URL."""
    with serving_in_thread(base_settings, lambda: Services.build(base_settings)) as url:
        yield url
