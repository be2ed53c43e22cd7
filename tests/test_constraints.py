"""constraints.txt pins every release solarserv and its extras need, and the suite runs on those releases: a fresh
clone installs through scripts/_bootstrap what the suite last passed with."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    pairs = [line.split("==") for line in lines if line and not line.startswith("#")]
    assert all(len(pair) == 2 for pair in pairs), "every line of constraints.txt is NAME==VERSION or a comment"
    return {canonicalize_name(name): version for name, version in pairs}


def installed_closure(name: str, extras: frozenset[str] = frozenset(), seen: dict[str, set[str]] | None = None,
                      ) -> set[str]:
    """Every distribution installing ``name[extras]`` brought, by the installed distributions' metadata."""
    seen = {} if seen is None else seen
    key = canonicalize_name(name)
    if key in seen and extras <= seen[key]:
        return set(seen)
    seen.setdefault(key, set()).update(extras)
    for line in metadata.distribution(name).requires or []:
        requirement = Requirement(line)
        environments = [{"extra": extra} for extra in extras] or [{"extra": ""}]
        if requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments):
            installed_closure(requirement.name, frozenset(requirement.extras), seen)
    return set(seen)


def test_constraints_pin_everything_pyproject_names_with_every_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = [*project["dependencies"], *(line for lines in project["optional-dependencies"].values() for line in lines)]
    unpinned = {canonicalize_name(Requirement(line).name) for line in named} - set(pins())
    assert not unpinned, f"constraints.txt pins no release of {sorted(unpinned)}: run scripts/update-constraints"


def test_the_suite_runs_on_pinned_releases_of_everything_it_installed():
    pinned = pins()
    installed = {canonicalize_name(dist.metadata["Name"]): dist.version for dist in metadata.distributions()}
    brought = installed_closure("solarserv", frozenset({"test"})) - {"solarserv"}
    assert not brought - set(pinned), f"constraints.txt pins no release of {sorted(brought - set(pinned))}"
    differ = {name: (installed[name], pinned[name]) for name in brought if installed[name] != pinned[name]}
    assert not differ, f"installed, pinned: {differ}; scripts/test installs the pins into .venv"


def test_the_bootstrap_builds_solarserv_with_pinned_setuptools_too():
    # pip's --constraint reaches none of what it installs to build the editable solarserv (setuptools, wheel,
    # packaging in their own environment): a fresh clone built it with the newest setuptools the index had.
    script = (ROOT / "scripts" / "_bootstrap").read_text().replace("\\\n", " ")  # continued lines as one
    installs = [line.split() for line in script.splitlines() if " -e " in line and "pip install" in line]
    assert installs and all({"--constraint", "--build-constraint"} <= set(words) for words in installs)
