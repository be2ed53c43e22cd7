"""Settings for the tests: solarserv's embedded defaults, whatever the venv holds installed.

A plugin a contributor pip-installs into .venv (an entry point in the group ``solarserv``) would load into every
narrator built from unset settings and change the texts the tests compare. ``settings`` sets the
``SOLARSERV_PLUGINS`` allow-list empty, so only the built-ins and a test's own ``PLUGINS_DIR`` load; the tests of
entry points install their own (test_plugin_loading's ``installed_plugin``). conftest's ``hermetic_environment``
does the same for the environment, which ``main()`` run in-process and the subprocesses read.
"""

from __future__ import annotations

from typing import Any

from solarserv import config

NO_INSTALLED_PLUGINS = {"SOLARSERV_PLUGINS": ""}


def settings(**environ: str) -> Any:
    """Settings from ``environ`` alone, installed plugins left out unless it sets SOLARSERV_PLUGINS itself."""
    return config.load(environ={**NO_INSTALLED_PLUGINS, **environ})
