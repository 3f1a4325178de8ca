"""The header's conventions checked directly through ctypes: on failure every
out-parameter is NULL / 0 and `err` carries the returned code and a message; on success
`err` is cleared."""

from ctypes import byref, c_int64, c_uint32, c_uint64, c_void_p

import pytest

from cblite import _lib

lib = _lib.lib
GARBAGE = 0x1234


def out_ptr():
    return c_void_p(GARBAGE)


def cases(db, coll):
    """(description, expected status, function, args-builder) — each call fails."""
    d, c = db._h, coll._h
    return [
        ("doc_get absent", 404, lambda o, e: lib.cbl_doc_get(c, b"none", 0, byref(o), e)),
        ("doc_get_revision unknown", 404,
         lambda o, e: lib.cbl_doc_get_revision(c, b"doc", b"9-abc", 0, byref(o), e)),
        ("doc_delete absent", 404,
         lambda o, e: lib.cbl_doc_delete(c, b"none", None, byref(o), e)),
        ("doc_conflicts absent", 404,
         lambda o, e: lib.cbl_doc_conflicts(c, b"none", byref(o), e)),
        ("doc_history absent", 404,
         lambda o, e: lib.cbl_doc_history(c, b"none", None, byref(o), e)),
        ("doc_revision_tree absent", 404,
         lambda o, e: lib.cbl_doc_revision_tree(c, b"none", byref(o), e)),
        ("local_get absent", 404, lambda o, e: lib.cbl_local_get(c, b"none", byref(o), e)),
        ("local_put conflict", 409,
         lambda o, e: lib.cbl_local_put(c, b"loc", b"{}", b"0-99", byref(o), e)),
        ("db_collection absent", 404,
         lambda o, e: lib.cbl_db_collection(d, None, b"nothere", byref(o), e)),
        ("collection_names absent scope", 404,
         lambda o, e: lib.cbl_db_collection_names(d, b"noscope", byref(o), e)),
        ("create_collection bad name", 400,
         lambda o, e: lib.cbl_db_create_collection(d, None, b"_bad", byref(o), e)),
        ("changes bad options", 400,
         lambda o, e: lib.cbl_collection_changes(c, 0, b"{", byref(o), e)),
        ("document listener NULL id", 400,
         lambda o, e: lib.cbl_collection_add_document_listener(
             c, None, _lib.CHANGE_FN(lambda *a: None), None, byref(o), e)),
        ("db_list bad dir", 400, lambda o, e: lib.cbl_db_list(b"\xff\xfe", byref(o), e)),
    ]


@pytest.fixture
def prepared(db):
    coll = db.default_collection
    coll.put({"v": 1}, "doc")
    coll.put_local("loc", {"v": 1})
    return db, coll


def test_out_pointer_null_and_err_filled_on_failure(prepared):
    db, coll = prepared
    failures = []
    for name, expected, call in cases(db, coll):
        out = out_ptr()
        err = _lib.cbl_error()
        status = call(out, byref(err))
        if status != expected:
            failures.append(f"{name}: status {status}, expected {expected}")
        if out.value is not None:
            failures.append(f"{name}: out-parameter not NULL on failure")
            if out.value != GARBAGE:
                lib.cbl_free(out.value)
        if err.code != status:
            failures.append(f"{name}: err.code {err.code} != returned {status}")
        if not err.message:
            failures.append(f"{name}: empty error message")
    assert failures == []


def test_doc_put_outputs_null_on_failure(prepared):
    db, coll = prepared
    oid, orev = out_ptr(), out_ptr()
    err = _lib.cbl_error()
    assert lib.cbl_doc_put(coll._h, b"doc", b'{"v":2}', None, 0, byref(oid), byref(orev),
                           byref(err)) == 409
    assert oid.value is None and orev.value is None and err.code == 409


def test_numeric_outputs_zero_on_failure(prepared):
    db, coll = prepared
    err = _lib.cbl_error()
    t = c_int64(77)
    assert lib.cbl_doc_get_expiration(coll._h, b"none", byref(t), byref(err)) == 404
    assert t.value == 0
    n = c_uint64(77)
    closed = _lib.cbl_error()
    # NULL out: 400
    assert lib.cbl_collection_count(coll._h, None, byref(closed)) == 400
    assert closed.code == 400 and closed.message
    # a released collection handle: 400, and the count set to 0
    h = c_void_p()
    assert lib.cbl_db_default_collection(db._h, byref(h), byref(err)) == 0
    lib.cbl_collection_release(h)
    assert lib.cbl_collection_count(h, byref(n), byref(closed)) == 400
    assert n.value == 0 and closed.code == 400
    depth = c_uint32(77)
    assert lib.cbl_db_max_rev_tree_depth(db._h, byref(depth), byref(err)) == 0
    assert depth.value == 20
    assert lib.cbl_collection_count(coll._h, byref(n), byref(err)) == 0
    assert n.value == 1


def test_err_cleared_on_success(prepared):
    db, coll = prepared
    err = _lib.cbl_error()
    err.code = 404
    err.message = b"old message"
    out = c_void_p()
    assert lib.cbl_doc_get(coll._h, b"doc", 0, byref(out), byref(err)) == 0
    assert _lib.take_string(out)
    assert err.code == 0 and err.message == b""


def test_status_name_unknown_code():
    name = lib.cbl_status_name(12345)
    assert name is not None and len(name) > 0
