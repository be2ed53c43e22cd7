"""The README's commands: scripts/serve passes its flags to `solarserv serve` and answers."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_scripts_serve_passes_its_flags_and_serves(data_dir, tmp_path):
    server = subprocess.Popen([str(ROOT / "scripts" / "serve"), "--port", "0", "--data-dir", str(data_dir)],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in server.stdout:
            lines.append(line)
            if "ready at" in line:  # set-up lines (an install) may come first
                break
        assert "ready at" in lines[-1], "".join(lines)
        base = lines[-1].split("ready at ")[1].strip().rstrip("/")
        with urllib.request.urlopen(f"{base}/healthz", timeout=30) as response:
            assert json.load(response)["status"] == "ok"
    finally:
        server.terminate()
        server.wait(20)
        server.stdout.close()
