"""Python's own sqlite3 module and libcblite in one process (the library's SQLCipher is
compiled into libcblite.so with hidden symbols and only cbl_* is exported, so neither
SQLite can take over the other)."""

import json
import re
import sqlite3

import cblite
from cblite import _lib
from helpers import run_isolated

SCRIPT_SQLITE_FIRST = r"""
import json, os, sqlite3, sys
tmp = sys.argv[1] if len(sys.argv) > 1 else {tmp!r}
con = sqlite3.connect(os.path.join(tmp, "std.db"))
con.execute("create table t (x integer, s text)")
con.execute("insert into t values (1, 'before')")
con.commit()
before_version = sqlite3.sqlite_version
before_sql_version = con.execute("select sqlite_version()").fetchone()[0]

import cblite                                  # loads libcblite.so now
with cblite.Database("mixed", tmp) as db:
    db.put({{"a": 1}}, "doc")
    con.execute("insert into t values (2, 'during')")
    con.commit()
    assert db["doc"]["a"] == 1
    versions = cblite.storage_versions()

con.execute("insert into t values (3, 'after')")
con.commit()
con2 = sqlite3.connect(os.path.join(tmp, "std2.db"))
con2.execute("create table u (y)")
con2.execute("insert into u values (42)")
con2.commit()
rows = con.execute("select x, s from t order by x").fetchall()
print(json.dumps({{
    "rows": rows,
    "u": con2.execute("select y from u").fetchall(),
    "before": before_version, "after": sqlite3.sqlite_version,
    "sql_before": before_sql_version,
    "sql_after": con.execute("select sqlite_version()").fetchone()[0],
    "cblite": versions,
    "json1": con.execute("select json_extract('{{\"k\": 5}}', '$.k')").fetchone()[0],
}}))
"""

SCRIPT_CBLITE_FIRST = r"""
import json, os, sys
tmp = {tmp!r}
import cblite
db = cblite.Database("first", tmp)
db.put({{"a": 1}}, "doc")
import sqlite3
con = sqlite3.connect(os.path.join(tmp, "std.db"))
con.execute("create table t (x)")
con.execute("insert into t values (7)")
con.commit()
db.put({{"a": 2}}, "doc2")
# cblite's database file must not be readable as plain SQLite by the stdlib module only
# if it is encrypted; it is not here: the stdlib can at least open other files.
print(json.dumps({{"rows": con.execute("select x from t").fetchall(),
                   "version": sqlite3.sqlite_version,
                   "sql": con.execute("select sqlite_version()").fetchone()[0],
                   "count": db.count}}))
db.close()
"""


def test_stdlib_sqlite3_before_and_after_loading(tmp_path):
    r = run_isolated(SCRIPT_SQLITE_FIRST.format(tmp=str(tmp_path)))
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["rows"] == [[1, "before"], [2, "during"], [3, "after"]]
    assert out["u"] == [[42]]
    assert out["before"] == out["after"] == out["sql_before"] == out["sql_after"]
    assert out["json1"] == 5
    # libcblite's own SQLite (SQLCipher's), which may differ from the stdlib's version
    assert re.fullmatch(r"3\.\d+\.\d+", out["cblite"]["sqlite"]), out["cblite"]
    assert out["cblite"]["sqlcipher"], out["cblite"]


def test_cblite_loaded_first(tmp_path):
    r = run_isolated(SCRIPT_CBLITE_FIRST.format(tmp=str(tmp_path)))
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["rows"] == [[7]]
    assert out["version"] == out["sql"]
    assert out["count"] == 2


def test_in_this_process(tmp_path, dbdir):
    """Both in the test process itself (cblite already loaded)."""
    con = sqlite3.connect(str(tmp_path / "here.db"))
    con.execute("create table t (x)")
    with cblite.Database("here", dbdir) as db:
        db.put({"a": 1}, "x")
        con.execute("insert into t values (1)")
        con.commit()
    assert con.execute("select count(*) from t").fetchone()[0] == 1
    assert con.execute("select sqlite_version()").fetchone()[0] == sqlite3.sqlite_version
    con.close()


def test_library_exports_no_sqlite_symbols():
    """libcblite exports cbl_* only (its linker version script): no sqlite3_* symbol can
    interpose."""
    for sym in ("sqlite3_open", "sqlite3_open_v2", "sqlite3_libversion", "sqlite3_exec",
                "sqlite3_key", "sqlite3_prepare_v2"):
        assert not hasattr(_lib.lib, sym), f"libcblite exports {sym}"
