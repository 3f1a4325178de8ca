"""Encryption at rest (SQLCipher): keys on open, 401 without the right key, changing and
removing keys, nothing readable in the files, keys never in messages."""

import ctypes
import os
import sqlite3
import threading

import pytest

import cblite
from cblite import _lib
from helpers import run_isolated

MARKER = "PLAINTEXT-MARKER-7f3a9c"
PASSWORD = "correct horse battery staple"


def bundle_files(path):
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            full = os.path.join(root, f)
            with open(full, "rb") as fh:
                out[full] = fh.read()
    return out


def snapshot(path):
    return {f: (os.stat(f).st_mtime_ns, os.stat(f).st_size)
            for f in bundle_files(path)}


def marker_visible(path):
    return any(MARKER.encode() in data for data in bundle_files(path).values())


def sqlite_files(path):
    return [f for f in bundle_files(path) if f.endswith((".sqlite3", ".sqlite", ".db"))]


def make_db(dbdir, name="secret", key=PASSWORD, n=20):
    with cblite.Database(name, dbdir, encryption_key=key) as db:
        for i in range(n):
            db.put({"marker": MARKER, "i": i}, f"d{i}")
        return db.path


def test_plain_database_is_not_encrypted(db):
    assert db.is_encrypted is False
    assert _lib.lib.cbl_db_is_encrypted(None) == 0


def test_password_roundtrip(dbdir):
    path = make_db(dbdir)
    with cblite.Database("secret", dbdir, encryption_key=PASSWORD) as db:
        assert db.is_encrypted is True
        assert db.count == 20
        assert db["d3"]["marker"] == MARKER


def test_files_hold_no_plaintext(dbdir):
    path = make_db(dbdir)
    assert not marker_visible(path)
    for f in sqlite_files(path):
        with open(f, "rb") as fh:
            assert not fh.read(16).startswith(b"SQLite format 3")
    # the same content unencrypted is visible (sanity check of the probe)
    plain = make_db(dbdir, "plain", key=None)
    assert marker_visible(plain)


def test_stdlib_sqlite_cannot_read_encrypted_file(dbdir):
    path = make_db(dbdir)
    files = sqlite_files(path)
    assert files
    for f in files:
        con = sqlite3.connect(f)
        with pytest.raises(sqlite3.DatabaseError):
            con.execute("select count(*) from sqlite_master").fetchone()
        con.close()


def test_missing_or_wrong_key_is_401_and_touches_nothing(dbdir):
    path = make_db(dbdir)
    before = snapshot(path)
    for key in (None, "wrong password", {"raw_hex": "00" * 32}, os.urandom(32)):
        with pytest.raises(cblite.Unauthorized) as info:
            cblite.Database("secret", dbdir, encryption_key=key)
        assert info.value.code == 401
        if isinstance(key, str):
            assert key not in info.value.message
    assert snapshot(path) == before
    with cblite.Database("secret", dbdir, encryption_key=PASSWORD) as db:
        assert db.count == 20


def test_key_on_plain_database_is_401(dbdir):
    make_db(dbdir, "plain", key=None)
    with pytest.raises(cblite.Unauthorized):
        cblite.Database("plain", dbdir, encryption_key="some password")
    with cblite.Database("plain", dbdir) as db:
        assert db.count == 20


def test_raw_key(dbdir):
    raw = bytes(range(32))
    path = make_db(dbdir, "raw", key=raw)
    assert not marker_visible(path)
    with cblite.Database("raw", dbdir, encryption_key={"raw_hex": raw.hex()}) as db:
        assert db.is_encrypted and db.count == 20
    with cblite.Database("raw", dbdir, encryption_key=raw) as db:
        assert db["d0"]["i"] == 0
    with pytest.raises(cblite.Unauthorized):
        cblite.Database("raw", dbdir, encryption_key=raw.hex())    # as a password: wrong


@pytest.mark.parametrize("key", [{"raw_hex": "abc"}, {"raw_hex": "zz" * 32}, {"other": 1},
                                 {"password": 5}, {}],
                         ids=["short-hex", "non-hex", "unknown-field", "non-string",
                              "empty-object"])
def test_bad_key_json_is_400(dbdir, key):
    with pytest.raises(cblite.BadRequest):
        cblite.Database("badkey", dbdir, encryption_key=key)
    assert not cblite.Database.exists("badkey", dbdir)


def test_change_key_beside_a_busy_reader(dbdir):
    """A reader busy on another thread during the re-key gives its connection back after
    the file swap; later reads must not use it (they would miss every later write)."""
    with cblite.Database("busy", dbdir, encryption_key=PASSWORD, busy_timeout_ms=200) as db:
        db.put({}, "before")
        inside, proceed = threading.Event(), threading.Event()

        def hold(doc, params):
            inside.set()
            proceed.wait(10)
            return True

        db.set_filter("hold", hold)
        reader = threading.Thread(target=lambda: db.changes(filter="hold"))
        reader.start()
        assert inside.wait(10)
        db.change_encryption_key("rotated")
        proceed.set()
        reader.join(10)
        assert not reader.is_alive()
        db.set_filter("hold", None)
        db.put({}, "after")
        for _ in range(3):
            assert db.get("after")["_id"] == "after"
            assert db.count == 2


def test_reads_on_other_threads_during_rekeys_never_fail(dbdir):
    """Every re-key drops the pooled readers, so reader threads open new connections while
    the file and the key are swapped; none of their reads may fail."""
    keys = [{"raw_hex": "00" * 31 + "01"}, {"raw_hex": "00" * 31 + "02"}]
    with cblite.Database("rekeys", dbdir, encryption_key=keys[0]) as db:
        for i in range(10):
            db.put({"i": i}, f"doc{i}")
        stop = threading.Event()
        failures, reads = [], [0]

        def read():
            i = 0
            while not stop.is_set():
                try:
                    assert db.get(f"doc{i % 10}")["i"] == i % 10
                except Exception as e:              # noqa: BLE001 - every failure is reported
                    failures.append(repr(e))
                reads[0] += 1
                i += 1

        threads = [threading.Thread(target=read) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            for k in range(1, 13):
                db.change_encryption_key(keys[k % 2])
        finally:
            stop.set()
            for t in threads:
                t.join(10)
        assert failures[:3] == []
        assert reads[0] > 0
        assert db.count == 10


def test_change_key(dbdir):
    path = make_db(dbdir)
    with cblite.Database("secret", dbdir, encryption_key=PASSWORD) as db:
        db.change_encryption_key("new password")
        assert db.is_encrypted
        assert db.count == 20                       # the handle keeps working
        db.put({"marker": MARKER}, "after-change")
    with pytest.raises(cblite.Unauthorized):
        cblite.Database("secret", dbdir, encryption_key=PASSWORD)
    with cblite.Database("secret", dbdir, encryption_key="new password") as db:
        assert db.count == 21
    assert not marker_visible(path)


def test_remove_and_add_encryption(dbdir):
    path = make_db(dbdir)
    with cblite.Database("secret", dbdir, encryption_key=PASSWORD) as db:
        db.change_encryption_key(None)
        assert db.is_encrypted is False
        assert db.count == 20
    with cblite.Database("secret", dbdir) as db:
        assert db.count == 20
        assert not db.is_encrypted
    assert marker_visible(path)
    with cblite.Database("secret", dbdir) as db:
        db.change_encryption_key(bytes(32))
        assert db.is_encrypted
    assert not marker_visible(path)
    with pytest.raises(cblite.Unauthorized):
        cblite.Database("secret", dbdir)
    with cblite.Database("secret", dbdir, encryption_key=bytes(32)) as db:
        assert db.count == 20


def test_all_handles_follow_key_change(dbdir):
    make_db(dbdir)
    a = cblite.Database("secret", dbdir, encryption_key=PASSWORD)
    b = cblite.Database("secret", dbdir, encryption_key=PASSWORD)
    seen = []
    token = b.add_change_listener(lambda changes: seen.extend(c.doc_id for c in changes))
    try:
        a.change_encryption_key("rotated")
        b.put({"v": 1}, "via-b")
        assert a["via-b"]["v"] == 1
        a.put({"v": 2}, "via-a")
        b.wait_notifications(5000)
        assert "via-a" in seen and "via-b" in seen
        assert b.is_encrypted
    finally:
        token.remove()
        a.close()
        b.close()
    with cblite.Database("secret", dbdir, encryption_key="rotated") as db:
        assert db.count == 22


def test_change_key_in_transaction_is_406(dbdir):
    make_db(dbdir)
    with cblite.Database("secret", dbdir, encryption_key=PASSWORD) as db:
        with db.transaction():
            with pytest.raises(cblite.NotAcceptable):
                db.change_encryption_key("x")
        with pytest.raises(cblite.Unauthorized):            # still the old key
            cblite.Database("secret", dbdir, encryption_key="x")
        db.change_encryption_key("x")
    with cblite.Database("secret", dbdir, encryption_key="x") as db:
        assert db.count == 20


def test_change_key_bad_json_is_400(db):
    err = _lib.cbl_error()
    for bad in (b"not json", b"[]", b'{"raw_hex": "12"}'):
        assert _lib.lib.cbl_db_change_encryption_key(db._h, bad, ctypes.byref(err)) == 400
    assert not db.is_encrypted


def test_key_never_logged(dbdir):
    messages = []
    lock = threading.Lock()

    def on_log(domain, level, message):
        with lock:
            messages.append(message)

    saved = {d: cblite.get_log_level(d) for d in cblite.LogDomain}
    for d in cblite.LogDomain:
        cblite.set_log_level(d, cblite.LogLevel.DEBUG)
    cblite.set_log_callback(on_log)
    try:
        make_db(dbdir, key="pw-should-not-leak")
        with pytest.raises(cblite.Unauthorized) as info:
            cblite.Database("secret", dbdir, encryption_key="wrong-should-not-leak")
        with cblite.Database("secret", dbdir, encryption_key="pw-should-not-leak") as db:
            db.change_encryption_key({"raw_hex": "ab" * 32})
    finally:
        cblite.set_log_callback(None)
        for d, level in saved.items():
            cblite.set_log_level(d, level)
    assert messages, "no log message at DEBUG level: the check below would see nothing"
    text = "\n".join(messages) + "\n" + info.value.message
    for secret in ("pw-should-not-leak", "wrong-should-not-leak", "ab" * 32):
        assert secret not in text


def test_exists_list_copy_delete_without_key(dbdir, tmp_path):
    path = make_db(dbdir)
    assert cblite.Database.exists("secret", dbdir)
    assert cblite.Database.list(dbdir) == ["secret"]
    cblite.Database.copy(path, "copied", dbdir)
    with pytest.raises(cblite.Unauthorized):
        cblite.Database("copied", dbdir)
    with cblite.Database("copied", dbdir, encryption_key=PASSWORD) as db:
        assert db.count == 20
    cblite.Database.delete_named("secret", dbdir)
    assert cblite.Database.list(dbdir) == ["copied"]


def test_encrypted_with_stdlib_sqlite_loaded_first(tmp_path):
    """With Python's sqlite3 (the system libsqlite3) loaded first, the encryption must
    still be real: libcblite carries its own SQLCipher with hidden symbols, so the host's
    SQLite cannot interpose and turn PRAGMA key into a no-op."""
    code = f"""
import os, sqlite3
con = sqlite3.connect(os.path.join({str(tmp_path)!r}, "std.db"))
con.execute("create table t (x)")
import cblite
with cblite.Database("enc", {str(tmp_path)!r}, encryption_key="pw") as db:
    assert db.is_encrypted
    db.put({{"m": {MARKER!r}}}, "x")
    path = db.path
blob = b""
for root, _, files in os.walk(path):
    for f in files:
        blob += open(os.path.join(root, f), "rb").read()
assert {MARKER!r}.encode() not in blob, "plaintext in an encrypted database"
try:
    cblite.Database("enc", {str(tmp_path)!r})
    raise SystemExit("opened without key")
except cblite.Unauthorized:
    pass
con.execute("insert into t values (1)")
print("ok")
"""
    r = run_isolated(code)
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    assert r.stdout.strip().endswith("ok")
