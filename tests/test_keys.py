"""The key store (DESIGN §8) and the `solarserv keys` commands that drive it."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import os
import re
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils
from permissions import bound_by_file_modes
from writers import another_process_writing

from solarserv import keys as keys_module
from solarserv.cli import main
from solarserv.keys import (
    FORMS_KEPT_SECONDS,
    SERVER_WAIT_FOR_WRITER_SECONDS,
    SESSION_DAYS,
    TIERS,
    FormAlreadySent,
    KeyStore,
    KeyStoreBusy,
    KeyStoreError,
    Tier,
    migrations,
)

NOON_2026_07_14 = dt.datetime(2026, 7, 14, 12, tzinfo=dt.UTC).timestamp()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock(NOON_2026_07_14)


@pytest.fixture
def store(tmp_path, clock):
    store = KeyStore(tmp_path / "keys.db", clock=clock)
    yield store
    store.close()


def test_a_new_key_is_tst_plus_43_random_url_safe_characters(store):
    issued = store.create("Acme", "free", by="a test")
    assert re.fullmatch(r"tst_[A-Za-z0-9_-]{43}", issued.key)
    assert issued.record.preview == issued.key[:8] + "…"
    assert store.create("Acme", "free", by="a test").key != issued.key


def test_only_the_digest_and_preview_are_stored(store):
    issued = store.create("Acme", "builder", by="a test")
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
    assert store.create("Acme", tier, rpm, by="a test").record.rpm == expected


def test_the_specs_other_tier_names_issue_keys_of_those_tiers(store):
    # The spec's "Free/Dev" and "Pro/Commercial" tiers.
    assert (store.create("Acme", "dev", by="a test").record.tier,
            store.create("Acme", "commercial", 200, by="a test").record.tier) == ("free", "pro")


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
        store.create("Acme", tier, rpm, by="a test")
    assert store.all() == []


@pytest.mark.parametrize(("label", "message"), [
    ("  ", "needs a label"), ("x" * 101, "at most 100 characters"), ("two\nlines", "control characters"),
    ("C1 \x9b31m", "control characters"), ("next \x85line", "control characters"),
    ("line\u2028separator", "line separators"), ("RTL \u202eevil", "bidirectional overrides"),
    ("not \udcffUTF-8", "not UTF-8"),  # a byte of a command line that was not UTF-8
])
def test_labels_are_checked(store, label, message):
    with pytest.raises(KeyStoreError, match=message):
        store.create(label, "free", by="a test")


def test_a_label_of_100_characters_is_taken(store):
    assert store.create("x" * 100, "free", by="a test").record.label == "x" * 100


def test_a_key_is_recognised_only_while_active(store):
    issued = store.create("Acme", "free", by="a test")
    assert store.active_key(issued.key) == issued.record
    store.set_status(issued.record.id, "inactive", by="a test")
    assert store.active_key(issued.key) is None
    store.set_status(issued.record.id, "active", by="a test")
    assert store.active_key(issued.key).status == "active"


def test_unknown_and_malformed_keys_are_not_recognised(store):
    issued = store.create("Acme", "free", by="a test")
    same_preview = issued.key[:-1] + ("A" if issued.key[-1] != "A" else "B")
    for key in (same_preview, "tst_" + "x" * 43, issued.key[:-1], issued.key + "x", "", "tst_…",
                issued.key.upper()):
        assert store.active_key(key) is None, key


def test_another_process_sees_new_and_deactivated_keys_at_once(store):
    other_process = KeyStore(store.path)
    try:
        issued = store.create("Acme", "free", by="a test")
        assert other_process.active_key(issued.key) == issued.record
        store.set_status(issued.record.id, "inactive", by="a test")
        assert other_process.active_key(issued.key) is None
    finally:
        other_process.close()


def test_find_by_id_or_preview(store):
    issued = store.create("Acme", "free", by="a test")
    record = issued.record
    assert store.find(str(record.id)) == record
    assert store.find(record.preview) == record
    assert store.find(record.preview.removesuffix("…")) == record
    assert store.find(record.preview.removesuffix("…") + "...") == record
    # The whole key, as a client reports it or a leak shows it, is checked whole: another with its preview is not it.
    assert store.find(issued.key) == record
    impostor = issued.key[:-1] + ("A" if issued.key[-1] != "A" else "B")
    with pytest.raises(KeyStoreError, match=f"No key is the key {re.escape(record.preview)} given whole;"):
        store.find(impostor)
    with pytest.raises(KeyStoreError, match="No key has the id or preview '99'"):
        store.find("99")
    with pytest.raises(KeyStoreError, match="No key has"):
        store.set_status(99, "inactive", by="a test")
    for beyond_sqlite in ("9" * 20, "9" * 5000, str(2**63)):  # larger than any id SQLite can hold
        with pytest.raises(KeyStoreError, match="No key has"):
            store.find(beyond_sqlite)
    with pytest.raises(KeyStoreError, match="No key has"):
        store.set_status(10**20, "inactive", by="a test")
    with pytest.raises(KeyStoreError, match="active or inactive"):
        store.set_status(record.id, "paused", by="a test")


def test_a_key_of_the_largest_id_sqlite_holds_is_found_by_it(tmp_path, store):
    record = store.create("Acme", "free", by="a test").record
    largest = 2**63 - 1
    with contextlib.closing(sqlite3.connect(tmp_path / "keys.db")) as other, other:
        other.execute("update keys set id = ? where id = ?", [largest, record.id])
    assert store.find(str(largest)) == dataclasses.replace(record, id=largest)


def test_a_taken_preview_is_drawn_again(store, monkeypatch):
    first = store.create("Acme", "free", by="a test")
    clash = first.key[4:8] + "z" * 39  # a different key with the same preview
    draws = iter([clash, "A" * 43])
    monkeypatch.setattr(keys_module.secrets, "token_urlsafe", lambda size: next(draws))
    second = store.create("Beta", "free", by="a test")
    assert second.key == "tst_" + "A" * 43
    assert [key.label for key in store.all()] == ["Acme", "Beta"]


def test_five_taken_previews_in_a_row_are_an_error_not_a_key(store, monkeypatch):
    first = store.create("Acme", "free", by="a test")
    monkeypatch.setattr(keys_module.secrets, "token_urlsafe", lambda size: first.key[4:8] + "z" * 39)
    with pytest.raises(RuntimeError, match="^5 new keys in a row had a preview already taken"):
        store.create("Beta", "free", by="a test")
    assert [key.label for key in store.all()] == ["Acme"]


def test_schema_comes_from_migrations_applied_once(tmp_path):
    KeyStore(tmp_path / "keys.db").close()
    KeyStore(tmp_path / "keys.db").close()  # reopening applies nothing twice
    db = sqlite_utils.Database(tmp_path / "keys.db")
    assert [migration.name for migration in migrations.applied(db)] == [
        "create_keys_table", "create_console_sessions_table", "create_console_forms_table",
        "record_when_console_forms_were_sent"]
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_a_form_creates_one_key_however_often_it_is_sent_and_each_form_its_own(tmp_path, store):
    first = store.create("Acme", "free", by="a test", form="page-1-form")
    other = KeyStore(tmp_path / "keys.db")  # another process, as another server's console
    with pytest.raises(FormAlreadySent) as sent:
        other.create("Acme", "free", by="a test", form="page-1-form")
    other.close()
    assert sent.value.key == first.record
    second = store.create("Acme", "free", by="a test", form="page-2-form")
    unbound = store.create("Acme", "free", by="a test")  # the CLI's
    assert [key.id for key in store.all()] == [first.record.id, second.record.id, unbound.record.id]


def recorded_forms(store: KeyStore) -> list[str]:
    with contextlib.closing(sqlite_utils.Database(store.path)) as reader:
        return sorted(row["id"] for row in reader["console_forms"].rows)


def test_a_forms_id_is_kept_while_its_page_can_send_it_and_dropped_when_the_next_form_is_recorded(store, clock):
    # The console_forms table grew by a row a console form, forever. A page's forms are accepted only while the
    # session that showed it lives, which started before the page was shown.
    assert FORMS_KEPT_SECONDS >= SESSION_DAYS * 24 * 3600
    first = store.create("Acme", "free", by="a test", form="page-1-form")
    clock.now += FORMS_KEPT_SECONDS - 1
    with pytest.raises(FormAlreadySent):  # sent again at the session's last moment: still once
        store.create("Acme", "free", by="a test", form="page-1-form")
    store.set_status(first.record.id, "inactive", by="a test", form="page-2-form")
    assert recorded_forms(store) == ["page-1-form", "page-2-form"]
    store.create("Acme", "free", by="a test")  # the CLI's, which records no form, drops none either
    clock.now += 1
    store.create("Beta", "free", by="a test", form="page-3-form")
    assert recorded_forms(store) == ["page-2-form", "page-3-form"]


def a_store_whose_forms_have_no_time(data_dir: Path, form: str) -> None:
    """A store as the version before forms' times left it, with one form recorded."""
    with opened(data_dir) as store:
        store.create("Acme", "free", by="a test", form=form)
    with contextlib.closing(sqlite_utils.Database(data_dir / "keys.db")) as db:
        db["console_forms"].transform(drop={"sent"})
        db.execute("delete from _sqlite_migrations where name = 'record_when_console_forms_were_sent'")
        db.conn.commit()


def test_forms_recorded_before_their_time_was_are_kept_as_if_sent_at_the_upgrade(tmp_path):
    a_store_whose_forms_have_no_time(tmp_path, "old-form")
    before = time.time()
    clock = Clock(before)
    with contextlib.closing(KeyStore(KeyStore.path_in(tmp_path), clock=clock)) as store:
        with contextlib.closing(sqlite_utils.Database(store.path)) as reader:
            upgraded = reader["console_forms"].get("old-form")["sent"]
        assert before <= upgraded <= time.time()
        clock.now = upgraded + FORMS_KEPT_SECONDS - 1
        with pytest.raises(FormAlreadySent):
            store.create("Acme", "free", by="a test", form="old-form")
        clock.now += 1
        store.create("Beta", "free", by="a test", form="new-form")
        assert recorded_forms(store) == ["new-form"]


@pytest.fixture
def connections(monkeypatch) -> list[sqlite_utils.Database]:
    """Every database the key store opens during the test, to see that it closes those it gives up on."""
    opened: list[sqlite_utils.Database] = []

    class Recorded(sqlite_utils.Database):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            opened.append(self)

    monkeypatch.setattr(keys_module.sqlite_utils, "Database", Recorded)
    return opened


def is_closed(db: sqlite_utils.Database) -> bool:
    try:
        db.execute("select 1")
    except sqlite3.ProgrammingError:  # "Cannot operate on a closed database."
        return True
    return False


def test_a_data_dir_whose_parents_are_missing_is_made_with_them(tmp_path):
    data_dir = tmp_path / "srv" / "solarserv" / "data"
    with contextlib.closing(KeyStore.open(data_dir)) as store:
        store.create("Acme", "free", by="a test")
    assert (data_dir / "keys.db").is_file()


def test_a_new_store_is_readable_by_its_owner_alone_and_an_existing_one_keeps_its_mode(tmp_path):
    store = KeyStore.open(tmp_path / "new")
    store.create("Acme", "free", by="a test")  # a write: the -wal and -shm files exist now
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in (tmp_path / "new").iterdir()} == {
        "keys.db": 0o600, "keys.db-wal": 0o600, "keys.db-shm": 0o600}
    store.close()
    (tmp_path / "old").mkdir()
    KeyStore(tmp_path / "old" / "keys.db").close()
    (tmp_path / "old" / "keys.db").chmod(0o640)
    KeyStore.open(tmp_path / "old").close()
    assert stat.S_IMODE((tmp_path / "old" / "keys.db").stat().st_mode) == 0o640


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_a_new_store_is_linked_into_the_data_dir_and_then_the_data_dir_is_synced(tmp_path):
    # The link's new name survives a power loss only once the directory holding it is on disk: strace shows the
    # calls a real process opening a new data dir makes (-y names each descriptor's file).
    data_dir, trace = tmp_path / "data", tmp_path / "trace"
    opening = "import sys, pathlib, solarserv.keys; solarserv.keys.KeyStore.open(pathlib.Path(sys.argv[1])).close()"
    subprocess.run(["strace", "-qq", "-y", "-e", "trace=link,linkat,fsync", "-o", str(trace),
                    sys.executable, "-c", opening, str(data_dir)], check=True)
    where = re.escape(str(data_dir))
    linked_then_synced = rf'link(at)?\(.*"{where}/keys\.db"\) = 0\n(.*\n)*fsync\(\d+<{where}>\) = 0'
    assert re.search(linked_then_synced, trace.read_text()), trace.read_text()


def test_a_store_that_cannot_be_in_wal_mode_is_refused(connections):
    # SQLite keeps an in-memory database's journal in memory: WAL is refused, as on a file system without it.
    with pytest.raises(KeyStoreError, match="cannot be put in WAL mode .*'memory'"):
        KeyStore(Path(":memory:"))
    assert [is_closed(db) for db in connections] == [True]


def test_processes_opening_a_new_store_together_do_not_race(tmp_path):
    # Switching a new store to WAL failed at once, about one round in forty, when another connection was between
    # its read and its write: SQLite skips the busy timeout there. Many rounds, each on a new store, find it.
    errors: list[BaseException] = []

    def open_store(path: Path) -> None:
        try:
            KeyStore(path).close()
        except BaseException as exc:  # collected, then reported by the assertion
            errors.append(exc)

    for round_number in range(200):
        path = tmp_path / str(round_number) / "keys.db"
        path.parent.mkdir()
        threads = [threading.Thread(target=open_store, args=(path,)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []


def test_processes_opening_a_new_data_dir_together_use_one_store(tmp_path):
    # Each sets up a store of its own and puts it in place unless another's is there: every one then uses the one
    # that was put there first, and sees the keys the others create.
    opened: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def open_and_create(data_dir: Path, index: int, together: threading.Barrier) -> None:
        try:
            together.wait()
            with contextlib.closing(KeyStore.open(data_dir)) as store:
                store.create(f"Key of {index}", "free", by="a test")
                together.wait()
                opened.setdefault(index, []).extend(key.label for key in store.all())
        except BaseException as exc:  # collected, then reported by the assertion
            errors.append(exc)
            together.abort()

    for round_number in range(50):
        data_dir, together, opened = tmp_path / str(round_number), threading.Barrier(2), {}
        threads = [threading.Thread(target=open_and_create, args=(data_dir, index, together)) for index in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert {index: sorted(labels) for index, labels in opened.items()} == {
            0: ["Key of 0", "Key of 1"], 1: ["Key of 0", "Key of 1"]}
        assert {path.name for path in data_dir.iterdir()} <= {"keys.db", "keys.db-wal", "keys.db-shm"}


# Console sessions, kept in the store so that every server process on the data dir sees a logout.


def test_a_console_session_is_live_until_it_is_ended_or_expires(store, clock):
    ended, expiring = store.start_session(lifetime_seconds=600), store.start_session(lifetime_seconds=60)
    assert store.session_is_live(ended) and store.session_is_live(expiring)
    assert not store.session_is_live("made-up") and len(ended) >= 43 and ended != expiring
    other_process = KeyStore(store.path, clock=clock)
    try:
        store.end_session(ended)
        assert not other_process.session_is_live(ended) and other_process.session_is_live(expiring)
    finally:
        other_process.close()
    clock.now += 60
    assert not store.session_is_live(expiring)


def test_expired_sessions_are_dropped_when_the_next_one_starts(store, clock):
    store.start_session(lifetime_seconds=60)
    kept = store.start_session(lifetime_seconds=600)
    clock.now += 61
    newest = store.start_session(lifetime_seconds=600)
    with contextlib.closing(sqlite_utils.Database(store.path)) as reader:
        assert sorted(row["id"] for row in reader["console_sessions"].rows) == sorted([kept, newest])


# Another process writing: the CLI or another server's console, a real process holding SQLite's write lock.


@pytest.fixture
def server_store(tmp_path):
    """The store as a server opens it: waits for another process's write lock stall its event loop."""
    store = KeyStore.open(tmp_path, wait_for_writer=SERVER_WAIT_FOR_WRITER_SECONDS)
    yield store
    store.close()


def test_lookups_go_on_while_another_process_holds_the_write_lock(server_store):
    issued = server_store.create("Acme", "free", by="a test")
    session = server_store.start_session(lifetime_seconds=600)
    with another_process_writing(server_store.path):
        # WAL: readers see the last committed state and never wait for the writer.
        assert server_store.active_key(issued.key) == issued.record
        assert server_store.session_is_live(session)
        assert [key.status for key in server_store.all()] == ["active"]
    assert server_store.active_key(issued.key) is None  # the writer's deactivation, committed


def test_a_server_gives_up_a_write_quickly_while_another_process_holds_the_lock(server_store):
    with another_process_writing(server_store.path):
        with pytest.raises(KeyStoreBusy, match="locked by another process's write"):
            server_store.create("Acme", "free", by="a test")
        with pytest.raises(KeyStoreBusy):
            server_store.start_session(lifetime_seconds=600)
    assert server_store.create("Acme", "free", by="a test").record.status == "active"


def test_an_sqlite_failure_neither_of_the_lock_nor_of_the_file_is_raised_as_it_is(store):
    store.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        store.create("Acme", "free", by="a test")


def test_a_server_waits_a_tenth_of_a_second_for_a_writer_and_the_cli_five(tmp_path, server_store):
    # What SQLite was told, not a measured wait: the waits themselves are the tests above and below.
    with contextlib.closing(KeyStore.open(tmp_path)) as cli_store:
        waits = [store._db.execute("pragma busy_timeout").fetchone()[0] for store in (server_store, cli_store)]
    assert waits == [100, 5000]


def test_the_cli_waits_out_another_process_holding_the_write_lock(tmp_path):
    opened, writer_started, created = threading.Event(), threading.Event(), []

    def cli() -> None:  # a store's connection belongs to the thread that opens it
        with contextlib.closing(KeyStore.open(tmp_path)) as cli_store:  # as `solarserv keys` opens it
            opened.set()
            writer_started.wait()
            created.append(cli_store.create("Acme", "free", by="a test"))

    cli_thread = threading.Thread(target=cli)
    cli_thread.start()
    opened.wait()
    with another_process_writing(tmp_path / "keys.db"):
        writer_started.set()
        time.sleep(3 * SERVER_WAIT_FOR_WRITER_SECONDS)  # longer than a server would wait
    cli_thread.join()
    assert [issued.record.label for issued in created] == ["Acme"]


def test_a_store_opens_while_another_process_holds_the_write_lock(tmp_path):
    KeyStore.open(tmp_path).close()  # migrated
    with another_process_writing(tmp_path / "keys.db"):
        # Nothing to migrate: opening only reads, so a server starting now waits for no writer.
        with contextlib.closing(KeyStore.open(tmp_path, wait_for_writer=SERVER_WAIT_FOR_WRITER_SECONDS)) as store:
            assert [key.label for key in store.all()] == []


def a_store_of_the_first_version(data_dir: Path) -> None:
    """A store as the version before console sessions left it: their migration is pending."""
    KeyStore.open(data_dir).close()
    with contextlib.closing(sqlite_utils.Database(data_dir / "keys.db")) as db:
        db["console_sessions"].drop()
        db.execute("delete from _sqlite_migrations where name = 'create_console_sessions_table'")
        db.conn.commit()


@pytest.mark.parametrize("command", [["list"], ["create", "--label", "Beta", "--tier", "free"], ["deactivate", "1"]])
def test_a_store_of_a_newer_version_is_one_line_and_left_as_it_is(capsys, tmp_path, command):
    # A newer solarserv's migration added a column: every command ended in a traceback (ApiKey got an unexpected
    # keyword argument), `create` after it had written its key.
    with opened(tmp_path) as store:
        store.create("Acme", "free", by="a test")
    with contextlib.closing(sqlite_utils.Database(tmp_path / "keys.db")) as db:
        db["keys"].add_column("owner_email", str)
        db["_sqlite_migrations"].insert({"migration_set": "solarserv.keys", "name": "add_owner_email",
                                         "applied_at": "2027-01-01 00:00:00+00:00"})
    status, out, err = run(capsys, tmp_path, *command)
    assert (status, out) == (1, "")
    assert err == (f"solarserv: error: The key store {tmp_path / 'keys.db'} was set up by a newer solarserv: its "
                   "schema has the migration 'add_owner_email', which this version does not know. Run that version, "
                   "or restore a copy of the store made by this one.\n")
    with contextlib.closing(sqlite_utils.Database(tmp_path / "keys.db")) as db:
        assert [(row["label"], row["status"]) for row in db["keys"].rows] == [("Acme", "active")]


def test_a_migration_that_cannot_get_the_write_lock_is_one_line_and_leaves_no_connection(
        capsys, tmp_path, monkeypatch, connections):
    a_store_of_the_first_version(tmp_path)
    monkeypatch.setattr(keys_module, "WAIT_FOR_MIGRATION_SECONDS", SERVER_WAIT_FOR_WRITER_SECONDS)
    with another_process_writing(tmp_path / "keys.db"):
        status, out, err = run(capsys, tmp_path, "list")
    assert status == 1 and out == ""
    assert err.startswith("solarserv: error: The key store ") and err.count("\n") == 1
    assert connections and all(is_closed(db) for db in connections)
    with opened(tmp_path) as store:  # the writer done, the migration applies
        assert store.session_is_live(store.start_session(lifetime_seconds=60))


def test_a_write_whose_commit_fails_is_rolled_back_and_lets_go_of_the_lock(store):
    # SQLite checks a deferred foreign key at COMMIT; the COMMIT then fails and leaves the transaction
    # open, holding the write lock.
    store._db.execute("pragma foreign_keys = on")
    store._db.execute("create table parents (id integer primary key)")
    store._db.execute("create table children (parent integer references parents (id) deferrable initially deferred)")
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"), store._writing():
        store._db.execute("insert into children values (1)")
    assert not store._db.conn.in_transaction
    assert store._db.execute("select count(*) from children").fetchone() == (0,)
    assert store.create("Acme", "free", by="a test").record.status == "active"


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


def test_cli_quotes_a_label_as_it_was_given(capsys, tmp_path):
    # Quoted as Python writes a string, an apostrophe beside a double quote came out escaped: 'O\'Brien & "Sons"'.
    label = 'O\'Brien & "Sons"'
    status, out, _ = run(capsys, tmp_path, "create", "--label", label, "--tier", "free")
    assert status == 0 and out.startswith("Key 1 for “O'Brien & \"Sons\"”: free, 10 requests per minute, active.")
    status, out, _ = run(capsys, tmp_path, "deactivate", "1")
    assert status == 0 and out.endswith(", “O'Brien & \"Sons\"”) is now inactive.\n")


def test_cli_create_without_json_shows_the_key_and_says_it_is_shown_once(capsys, tmp_path):
    status, out, _ = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "free")
    assert status == 0
    key = re.search(r"tst_[A-Za-z0-9_-]{43}", out).group()
    assert "only time the full key is shown" in out
    status, out, _ = run(capsys, tmp_path, "list")
    assert key not in out and key[:8] + "…" in out and "Acme" in out and "free" in out


def listed(capsys, tmp_path, labels: Sequence[str]) -> list[str]:
    """`keys list`'s lines after creating keys with ``labels``, previews and dates written alike."""
    for label in labels:
        run(capsys, tmp_path, "create", "--label", label, "--tier", "free")
    status, out, _ = run(capsys, tmp_path, "list")
    assert status == 0
    return re.sub(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", "YYYY-MM-DD", re.sub(r"tst_.{4}…", "tst_abcd…", out)).splitlines()


def test_cli_list_lines_up_its_columns_on_a_terminal_whatever_the_labels_letters(capsys, tmp_path):
    # A character of East Asian width takes two columns of a terminal, a combining accent none: counted as one
    # each, the previews of those rows stood a column or two off the others'.
    # The widest label, 日時計 Sundial, takes 14 columns; each label is followed by spaces to 14, then two.
    assert listed(capsys, tmp_path, ("Acme", "日時計 Sundial", "🌞 Sol", "Cafe\u0301 Soleil")) == [
        "ID  Label" + " " * 11 + "Key preview  Tier  RPM  Created     Status",
        "1   Acme" + " " * 12 + "tst_abcd…    free  10   YYYY-MM-DD  active",
        "2   日時計 Sundial" + " " * 2 + "tst_abcd…    free  10   YYYY-MM-DD  active",
        "3   🌞 Sol" + " " * 10 + "tst_abcd…    free  10   YYYY-MM-DD  active",
        "4   Cafe\u0301 Soleil" + " " * 5 + "tst_abcd…    free  10   YYYY-MM-DD  active",
    ]


def test_cli_list_lines_up_labels_whose_marks_have_no_combining_class(capsys, tmp_path):
    # Thai's vowel marks above a letter and an enclosing keycap take no column of a terminal either, though their
    # combining class is 0: counted as one each, the row of สวัสดี stood two columns off the others'.
    # สวัสดี Sol takes 8 columns, the widest: each label is followed by spaces to 8, then two.
    assert listed(capsys, tmp_path, ("Acme", "สวัสดี Sol", "Key 1\u20e3")) == [
        "ID  Label" + " " * 5 + "Key preview  Tier  RPM  Created     Status",
        "1   Acme" + " " * 6 + "tst_abcd…    free  10   YYYY-MM-DD  active",
        "2   สวัสดี Sol" + " " * 2 + "tst_abcd…    free  10   YYYY-MM-DD  active",
        "3   Key 1\u20e3" + " " * 5 + "tst_abcd…    free  10   YYYY-MM-DD  active",
    ]


def test_the_tiers_that_take_a_chosen_rpm_come_from_the_tier_table(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(TIERS, "team", Tier("team", 20, 40))
    with pytest.raises(SystemExit):
        main(["keys", "create", "--help"])
    rpm_help = " ".join(capsys.readouterr().out.split("--rpm RPM")[-1].split())
    assert rpm_help.startswith("requests per minute, for a pro key (120 to 300) or team key (20 to 40)")
    status, out, _ = run(capsys, tmp_path, "create", "--label", "Team", "--tier", "team", "--rpm", "30", "--json")
    assert status == 0 and json.loads(out)["rpm"] == 30
    status, _, err = run(capsys, tmp_path, "create", "--label", "Team", "--tier", "team")
    assert status == 1 and "needs its rpm chosen, 20 to 40" in err


def test_cli_refuses_a_pro_key_without_rpm(capsys, tmp_path):
    status, out, err = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "pro")
    assert status == 1 and out == "" and "needs its rpm chosen, 120 to 300" in err


@pytest.mark.parametrize("refused", [["--label", "Acme", "--tier", "pro"], ["--label", " ", "--tier", "free"]])
def test_a_key_refused_makes_no_key_store_in_a_new_data_dir(capsys, tmp_path, refused):
    # It used to, so that a data dir mistyped at issuance passed for a store without keys from then on.
    status, _, err = run(capsys, tmp_path / "typo", "create", *refused)
    assert status == 1 and err.startswith("solarserv: error: ")
    assert not (tmp_path / "typo").exists()
    status, _, err = run(capsys, tmp_path / "typo", "list")
    assert status == 1 and "There is no key store at" in err


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
    status, out, _ = run(capsys, tmp_path, "deactivate", created["key"])
    assert status == 0 and out == f"Key {created['id']} ({created['preview']}, “Acme”) is now inactive.\n"
    # A second time it changes nothing, and says so: "is now inactive" read as if it had been active until then.
    status, out, _ = run(capsys, tmp_path, "deactivate", str(created["id"]))
    assert status == 0 and out == f"Key {created['id']} ({created['preview']}, “Acme”) was already inactive.\n"
    status, _, err = run(capsys, tmp_path, "deactivate", "tst_none")
    assert status == 1 and "No key has the id or preview 'tst_none'" in err


def audit_lines(caplog) -> list[tuple[str, str]]:
    return [(line.levelname, line.getMessage()) for line in caplog.records if line.name == "solarserv.keys"]


def test_each_change_of_a_key_by_the_cli_is_one_audit_line_without_the_key(capsys, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="solarserv.keys")
    _, out, _ = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "pro", "--rpm", "150", "--json")
    created = json.loads(out)
    for action in ("deactivate", "deactivate", "activate", "activate"):
        assert run(capsys, tmp_path, action, created["key"])[0] == 0
    assert run(capsys, tmp_path, "deactivate", "tst_none")[0] == 1  # no key, no change: no line
    named = f"Key {created['id']} ({created['preview']}, “Acme”)"
    assert audit_lines(caplog) == [
        ("INFO", f"{named} created by the CLI: pro, 150 requests per minute"),
        ("INFO", f"{named} deactivated by the CLI"),
        ("INFO", f"{named} left inactive by the CLI: it already was"),
        ("INFO", f"{named} reactivated by the CLI"),
        ("INFO", f"{named} left active by the CLI: it already was"),
    ]
    assert created["key"] not in caplog.text and hashlib.sha256(created["key"].encode()).hexdigest() not in caplog.text


def test_a_key_pasted_into_a_label_stays_out_of_the_audit_line(store, caplog):
    caplog.set_level(logging.INFO, logger="solarserv.keys")
    pasted = store.create("Acme", "free", by="a test").key
    issued = store.create(f"Acme, replacing {pasted}", "free", by="a test")
    store.set_status(issued.record.id, "inactive", by="a test")
    assert pasted not in caplog.text
    assert audit_lines(caplog)[1:] == [
        ("INFO", f"Key 2 ({issued.record.preview}, “Acme, replacing tst_…”) created by a test: free, 10 requests per "
                 "minute"),
        ("INFO", f"Key 2 ({issued.record.preview}, “Acme, replacing tst_…”) deactivated by a test"),
    ]


def run_writing_to(stdout: str, data_dir: Path, *args: str) -> tuple[int, list[str]]:
    """A `solarserv keys` command in a process of its own whose stdout is ``stdout``: "closed" (`>&-`), "no reader"
    (`| head -0`, gone before the command writes) or a file; its status and its stderr's lines."""
    command = [sys.executable, "-m", "solarserv", "keys", *args, "--data-dir", str(data_dir)]
    if stdout == "no reader":
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        process.stdout.close()
        _, err = process.communicate(timeout=60)
        return process.returncode, err.splitlines()
    if stdout == "closed":
        command = ["sh", "-c", 'exec "$@" >&-', "sh", *command]
    with open(os.devnull if stdout == "closed" else stdout, "w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.PIPE, text=True, timeout=60)
    return done.returncode, done.stderr.splitlines()


UNWRITABLE_STDOUTS = [("closed", "cannot write to stdout: it is closed"),
                      ("/dev/full", "cannot write to stdout (No space left on device)"),
                      ("no reader", "cannot write to stdout: its reader went away")]


@pytest.mark.parametrize("flags", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize(("stdout", "reason"), UNWRITABLE_STDOUTS, ids=["closed", "disk-full", "no-reader"])
def test_a_new_key_that_cannot_be_shown_is_deactivated_and_the_operator_told(tmp_path, stdout, reason, flags):
    # The key was created and shown to no one: with stdout closed the command said nothing and exited 0, on a full
    # disk it ended in a traceback, without a reader it stopped without a word; the key stayed active.
    with opened(tmp_path) as store:
        store.create("Acme", "free", by="a test")
    status, err = run_writing_to(stdout, tmp_path, "create", "--label", "Beta", "--tier", "free", *flags)
    with opened(tmp_path) as store:
        acme, beta = store.all()
    assert (acme.status, beta.label, beta.status) == ("active", "Beta", "inactive")
    assert status == 1 and err[-1] == (f"solarserv: error: {reason}, so key 2 ({beta.preview}, “Beta”) was created "
                                       "but not shown; it is now inactive, as no one has it: create another.")
    assert not any("Traceback" in line for line in err)


@pytest.mark.parametrize(("stdout", "reason"), UNWRITABLE_STDOUTS[:2], ids=["closed", "disk-full"])
@pytest.mark.parametrize("command", [["list"], ["list", "--json"]])
def test_a_key_command_that_cannot_write_to_stdout_says_so_in_one_line(tmp_path, stdout, reason, command):
    # A full disk was a traceback; with stdout closed, nothing was said and the status was 0.
    with opened(tmp_path) as store:
        store.create("Acme", "free", by="a test")
    status, err = run_writing_to(stdout, tmp_path, *command)
    assert (status, err[-1]) == (1, f"solarserv: error: {reason}")
    assert not any("Traceback" in line for line in err)


@pytest.mark.parametrize(("stdout", "reason"), UNWRITABLE_STDOUTS[:2], ids=["closed", "disk-full"])
@pytest.mark.parametrize(("action", "told"), [("deactivate", "is now inactive"), ("activate", "was already active")])
def test_a_status_change_that_cannot_be_shown_is_told_on_stderr_with_its_failing_status(tmp_path, stdout, reason,
                                                                                       action, told):
    # Its status 1 and line said only that stdout could not be written: a script took the change for refused, where
    # it was made.
    with opened(tmp_path) as store:
        store.create("Acme", "free", by="a test")
    status, err = run_writing_to(stdout, tmp_path, action, "1", "--log-level", "WARNING")
    assert status == 1 and len(err) == 1 and not any("Traceback" in line for line in err)
    assert err[0].startswith(f"solarserv: error: {reason}, so this was not shown: Key 1 (tst_")
    assert err[0].endswith(f", “Acme”) {told}.")


def test_the_cli_refuses_a_data_dir_without_a_key_store_except_to_create_one(capsys, tmp_path):
    # A mistyped --data-dir would list an empty new store, or deactivate nothing, and look fine.
    for command in (["list"], ["deactivate", "1"], ["activate", "1"]):
        status, out, err = run(capsys, tmp_path / "typo", *command)
        assert (status, out) == (1, "") and "There is no key store at" in err
    assert not (tmp_path / "typo" / "keys.db").exists()
    status, _, err = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "dev")
    assert status == 0 and "note: created a new key store at" in err
    status, _, err = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "commercial", "--rpm", "150")
    assert status == 0 and err == ""


def test_cli_list_of_a_store_without_keys_says_so_naming_the_store(capsys, tmp_path):
    # A server's first start makes the store; `list` printed only its header row, on a data dir that may be
    # the wrong one.
    KeyStore.open(tmp_path).close()
    status, out, _ = run(capsys, tmp_path, "list")
    assert (status, out) == (0, f"No keys in {tmp_path / 'keys.db'} yet: `solarserv keys create` issues one.\n")
    assert json.loads(run(capsys, tmp_path, "list", "--json")[1]) == []


def test_a_bad_setting_is_one_line_not_a_traceback(capsys, tmp_path, monkeypatch):
    assert main(["keys", "list", "--data-dir", str(tmp_path), "--log-level", "bogus"]) == 2
    # One line: argparse's usage of the top command came first, for a value and not the command line's shape.
    assert capsys.readouterr().err == ("solarserv: error: --log-level='bogus': must be one of DEBUG, INFO, WARNING, "
                                       "ERROR, CRITICAL, got 'bogus'\n")


def test_a_bad_value_of_a_setting_the_keys_commands_do_not_read_does_not_stop_them(capsys, tmp_path, monkeypatch):
    # In an incident, a malformed REDIS_URL in the environment stopped `keys deactivate`, which uses no Redis.
    assert run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "free")[0] == 0
    for variable, value in (("REDIS_URL", "redis://:pa/ss@127.0.0.1"), ("PORT", "abc"),
                            ("SOLARSERV_PROCESSES", "two"), ("GEOCODER", "google"), ("PLUGIN_TIMEOUT", "0")):
        monkeypatch.setenv(variable, value)
    status, out, err = run(capsys, tmp_path, "deactivate", "1")
    assert (status, err) == (0, "") and out.startswith("Key 1 (") and out.endswith("is now inactive.\n")
    assert main(["serve", "--data-dir", str(tmp_path)]) == 2  # serve reads every setting
    assert capsys.readouterr().err.startswith("solarserv: error: PORT='abc'")


# A key store that cannot be used as it is: one line naming it and why, not a traceback.


@pytest.mark.parametrize("command", [["list"], ["create", "--label", "Acme", "--tier", "free"], ["deactivate", "1"]])
def test_a_key_store_that_is_not_a_database_is_one_line_naming_it(capsys, tmp_path, command):
    (tmp_path / "keys.db").write_bytes(b"Not a database: a file copied over it.\n" * 100)
    status, out, err = run(capsys, tmp_path, *command)
    assert (status, out) == (1, "")
    assert err == (f"solarserv: error: The key store {tmp_path / 'keys.db'} cannot be used: file is not a "
                   "database.\n")


def test_a_key_store_path_that_cannot_be_looked_at_is_one_line_naming_it(capsys, tmp_path):
    # A symbolic link to itself: its stat fails (ELOOP), and SQLite's open, which says why, is left to report it.
    (tmp_path / "keys.db").symlink_to("keys.db")
    status, out, err = run(capsys, tmp_path, "create", "--label", "Acme", "--tier", "free")
    assert (status, out) == (1, "")
    assert err == (f"solarserv: error: The key store {tmp_path / 'keys.db'} cannot be used: unable to open database "
                   "file.\n")


@pytest.fixture
def no_waiting(monkeypatch):
    """Any sleep fails the test: what it does, it does at once."""

    def refused(seconds: float) -> None:
        raise AssertionError(f"waited {seconds} s")

    monkeypatch.setattr(time, "sleep", refused)


@pytest.mark.parametrize("command", [["list"], ["create", "--label", "Acme", "--tier", "free"], ["deactivate", "1"]])
def test_an_emptied_key_store_is_one_line_and_not_taken_for_a_new_one(capsys, tmp_path, no_waiting, command):
    # SQLite takes an empty file for a new database: `list` said there were no keys yet, `create` issued key 1 in
    # a new store, `deactivate` found no key, and a server started on it refused every key it had issued. A new store
    # is put in place whole, so an empty one is never one being set up: refused at once, where each command waited
    # 5 s in case another process was setting it up.
    (tmp_path / "keys.db").write_bytes(b"")
    status, out, err = run(capsys, tmp_path, *command)
    assert (status, out) == (1, "")
    assert err == (f"solarserv: error: The key store {tmp_path / 'keys.db'} is an empty file, so it holds no keys: it "
                   "was emptied (a copy cut short), or made by another program opening it before any store was there "
                   "(sqlite3). Restore it from a backup if it held keys; else delete it to start a new store.\n")
    assert (tmp_path / "keys.db").stat().st_size == 0


def test_an_empty_key_store_made_by_sqlite_opening_its_path_is_not_said_to_be_emptied(capsys, tmp_path, no_waiting):
    # `sqlite3 DATA_DIR/keys.db .tables` before any server ran leaves an empty file: refused, as an emptied store is,
    # with a message that said the store was emptied and sent the operator to a backup of keys never issued.
    with contextlib.closing(sqlite3.connect(tmp_path / "keys.db")) as looked_at:
        assert looked_at.execute("select name from sqlite_master").fetchall() == []
    status, out, err = run(capsys, tmp_path, "list")
    assert (status, out) == (1, "")
    assert "or made by another program opening it before any store was there (sqlite3)" in err
    assert "Restore it from a backup if it held keys; else delete it to start a new store." in err


def with_no_file_growing() -> None:
    """In a child process before it runs: no file may grow (a full disk), and a write beyond fails, not kills."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def create_key_arguments(data_dir: Path) -> list[str]:
    return ["keys", "create", "--label", "Acme", "--tier", "free", "--data-dir", str(data_dir)]


def creating_a_key(data_dir: Path, **options: Any) -> subprocess.CompletedProcess:
    """`solarserv keys create` run as its own process."""
    return subprocess.run([sys.executable, "-m", "solarserv", *create_key_arguments(data_dir)], capture_output=True,
                          text=True, timeout=60, **options)


def test_a_first_start_that_fails_to_set_up_the_store_leaves_no_store_and_no_file_of_its_own(tmp_path):
    # The empty keys.db it made was left behind, and the next start took it for one emptied.
    failed = creating_a_key(tmp_path, preexec_fn=with_no_file_growing)
    assert (failed.returncode, failed.stderr) == (
        1, f"solarserv: error: The key store {tmp_path / 'keys.db'} cannot be used: disk I/O error.\n")
    assert list(tmp_path.iterdir()) == []
    done = creating_a_key(tmp_path)
    assert done.returncode == 0 and "note: created a new key store" in done.stderr


def killed_at_its_first_write() -> None:
    """In a child process before it runs: no file may grow, and no core be dumped."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def test_a_first_start_killed_while_setting_up_the_store_leaves_no_store(tmp_path):
    # It left an empty keys.db, which every later start refused after waiting 5 s, telling the operator to delete it.
    # Python ignores SIGXFSZ; given back its default, the first write that grows a file kills the process, as a SIGKILL
    # or a power loss would at that point, with no chance to tidy up.
    killed = subprocess.run(
        [sys.executable, "-c", "import runpy, signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); "
         "runpy.run_module('solarserv', run_name='__main__', alter_sys=True)", *create_key_arguments(tmp_path)],
        preexec_fn=killed_at_its_first_write, cwd=tmp_path, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGXFSZ
    assert not (tmp_path / "keys.db").exists()
    done = creating_a_key(tmp_path)
    assert done.returncode == 0 and "note: created a new key store" in done.stderr


def test_a_data_dir_that_is_a_file_is_one_line(capsys, tmp_path):
    (tmp_path / "var").write_text("")
    status, out, err = run(capsys, tmp_path / "var", "create", "--label", "Acme", "--tier", "free")
    assert (status, out) == (1, "")
    assert err == (f"solarserv: error: The key store cannot be kept in the data dir {tmp_path / 'var'}: "
                   "it is not a directory.\n")


@pytest.mark.parametrize(("read_only", "mode", "command", "said"), [
    ("keys.db", 0o444, ["create", "--label", "Beta", "--tier", "free"], "attempt to write a readonly database"),
    ("keys.db", 0o444, ["deactivate", "1"], "attempt to write a readonly database"),
    (".", 0o555, ["create", "--label", "Beta", "--tier", "free"], "Permission denied"),  # none made there
], ids=["store-create", "store-deactivate", "data-dir-create"])
def test_a_key_store_this_user_cannot_write_is_one_line_naming_it(tmp_path, read_only, mode, command, said):
    data_dir = tmp_path / "var"
    data_dir.mkdir()
    if read_only == "keys.db":
        store = KeyStore.open(data_dir)
        store.create("Acme", "free", by="a test")
        store.close()
    (data_dir / read_only).chmod(mode)
    done = subprocess.run(bound_by_file_modes([sys.executable, "-m", "solarserv", "keys", *command, "--data-dir",
                                               str(data_dir)]),
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"solarserv: error: The key store {data_dir / 'keys.db'} cannot be used: {said}.\n"
