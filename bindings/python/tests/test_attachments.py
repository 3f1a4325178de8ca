"""Attachments through the Python bindings: the content store, streaming writers and
readers, stubs across updates, removal, dedup, compaction, crash safety, hostile names."""

import base64
import hashlib
import io
import json
import os
import threading

import pytest

import cblite
from cblite import _lib
from helpers import run_isolated, run_with_timeout

EMPTY_DIGEST = "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="


def digest_of(data: bytes) -> str:
    return "sha1-" + base64.b64encode(hashlib.sha1(data).digest()).decode()


def md5_of(data: bytes) -> str:
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


def blob_files(db):
    d = os.path.join(db.path, "attachments")
    return sorted(f for f in os.listdir(d) if f.endswith(".blob")) if os.path.isdir(d) else []


def temp_files(db):
    d = os.path.join(db.path, "attachments", "tmp")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def file_name(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest().upper() + ".blob"


def pattern(n: int, seed: int = 1) -> bytes:
    # Deterministic, non-periodic enough: sha256 counter blocks.
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{i}".encode()).digest()
        i += 1
    return bytes(out[:n])


def test_declarations_cover_the_attachment_section():
    for name in ("cbl_blob_writer_create", "cbl_doc_set_attachment", "cbl_blob_reader_read",
                 "cbl_db_blob_length"):
        assert name in _lib.FUNCTIONS
        assert getattr(_lib.lib, name).argtypes is not None
    assert cblite.missing_functions == []


def test_set_get_and_stub(coll, db):
    _, r1 = coll.put({"title": "photo"}, "doc")
    content = b"\x00\xffjpeg bytes\x00"
    r2 = coll.set_attachment("doc", "photo.jpg", content, content_type="image/jpeg", rev=r1)
    assert r2.startswith("2-")
    doc = coll["doc"]
    assert doc["title"] == "photo"
    # "digest" stays our SHA-1 content address; "md5" is CouchDB's digest, kept beside it.
    assert doc["_attachments"] == {"photo.jpg": {
        "content_type": "image/jpeg", "digest": digest_of(content), "length": len(content),
        "md5": md5_of(content), "revpos": 2, "stub": True}}
    assert coll.attachment_names("doc") == ["photo.jpg"]
    assert coll.get_attachment("doc", "photo.jpg") == content
    assert coll.attachments("doc")["photo.jpg"]["length"] == len(content)
    assert blob_files(db) == [file_name(content)]
    with pytest.raises(cblite.NotFound):
        coll.get_attachment("doc", "nope")
    with pytest.raises(cblite.NotFound):
        coll.attachment_names("absent")
    # default-collection shortcuts on Database
    assert db.attachment_names("doc") == ["photo.jpg"]
    assert db.get_attachment("doc", "photo.jpg") == content


def test_zero_byte_attachment(coll, db, tmp_path):
    rev = coll.set_attachment("z", "empty", b"")
    assert rev.startswith("1-")
    assert coll["z"]["_attachments"]["empty"]["length"] == 0
    assert coll["z"]["_attachments"]["empty"]["digest"] == EMPTY_DIGEST
    assert coll.get_attachment("z", "empty") == b""
    with coll.open_attachment("z", "empty") as f:
        assert f.length == 0 and f.read() == b""
    out = tmp_path / "empty.out"
    coll.save_attachment("z", "empty", out)
    assert out.read_bytes() == b""
    assert db.blob_length(EMPTY_DIGEST) == 0


def test_inline_data_becomes_a_stub(coll):
    att = {"a.txt": {"content_type": "text/plain", "data": "aGk=", "revpos": 7}}
    coll.put({"_attachments": att, "v": 1}, "withatt")
    doc = coll["withatt"]
    assert doc["v"] == 1
    assert doc["_attachments"]["a.txt"] == {"content_type": "text/plain", "digest": digest_of(b"hi"),
                                            "length": 2, "md5": md5_of(b"hi"), "revpos": 1, "stub": True}
    # a read body saves back as it is; CouchDB's {"stub": true} alone keeps the attachment
    coll.put(dict(doc, v=2), "withatt")
    coll.put({"_rev": coll["withatt"]["_rev"], "v": 3, "_attachments": {"a.txt": {"stub": True}}}, "withatt")
    assert coll.get_attachment("withatt", "a.txt") == b"hi"
    with pytest.raises(cblite.PreconditionFailed):
        coll.put({"_attachments": {"a.txt": {"stub": True}}}, "new-with-stub")
    assert coll.get_attachment("withatt", "a.txt") == b"hi"
    for bad in ({"a": {"data": "not base64!"}}, {"a": {"data": "aGk=", "length": 5}},
                {"a": {}}, {"a": {"digest": "md5-xyz"}}, {"a": {"data": "aGk=", "bogus": 1}}, "x"):
        with pytest.raises(cblite.BadRequest):
            coll.put({"_attachments": bad}, "bad")
    assert "bad" not in coll


def test_missing_content_is_refused(coll, db):
    missing = digest_of(b"never stored")
    with pytest.raises(cblite.PreconditionFailed) as e:
        coll.put({"_attachments": {"x.bin": {"digest": missing, "stub": True}}}, "m")
    assert "attachment content missing" in e.value.message
    assert "m" not in coll
    with pytest.raises(cblite.PreconditionFailed):
        coll.set_attachment("m", "x", digest=missing)
    with pytest.raises(cblite.PreconditionFailed):
        coll.put_existing("p", {"_attachments": {"x": {"digest": missing, "revpos": 1}}}, ["1-abc"])
    with pytest.raises(cblite.NotFound):
        db.blob_length(missing)
    with pytest.raises(cblite.BadRequest):
        db.blob_length("sha1-bad")


def test_body_only_updates_keep_stubs(coll, db):
    _, r1 = coll.put({"v": 1}, "d")
    r2 = coll.set_attachment("d", "a", b"AAA", content_type="text/plain", rev=r1)
    r3 = coll.set_attachment("d", "b", b"BBBB", content_type="text/plain", rev=r2)
    before = coll["d"]["_attachments"]
    files = blob_files(db)
    _, r4 = coll.put({"v": 2}, "d", r3)                         # no _attachments key
    assert r4.startswith("4-")
    assert coll["d"]["_attachments"] == before
    assert before["a"]["revpos"] == 2 and before["b"]["revpos"] == 3
    # update(): the callback gets the stubs and may keep or drop them
    coll.update("d", lambda d: {**d, "v": 3})
    assert coll["d"]["_attachments"] == before
    coll.update("d", lambda d: {"v": 4})
    assert coll["d"]["_attachments"] == before and coll["d"]["v"] == 4
    assert blob_files(db) == files                              # no data copied
    # explicit {} removes them all
    coll.put({"_attachments": {}, "v": 5}, "d", coll["d"]["_rev"])
    assert "_attachments" not in coll["d"]
    assert coll.attachment_names("d") == []


def test_remove_attachment(coll):
    rev = coll.set_attachment("d", "one", b"1")
    rev = coll.set_attachment("d", "two", b"2", rev=rev)
    with pytest.raises(cblite.NotFound):
        coll.remove_attachment("d", "three", rev)
    with pytest.raises(cblite.Conflict):
        coll.remove_attachment("d", "one", "1-abc")
    rev = coll.remove_attachment("d", "one", rev)
    assert rev.startswith("3-") and coll["d"]["_rev"] == rev
    assert coll.attachment_names("d") == ["two"]
    with pytest.raises(cblite.NotFound):
        coll.get_attachment("d", "one")
    rev = coll.remove_attachment("d", "two")                      # None: the current revision
    assert rev.startswith("4-") and coll["d"]["_rev"] == rev
    assert coll.attachment_names("d") == []


def test_set_attachment_argument_rules(coll, db):
    with pytest.raises(TypeError):
        coll.set_attachment("d", "a")
    with pytest.raises(TypeError):
        coll.set_attachment("d", "a", b"x", digest=EMPTY_DIGEST)
    rev = coll.set_attachment("d", "a", b"x")
    rev = coll.set_attachment("d", "b", b"y")          # rev None: the current revision
    assert coll.attachment_names("d") == ["a", "b"] and coll.get("d")["_rev"] == rev
    with pytest.raises(cblite.Conflict):
        coll.set_attachment("d", "c", b"z", rev="1-" + "0" * 32)  # a given rev must be current
    assert coll.attachment_names("d") == ["a", "b"]
    with pytest.raises(cblite.BadRequest):
        coll.set_attachment("d", "b", b"y", content_type="nonsense", rev=rev)
    with pytest.raises(cblite.BadRequest):
        coll.set_attachment("d", "b", digest="sha1-nope", rev=rev)


def test_large_streamed(coll, db, tmp_path):
    total = 50 * 1024 * 1024 + 99
    block = pattern(1 << 20)
    sha = hashlib.sha1()
    with db.blob_writer() as w:
        written = 0
        i = 0
        while written < total:
            chunk = memoryview(block)[i % 7: i % 7 + min(len(block) - 7, total - written)]
            w.write(chunk)
            sha.update(chunk)
            written += len(chunk)
            i += 1
        assert blob_files(db) == [] and len(temp_files(db)) == 1     # nothing visible yet
    digest = "sha1-" + base64.b64encode(sha.digest()).decode()
    assert w.digest == digest and w.length == total
    assert temp_files(db) == []
    assert db.blob_length(digest) == total
    rev = coll.set_attachment("big", "movie.bin", digest=digest)
    assert coll["big"]["_attachments"]["movie.bin"]["length"] == total
    with coll.open_attachment("big", "movie.bin") as f:
        assert f.length == total and f.seekable() and f.readable()
        check = hashlib.sha1()
        n = 0
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            check.update(chunk)
            n += len(chunk)
        assert n == total and check.digest() == sha.digest()
        assert f.seek(-10, io.SEEK_END) == total - 10 and len(f.read()) == 10
        f.seek(5 * (len(block) - 7) + 3)
        assert f.read(16) == block[5 % 7 + 3: 5 % 7 + 19]
        assert f.tell() == 5 * (len(block) - 7) + 19
        with pytest.raises(cblite.BadRequest):
            f.seek(total + 1)
    with pytest.raises(ValueError):
        f.read(1)                                                   # closed
    # to a file and back from a file: same digest, one stored file (dedup)
    out = tmp_path / "movie.out"
    coll.save_attachment("big", "movie.bin", out)
    assert out.stat().st_size == total
    rev2 = coll.set_attachment("big2", "copy.bin", path=out)
    assert coll["big2"]["_attachments"]["copy.bin"]["digest"] == digest
    with open(out, "rb") as fobj:                                   # a file object, read in chunks
        coll.set_attachment("big3", "again.bin", fobj)
    assert blob_files(db) == [digest_to_file(digest)]
    assert rev.startswith("1-") and coll["big"]["_rev"] == rev
    assert rev2.startswith("1-") and coll["big2"]["_rev"] == rev2


def digest_to_file(digest: str) -> str:
    return base64.b64decode(digest[5:]).hex().upper() + ".blob"


def test_writer_cancel_and_misuse(db):
    w = db.blob_writer()
    w.write(b"abandoned")
    assert len(temp_files(db)) == 1
    w.cancel()
    w.cancel()
    assert temp_files(db) == [] and blob_files(db) == []
    with pytest.raises(cblite.BadRequest):
        w.write(b"x")
    with pytest.raises(RuntimeError):
        with db.blob_writer() as w2:
            w2.write(b"raised")
            raise RuntimeError("boom")
    assert temp_files(db) == [] and blob_files(db) == []
    assert db.put_blob(bytearray(b"from a bytearray")) == digest_of(b"from a bytearray")
    assert db.put_blob(memoryview(b"xxabcxx")[2:5]) == digest_of(b"abc")


def test_dedup_across_documents(coll, db):
    other = db.create_collection("other")
    content = pattern(100_000, seed=5)
    for i in range(4):
        coll.set_attachment(f"d{i}", f"n{i}", content)
    other.set_attachment("o", "same", content)
    assert blob_files(db) == [file_name(content)]
    assert {coll[f"d{i}"]["_attachments"][f"n{i}"]["digest"] for i in range(4)} == {digest_of(content)}


def test_compaction_removes_orphans_and_keeps_referenced(coll, db):
    rev = coll.set_attachment("upd", "f", b"replaced")
    coll.set_attachment("upd", "f", b"replacement", rev=rev)
    coll.set_attachment("purged", "f", b"purged")
    coll.set_attachment("s1", "f", b"shared")
    coll.set_attachment("s2", "f", b"shared")
    rev = coll.set_attachment("del", "f", b"deleted")
    coll.set_attachment("exp", "f", b"expired")
    loose = db.put_blob(b"never attached")
    coll.purge("purged")
    coll.purge("s1")
    coll.delete("del", rev)
    coll.set_expiration("exp", 1)                   # long past: purged by compact()
    everything = {file_name(x) for x in (b"replaced", b"replacement", b"purged", b"shared",
                                         b"deleted", b"expired", b"never attached")}
    assert set(blob_files(db)) == everything
    db.compact()
    assert set(blob_files(db)) == {file_name(b"replacement"), file_name(b"shared")}
    assert coll.get_attachment("upd", "f") == b"replacement"
    assert coll.get_attachment("s2", "f") == b"shared"
    with pytest.raises(cblite.NotFound):
        db.blob_length(loose)
    with pytest.raises(cblite.PreconditionFailed):
        coll.set_attachment("late", "f", digest=loose)
    assert db.integrity_check() == []


def test_crashed_writer_leaves_nothing_visible(dbdir):
    # A separate process starts writing an attachment and dies without finishing.
    code = f"""
        import os, cblite
        db = cblite.Database("crash", {dbdir!r})
        w = db.blob_writer()
        w.write(b"half of an attachment" * 1000)
        os._exit(0)
    """
    proc = run_isolated(code)
    assert proc.returncode == 0, proc.stderr
    with cblite.Database("crash", dbdir) as db:
        assert temp_files(db) == []                     # the leftover is removed on open ...
        assert blob_files(db) == []                     # ... and was never visible
        with pytest.raises(cblite.NotFound):
            db.blob_length(digest_of(b"half of an attachment" * 1000))
        # a live writer's file survives compaction, the leftover does not
        with db.blob_writer() as live:
            live.write(b"in progress")
            db.compact()
            assert len(temp_files(db)) == 1
        assert temp_files(db) == []
        assert db.blob_length(live.digest) == len(b"in progress")


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "../../../../tmp/cblite-evil", "..",
                                  "a/b/c", "名前 with spaces", "n" * 255])
def test_hostile_names_stay_names(coll, db, dbdir, name):
    coll.set_attachment("h", name, b"payload", content_type="text/plain")
    assert coll.get_attachment("h", name) == b"payload"
    assert coll.attachment_names("h") == [name]
    assert not os.path.exists(os.path.join(db.path, "x"))
    assert not os.path.exists(os.path.join(dbdir, "x"))
    assert not os.path.exists("/tmp/cblite-evil")
    assert sorted(os.listdir(dbdir)) == ["testdb.cblite2"]
    for f in os.listdir(os.path.join(db.path, "attachments")):
        assert f == "tmp" or (f.endswith(".blob") and len(f) == 45)


@pytest.mark.parametrize("name", ["", "nul\x00inside", "\x00", "tab\there", "new\nline",
                                  "n" * 256, "é" * 128])
def test_invalid_names_rejected(coll, name):
    rev = coll.set_attachment("h", "ok", b"x")
    with pytest.raises(cblite.BadRequest):
        if "\x00" in name:           # C strings end at NUL: only JSON can carry one
            coll.put({"_attachments": {name: {"data": "aGk="}}}, "h", rev)
        else:
            coll.set_attachment("h", name, b"x", rev=rev)
    assert coll.attachment_names("h") == ["ok"]


def test_reader_detects_corruption(coll, db):
    coll.set_attachment("c", "a", b"original")
    path = os.path.join(db.path, "attachments", file_name(b"original"))
    with open(path, "r+b") as f:
        f.write(b"ORIGINAL")
    with pytest.raises(cblite.InternalError):
        coll.get_attachment("c", "a")
    with coll.open_attachment("c", "a") as f:
        assert f.read(3) == b"ORI"
        with pytest.raises(cblite.InternalError):
            f.read()
    with coll.open_attachment("c", "a") as f:        # not read sequentially: no check
        f.seek(2)
        assert f.read() == b"IGINAL"


def test_buffered_reader_and_readinto(coll):
    coll.set_attachment("t", "lines.txt", b"one\ntwo\nthree\n", content_type="text/plain; charset=utf-8")
    with io.BufferedReader(coll.open_attachment("t", "lines.txt")) as f:
        assert [l for l in f] == [b"one\n", b"two\n", b"three\n"]
    with coll.open_attachment("t", "lines.txt") as f:
        buf = bytearray(5)
        assert f.readinto(buf) == 5 and bytes(buf) == b"one\nt"
    assert coll["t"]["_attachments"]["lines.txt"]["content_type"] == "text/plain; charset=utf-8"


# -- content stored inside a transaction (group commit) -----------------------------------


def pending_folders(db):
    return [f for f in temp_files(db) if f.endswith(".pending")]


def length_seen_by_another_thread(db, digest):
    """The length another thread sees for `digest` (None when NotFound)."""
    def other():
        try:
            return db.blob_length(digest)
        except cblite.NotFound:
            return None
    return run_with_timeout(other)


def test_content_stored_in_a_transaction_is_installed_by_its_commit(coll, db):
    contents = [pattern(70_000, seed=s) for s in range(4)]
    with db.transaction():
        digests = []
        for i, data in enumerate(contents):
            d = db.put_blob(data)
            digests.append(d)
            assert db.blob_length(d) == len(data)                 # at once, on this thread
            coll.set_attachment(f"d{i}", "a", digest=d)
            assert coll.get_attachment(f"d{i}", "a") == data
        assert blob_files(db) == []                               # not under its name yet
        assert len(pending_folders(db)) == 1
        assert length_seen_by_another_thread(db, digests[0]) is None
    assert blob_files(db) == sorted(file_name(c) for c in contents)
    assert temp_files(db) == []
    assert length_seen_by_another_thread(db, digests[0]) == len(contents[0])
    for i, data in enumerate(contents):
        assert coll.get_attachment(f"d{i}", "a") == data


def test_content_stored_in_an_aborted_transaction_is_discarded(coll, db):
    kept = db.put_blob(b"stored before")
    with pytest.raises(RuntimeError):
        with db.transaction():
            d = db.put_blob(b"stored inside" * 1000)
            assert db.put_blob(b"stored before") == kept
            coll.set_attachment("x", "a", digest=d)
            raise RuntimeError("abort")
    with pytest.raises(cblite.NotFound):
        db.blob_length(d)
    assert "x" not in coll
    assert db.blob_length(kept) == len(b"stored before")
    assert blob_files(db) == [file_name(b"stored before")]
    assert temp_files(db) == []
    with pytest.raises(cblite.PreconditionFailed):
        coll.set_attachment("x", "a", digest=d)


def test_blob_writer_in_a_transaction(coll, db):
    data = pattern(200_000, seed=7)
    db.begin()
    with db.blob_writer() as w:
        w.write(data[:50_000])
        w.write(data[50_000:])
    coll.set_attachment("w", "a", digest=w.digest)
    assert blob_files(db) == []
    assert coll.get_attachment("w", "a") == data
    db.commit()
    assert blob_files(db) == [file_name(data)]
    assert temp_files(db) == []


def test_process_dying_before_the_commit_leaves_nothing(dbdir):
    data = pattern(100_000, seed=3)
    code = f"""
        import hashlib, os, cblite
        out = bytearray()
        i = 0
        while len(out) < 100_000:
            out += hashlib.sha256(f"3:{{i}}".encode()).digest()
            i += 1
        db = cblite.Database("crash", {dbdir!r})
        db.begin()
        d = db.put_blob(bytes(out[:100_000]))
        assert d == {digest_of(data)!r}
        db.default_collection.set_attachment("doc", "a", digest=d)
        os._exit(0)
    """
    proc = run_isolated(code)
    assert proc.returncode == 0, proc.stderr
    folder = os.path.join(dbdir, "crash.cblite2", "attachments", "tmp")
    assert [f for f in os.listdir(folder) if f.endswith(".pending")], "the dead transaction left its folder"
    with cblite.Database("crash", dbdir) as db:
        assert temp_files(db) == []                    # removed on open
        assert blob_files(db) == []                    # never installed
        assert "doc" not in db.default_collection
        with pytest.raises(cblite.NotFound):
            db.blob_length(digest_of(data))
        d = db.put_blob(data)                          # stored again, whole
        assert db.blob_length(d) == len(data)
        with open(os.path.join(db.path, "attachments", file_name(data)), "rb") as f:
            assert f.read() == data


def test_truncated_file_under_its_name_is_replaced_by_a_new_put(coll, db):
    data = pattern(150_000, seed=5)
    d = db.put_blob(data)
    coll.set_attachment("t", "a", digest=d)
    path = os.path.join(db.path, "attachments", file_name(data))
    os.truncate(path, 1000)                            # damaged behind the store's back
    with pytest.raises(cblite.CBLiteError):
        coll.get_attachment("t", "a")
    with db.transaction():
        assert db.put_blob(data) == d
    assert os.path.getsize(path) == len(data)
    assert coll.get_attachment("t", "a") == data
