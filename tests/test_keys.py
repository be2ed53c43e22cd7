"""The key store (DESIGN §8) and the `solarserv keys` commands that drive it."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import re
import threading

import pytest
import sqlite_utils

from solarserv import keys as keys_module
from solarserv.cli import main
from solarserv.keys import KeyStore, KeyStoreError, migrations


@pytest.fixture
def store(tmp_path):
    store = KeyStore(tmp_path / "keys.db", today=lambda: dt.date(2026, 7, 14))
    yield store
    store.close()


def test_a_new_key_is_tst_plus_43_random_url_safe_characters(store):
    issued = store.create("Acme", "free")
    assert re.fullmatch(r"tst_[A-Za-z0-9_-]{43}", issued.key)
    assert issued.record.preview == issued.key[:8] + "…"
    assert store.create("Acme", "free").key != issued.key


def test_only_the_digest_and_preview_are_stored(store):
    issued = store.create("Acme", "builder")
    reader = sqlite_utils.Database(store.path)
    row = reader["keys"].get(issued.record.id)
    reader.close()
    assert row == {"id": issued.record.id, "digest": hashlib.sha256(issued.key.encode()).hexdigest(),
                   "preview": issued.key[:8] + "…", "label": "Acme", "tier": "builder", "rpm": 60,
                   "created": "2026-07-14", "status": "active"}
    store.close()
    # Every file SQLite may hold rows in (WAL mode): the digest is found, so the right bytes were read.
    stored = b"".join(path.read_bytes() for path in store.path.parent.glob(store.path.name + "*"))
    assert row["digest"].encode() in stored
    assert issued.key.encode() not in stored


@pytest.mark.parametrize(("tier", "rpm", "expected"), [
    ("free", None, 10), ("free", 10, 10), ("builder", None, 60), ("pro", 120, 120), ("pro", 300, 300),
])
def test_tiers_give_their_rpm(store, tier, rpm, expected):
    assert store.create("Acme", tier, rpm).record.rpm == expected


@pytest.mark.parametrize(("tier", "rpm", "message"), [
    ("pro", None, "needs its rpm chosen, 120 to 300"),
    ("pro", 119, "120 to 300 requests per minute"),
    ("pro", 301, "120 to 300 requests per minute"),
    ("free", 20, "A free key has 10 requests per minute; 20 is not allowed"),
    ("builder", 120, "A builder key has 60 requests per minute"),
    ("gold", None, "Unknown tier 'gold'; the tiers are free: 10 requests per minute; builder: 60"),
])
def test_anything_else_is_refused_with_a_clear_message(store, tier, rpm, message):
    with pytest.raises(KeyStoreError, match=re.escape(message)):
        store.create("Acme", tier, rpm)
    assert store.all() == []


@pytest.mark.parametrize(("label", "message"), [
    ("  ", "needs a label"), ("x" * 101, "at most 100 characters"), ("two\nlines", "control characters"),
])
def test_labels_are_checked(store, label, message):
    with pytest.raises(KeyStoreError, match=message):
        store.create(label, "free")


def test_a_key_is_recognised_only_while_active(store):
    issued = store.create("Acme", "free")
    assert store.active_key(issued.key) == issued.record
    store.set_status(issued.record.id, "inactive")
    assert store.active_key(issued.key) is None
    store.set_status(issued.record.id, "active")
    assert store.active_key(issued.key).status == "active"


def test_unknown_and_malformed_keys_are_not_recognised(store):
    issued = store.create("Acme", "free")
    same_preview = issued.key[:-1] + ("A" if issued.key[-1] != "A" else "B")
    for key in (same_preview, "tst_" + "x" * 43, issued.key[:-1], issued.key + "x", "", "tst_…",
                issued.key.upper()):
        assert store.active_key(key) is None, key


def test_another_process_sees_new_and_deactivated_keys_at_once(store):
    other_process = KeyStore(store.path)
    try:
        issued = store.create("Acme", "free")
        assert other_process.active_key(issued.key) == issued.record
        store.set_status(issued.record.id, "inactive")
        assert other_process.active_key(issued.key) is None
    finally:
        other_process.close()


def test_find_by_id_or_preview(store):
    issued = store.create("Acme", "free")
    record = issued.record
    assert store.find(str(record.id)) == record
    assert store.find(record.preview) == record
    assert store.find(record.preview.removesuffix("…")) == record
    assert store.find(record.preview.removesuffix("…") + "...") == record
    with pytest.raises(KeyStoreError, match="No key has the id or preview '99'"):
        store.find("99")
    with pytest.raises(KeyStoreError, match="No key has"):
        store.set_status(99, "inactive")
    with pytest.raises(KeyStoreError, match="active or inactive"):
        store.set_status(record.id, "paused")


def test_a_taken_preview_is_drawn_again(store, monkeypatch):
    first = store.create("Acme", "free")
    clash = first.key[4:8] + "z" * 39  # a different key with the same preview
    draws = iter([clash, "A" * 43])
    monkeypatch.setattr(keys_module.secrets, "token_urlsafe", lambda size: next(draws))
    second = store.create("Beta", "free")
    assert second.key == "tst_" + "A" * 43
    assert [key.label for key in store.all()] == ["Acme", "Beta"]


def test_schema_comes_from_migrations_applied_once(tmp_path):
    KeyStore(tmp_path / "keys.db").close()
    KeyStore(tmp_path / "keys.db").close()  # reopening applies nothing twice
    db = sqlite_utils.Database(tmp_path / "keys.db")
    assert [migration.name for migration in migrations.applied(db)] == ["create_keys_table"]
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_processes_opening_a_new_store_together_do_not_race(tmp_path):
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            KeyStore(tmp_path / "keys.db").close()
        except BaseException as exc:  # collected, then reported by the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# The `solarserv keys` commands, on the same data dir a server would use.


def opened(data_dir):
    return contextlib.closing(KeyStore.open(data_dir))


def run(capsys, data_dir, *args: str) -> tuple[int, str, str]:
    status = main(["keys", *args, "--data-dir", str(data_dir)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_create_prints_the_key_once_as_json(capsys, tmp_path):
    status, out, _ = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "pro", "--rpm", "150",
                         "--json")
    assert status == 0
    created = json.loads(out)
    assert created["label"] == "Acme" and created["rpm"] == 150 and created["status"] == "active"
    with opened(tmp_path) as store:
        assert store.active_key(created["key"]).id == created["id"]
    status, out, _ = run(capsys, tmp_path, "list", "--json")
    listed = json.loads(out)
    assert [key["preview"] for key in listed] == [created["preview"]]
    assert created["key"] not in out and "digest" not in out


def test_cli_create_without_json_shows_the_key_and_says_it_is_shown_once(capsys, tmp_path):
    status, out, _ = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "free")
    assert status == 0
    key = re.search(r"tst_[A-Za-z0-9_-]{43}", out).group()
    assert "only time the full key is shown" in out
    status, out, _ = run(capsys, tmp_path, "list")
    assert key not in out and key[:8] + "…" in out and "Acme" in out and "free" in out


def test_cli_refuses_a_pro_key_without_rpm(capsys, tmp_path):
    status, out, err = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "pro")
    assert status == 1 and out == "" and "needs its rpm chosen, 120 to 300" in err


def test_cli_deactivates_by_preview_and_activates_by_id(capsys, tmp_path):
    _, out, _ = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "free", "--json")
    created = json.loads(out)
    status, out, _ = run(capsys, tmp_path, "deactivate", created["preview"])
    assert status == 0 and "is now inactive" in out
    with opened(tmp_path) as store:
        assert store.active_key(created["key"]) is None
    status, out, _ = run(capsys, tmp_path, "activate", str(created["id"]))
    assert status == 0 and "is now active" in out
    with opened(tmp_path) as store:
        assert store.active_key(created["key"]) is not None
    status, _, err = run(capsys, tmp_path, "deactivate", "tst_none")
    assert status == 1 and "No key has the id or preview 'tst_none'" in err
