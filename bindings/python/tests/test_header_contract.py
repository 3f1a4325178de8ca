"""The header's own rules (include/cblite.h, "Conventions"), checked against its text, and
the yes/no queries that report errors (cbl_db_exists_v2, cbl_db_is_encrypted_v2)."""

import ctypes
import os
import re

import pytest

import cblite
from cblite import _lib
from helpers import PKG_ROOT

HEADER = os.path.join(os.path.dirname(os.path.dirname(PKG_ROOT)), "include", "cblite.h")

# The functions that return a value directly (Conventions, "Names"): they cannot fail.
DIRECT_RETURN = {"cbl_version", "cbl_version_number", "cbl_status_name", "cbl_instance_count",
                 "cbl_log_get_level", "cbl_strdup"}
# The functions that return nothing: the release calls, and two that cannot fail.
VOID_NOT_RELEASE = {"cbl_free", "cbl_log_set_callback"}


def declarations():
    """(return type, name, comment before it) for every function of the header; functions
    declared together share the comment above the group."""
    text = open(HEADER, encoding="utf-8").read()
    out = []
    # CBL_WARN_UNUSED (the header's nodiscard marker) may precede the return type.
    for m in re.finditer(r"^(?!typedef)(?:CBL_WARN_UNUSED )?([a-z_][a-z_0-9 ]*?\**)\s*"
                         r"\b(cbl_[a-z0-9_]+)\(", text, re.M):
        before = text[:m.start()]
        comment = before[before.rfind("/*"):before.rfind("*/")]
        out.append((" ".join(m.group(1).split()), m.group(2), comment))
    return out


def handle_types():
    text = open(HEADER, encoding="utf-8").read()
    return set(re.findall(r"^typedef struct (cbl_[a-z_]+) \1;", text, re.M)) - {
        "cbl_error", "cbl_change", "cbl_query_row"}


def handle_table():
    """The rows of the Conventions' handle table: {handle: text of its row}."""
    text = open(HEADER, encoding="utf-8").read()
    start = text.index("handle              made by")
    table = text[start:text.index("Handles are independent", start)]
    rows, current = {}, None
    for line in table.splitlines()[1:]:
        m = re.match(r"\s*\*\s{6}(cbl_[a-z_]+)\s", line)
        if m:
            current = m.group(1)
            rows[current] = ""
        if current:
            rows[current] += line
    return rows


def test_header_parses():
    decls = declarations()
    assert len(decls) > 100
    names = {n for _, n, _ in decls}
    assert {"cbl_db_exists_v2", "cbl_db_is_encrypted_v2", "cbl_db_open"} <= names


def test_every_fallible_function_lists_its_errors():
    missing = [name for ret, name, comment in declarations()
               if ret == "cbl_status" and "Errors" not in comment]
    assert missing == [], "cbl_status functions whose comment lists no errors"


def test_only_the_documented_functions_return_values_directly():
    for ret, name, comment in declarations():
        if ret == "cbl_status":
            continue
        if ret == "void":
            assert name in VOID_NOT_RELEASE or re.search(
                r"_(release|remove|stop|close|cancel)$", name), name
            continue
        if name in DIRECT_RETURN:
            continue
        m = re.search(r"Deprecated: use (cbl_[a-z0-9_]+)", comment)
        assert m, f"{name} returns {ret} but is neither infallible nor deprecated"
        assert m.group(1) == name + "_v2", name


def test_deprecated_functions_name_a_declared_replacement():
    names = {n for _, n, _ in declarations()}
    deprecated = {}
    for _, name, comment in declarations():
        m = re.search(r"Deprecated: use (cbl_[a-z0-9_]+)", comment)
        if m:
            deprecated[name] = m.group(1)
    renamed = {"cbl_revs_diff": "cbl_collection_revs_diff",
               "cbl_docs_put_existing": "cbl_collection_docs_put_existing",
               "cbl_docs_save": "cbl_collection_docs_save",
               "cbl_docs_bulk_get": "cbl_collection_docs_bulk_get",
               "cbl_changes_wait": "cbl_collection_changes_wait",
               "cbl_emit": "cbl_emitter_emit",
               "cbl_listener_remove": "cbl_listener_token_remove"}
    assert deprecated == {"cbl_db_exists": "cbl_db_exists_v2",
                          "cbl_db_is_encrypted": "cbl_db_is_encrypted_v2", **renamed}
    for old, new in deprecated.items():
        assert new in names and new in _lib.FUNCTIONS and old in _lib.FUNCTIONS
        # the replacement fails through a status; a renamed call keeps its old result type
        assert _lib.FUNCTIONS[new][0] is (_lib.FUNCTIONS[old][0] if old in renamed else _lib.c_int32)


def test_every_handle_type_is_in_the_release_table():
    names = {n for _, n, _ in declarations()}
    rows = handle_table()
    assert set(rows) == handle_types()
    for handle, row in rows.items():
        releasers = [f for f in re.findall(r"cbl_[a-z0-9_]+", row) if f != handle and re.search(
            r"_(release|remove|stop|close|cancel|finish|delete)$", f)]
        if handle == "cbl_emitter":
            assert releasers == [] and "valid during it" in row
            continue
        assert releasers, handle
        for f in releasers:
            assert f in names, f


def test_release_calls_ignore_null_and_foreign_handles(db):
    junk = ctypes.create_string_buffer(64)
    for name in ("cbl_collection_release", "cbl_listener_token_remove", "cbl_listener_remove", "cbl_blob_writer_cancel",
                 "cbl_blob_reader_close", "cbl_view_release", "cbl_query_result_release",
                 "cbl_live_query_stop", "cbl_replicator_stop"):
        fn = getattr(_lib.lib, name)
        fn(None)
        fn(ctypes.addressof(junk))
        fn(db._h)                         # a handle of another type stays valid
    _lib.lib.cbl_server_stop(None, 0)
    _lib.lib.cbl_server_stop(db._h, 0)
    assert db.count == 0
    assert junk.raw == b"\0" * 64         # not written to


# -- cbl_db_exists_v2 ------------------------------------------------------------------

def exists_v2(name, directory):
    flag = ctypes.c_int(77)
    err = _lib.cbl_error()
    status = _lib.lib.cbl_db_exists_v2(name, directory, ctypes.byref(flag), ctypes.byref(err))
    return status, flag.value, err


def test_exists_v2(dbdir, tmp_path):
    d = dbdir.encode()
    assert exists_v2(b"here", d)[:2] == (0, 0)
    with cblite.Database("here", dbdir):
        pass
    status, flag, err = exists_v2(b"here", d)
    assert (status, flag, err.code, err.message) == (0, 1, 0, b"")
    missing = str(tmp_path / "no" / "such" / "dir")
    assert exists_v2(b"here", missing.encode())[:2] == (0, 0)
    assert not os.path.exists(missing)                 # nothing created


@pytest.mark.parametrize("name", [None, b"Bad", b"1abc", b"", b"a b", "caf\u00e9".encode(),
                                  b"_x", b"ab\xff", b"x" * 240])
def test_exists_v2_rejects_invalid_names(dbdir, name):
    status, flag, err = exists_v2(name, dbdir.encode())
    assert (status, flag, err.code) == (400, 0, 400) and err.message
    assert _lib.lib.cbl_db_exists(name, dbdir.encode()) == 0     # the old form: 0


def test_exists_v2_null_out_parameter(dbdir):
    err = _lib.cbl_error()
    assert _lib.lib.cbl_db_exists_v2(b"here", dbdir.encode(), None, ctypes.byref(err)) == 400
    assert _lib.lib.cbl_db_exists_v2(b"here", dbdir.encode(), None, None) == 400


def test_exists_v2_without_a_default_directory(dbdir):
    # In a child process: the environment of this one stays as it is.
    from helpers import run_isolated
    code = """
        import ctypes, os
        for k in ("CBLITE_DIR", "XDG_DATA_HOME", "HOME"):
            os.environ.pop(k, None)
        import cblite
        from cblite import _lib
        flag, err = ctypes.c_int(77), _lib.cbl_error()
        st = _lib.lib.cbl_db_exists_v2(b"here", None, ctypes.byref(flag), ctypes.byref(err))
        assert (st, flag.value) == (400, 0), (st, flag.value)
        assert _lib.lib.cbl_db_exists(b"here", None) == 0
        assert cblite.Database.exists("here") is False
        try:
            cblite.Database.exists("here", strict=True)
        except cblite.BadRequest:
            print("ok")
    """
    r = run_isolated(code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_database_exists_strict(dbdir, tmp_path):
    assert cblite.Database.exists("here", dbdir) is False
    assert cblite.Database.exists("here", dbdir, strict=True) is False
    with cblite.Database("here", dbdir):
        pass
    assert cblite.Database.exists("here", dbdir) is True
    assert cblite.Database.exists("here", dbdir, strict=True) is True
    assert cblite.Database.exists("here", str(tmp_path / "missing"), strict=True) is False
    # an invalid name: False as always, BadRequest when strict
    assert cblite.Database.exists("Bad", dbdir) is False
    with pytest.raises(cblite.BadRequest):
        cblite.Database.exists("Bad", dbdir, strict=True)


# -- cbl_db_is_encrypted_v2 ------------------------------------------------------------

def is_encrypted_v2(handle):
    flag = ctypes.c_int(77)
    err = _lib.cbl_error()
    status = _lib.lib.cbl_db_is_encrypted_v2(handle, ctypes.byref(flag), ctypes.byref(err))
    return status, flag.value, err


def test_is_encrypted_v2(dbdir):
    with cblite.Database("plain", dbdir) as plain, \
            cblite.Database("secret", dbdir, encryption_key="pw") as secret:
        assert is_encrypted_v2(plain._h)[:2] == (0, 0)
        assert is_encrypted_v2(secret._h)[:2] == (0, 1)
        assert plain.is_encrypted is False and secret.is_encrypted is True
        err = _lib.cbl_error()
        assert _lib.lib.cbl_db_is_encrypted_v2(secret._h, None, ctypes.byref(err)) == 400
        coll = plain.default_collection
        status, flag, err = is_encrypted_v2(coll._h)             # a handle of another type
        assert (status, flag) == (400, 0) and b"not a cbl_db" in err.message
        handle = secret._h
    status, flag, err = is_encrypted_v2(handle)                  # closed: 400, old form 0
    assert (status, flag, err.code) == (400, 0, 400)
    assert _lib.lib.cbl_db_is_encrypted(handle) == 0
    assert is_encrypted_v2(None)[:2] == (400, 0)
    with pytest.raises(cblite.BadRequest):
        plain.is_encrypted
