"""A damaged database is not an encrypted one, an empty database file is never replaced by
a new database, and read_only opens write nothing."""

import hashlib
import os

import pytest

import cblite


def _file(dbdir, name):
    return os.path.join(dbdir, name + ".cblite2", "db.sqlite3")


def _make(dbdir, name, **kw):
    with cblite.Database(name, dbdir, **kw) as db:
        for i in range(3):
            db.put({"n": i}, f"d{i}")


def test_garbled_header_is_damaged_not_unauthorized(dbdir):
    _make(dbdir, "garbled")
    with open(_file(dbdir, "garbled"), "r+b") as f:
        f.write(b"garbage garbage garbage!")
    with pytest.raises(cblite.DatabaseDamaged) as exc:
        cblite.Database("garbled", dbdir, create=False)
    assert exc.value.code == 500 and exc.value.detail & 0xFF == 26
    assert "not a database" in exc.value.message and "SELECT" not in exc.value.message
    assert isinstance(exc.value, cblite.InternalError)


def test_encrypted_without_key_is_unauthorized(dbdir):
    _make(dbdir, "secret", encryption_key="pw")
    with pytest.raises(cblite.Unauthorized) as exc:
        cblite.Database("secret", dbdir)
    assert "encrypted" in exc.value.message


def test_empty_database_file_is_not_reset(dbdir):
    _make(dbdir, "emptied")
    open(_file(dbdir, "emptied"), "wb").close()
    with pytest.raises(cblite.DatabaseDamaged) as exc:
        cblite.Database("emptied", dbdir)          # create=True: still refused
    assert "empty" in exc.value.message
    assert os.path.getsize(_file(dbdir, "emptied")) == 0


def test_read_only(dbdir):
    _make(dbdir, "ro")
    before = hashlib.sha256(open(_file(dbdir, "ro"), "rb").read()).hexdigest()
    with cblite.Database("ro", dbdir, read_only=True) as db:
        assert db["d1"]["n"] == 1
        with pytest.raises(cblite.Forbidden):
            db.put({"x": 1}, "new")
    assert hashlib.sha256(open(_file(dbdir, "ro"), "rb").read()).hexdigest() == before
    with pytest.raises(cblite.NotFound):
        cblite.Database("absent", dbdir, read_only=True)
    assert not os.path.exists(os.path.join(dbdir, "absent.cblite2"))


def test_salvage_from_a_damaged_page(dbdir):
    """One damaged table page: the changes feed stops at it, salvage reads every other
    document by ID, lists the lost ones, and put_existing_revisions takes what it read
    into a new database."""
    with cblite.Database("hurt", dbdir) as db:
        for i in range(1, 31):
            db.put({"n": i, "pad": "x" * 300}, f"d{i}")
    path = _file(dbdir, "hurt")
    data = open(path, "rb").read()
    at = data.find(b'"n":17,')
    assert at > 0
    with open(path, "r+b") as f:
        f.seek(at - at % 4096)
        f.write(b"\xa5" * 4096)
    with cblite.Database("hurt", dbdir, read_only=True) as db, \
            cblite.Database("rescued", dbdir) as target:
        with pytest.raises(cblite.InternalError):
            db.changes()
        seen = []
        report = db.default_collection.salvage(
            lambda rev: seen.append(rev) or target.default_collection.put_existing_revisions([rev]))
        assert 20 <= len(seen) < 30
        assert report["revisions"] == len(seen)
        lost = {entry["id"] for entry in report["lost"]}
        assert "d17" in lost
        assert target.count == len(seen)
        for rev in seen:
            assert rev["_id"] not in lost
            assert target[rev["_id"]]["n"] == int(rev["_id"][1:])
            assert target[rev["_id"]]["_rev"] == rev["_rev"]

        def fail(rev):
            raise KeyError(rev["_id"])
        with pytest.raises(KeyError):
            db.default_collection.salvage(fail)
        with pytest.raises(TypeError):
            db.default_collection.salvage(None)  # type: ignore[arg-type]
