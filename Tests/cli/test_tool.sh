#!/usr/bin/env bash
# The `cblite` tool's inspection commands, driven from the outside on the real binary:
# opening (bundle paths, keys, read-only), diagnosis (damaged vs encrypted, empty files),
# export/import round trip, salvage, and the progress bar under a pseudo-terminal.
# Usage: Tests/cli/test_tool.sh path/to/cblite
set -euo pipefail

CBLITE=${1:?usage: $0 path/to/cblite}
CBLITE=$(cd "$(dirname "$CBLITE")" && pwd)/$(basename "$CBLITE")
PYTHON=${PYTHON:-python3}
BINDINGS=$(cd "$(dirname "$0")/../../bindings/python" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cblite-cli-tool.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
unset CBLITE_DIR CBLITE_DB_PASSWORD CBLITE_DB_KEY CBLITE_DB_NEW_PASSWORD CBLITE_DB_NEW_KEY
cd "$tmp"

failures=0
pass() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; show; fi; }
run() { rc=0; "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?; }
show() { echo "--- exit ${rc:-}; stdout:"; cat "$tmp/out" 2>/dev/null; echo "--- stderr:"; cat "$tmp/err" 2>/dev/null; echo "---"; }
expect_rc() { if [ "$rc" = "$1" ]; then pass "$2 (exit $rc)"; else fail "$2: exit $rc, expected $1"; show; fi; }
json() { "$PYTHON" -c "import json,sys; d=json.load(open('$tmp/out')); print($1)"; }

# ---- basics: --version, usage errors are 64 and documented --------------------------------
run "$CBLITE" --version
expect_rc 0 "--version"
check "--version names the version" grep -q "^cblite [0-9]" "$tmp/out"
run "$CBLITE" no-such-command
expect_rc 64 "unknown command"
check "an unknown command is named" grep -q "unknown command 'no-such-command'" "$tmp/err"
check "an unknown command shows the usage" grep -q "^Usage: cblite" "$tmp/err"
run "$CBLITE" no-such-command --help
expect_rc 64 "unknown command with --help"
check "an unknown command with --help is named, not helped" \
    bash -c "grep -q \"unknown command 'no-such-command'\" '$tmp/err' && ! grep -q 'SUBCOMMANDS' '$tmp/out'"
run "$CBLITE" help get
expect_rc 0 "help COMMAND"
check "help COMMAND shows the command's help" grep -q "Print a document" "$tmp/out"
run "$CBLITE" get --help
expect_rc 0 "COMMAND --help"
check "COMMAND --help shows the command's help" grep -q "Print a document" "$tmp/out"
run "$CBLITE" ls --limit
expect_rc 64 "a command's usage error"
run "$CBLITE" --help
check "--help documents exit code 64" grep -q "64 usage" "$tmp/out"
check "--help documents exit code 8" grep -q "8 not a database" "$tmp/out"

# ---- a database by bundle path, by name + --dir -----------------------------------------
for i in $(seq 1 30); do
    "$CBLITE" put --dir "$tmp" --create people "p$i" "{\"n\":$i,\"pad\":\"$(printf 'x%.0s' $(seq 1 300))\"}" >/dev/null
done
run "$CBLITE" ls people.cblite2 --limit 2
expect_rc 0 "ls by bundle path"
check "ls by bundle path lists documents" [ "$(tr '\n' ' ' <"$tmp/out")" = "p1 p10 " ]
run "$CBLITE" ls "$tmp/people.cblite2/" --json --limit 1
check "ls --json by absolute bundle path with a slash" [ "$(json 'd[0]["id"]')" = p1 ]
run "$CBLITE" ls people.cblite2 --dir "$tmp"
expect_rc 64 "a bundle path and --dir together"
run "$CBLITE" ls nosuch.cblite2
expect_rc 2 "a missing bundle"

# ---- revision trees: revs draws the tree, cat prints documents ---------------------------
rev1=$("$CBLITE" get --dir "$tmp" --json people p1 | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["_rev"])')
"$CBLITE" put people.cblite2 p1 --rev "$rev1" '{"n":1,"v":2}' >/dev/null
run "$CBLITE" revs people.cblite2 p1
expect_rc 0 "revs"
check "revs draws the parent above its child" grep -q "^└── 1-" "$tmp/out"
check "revs draws the child indented, current" grep -q "^    └── \* 2-.*current" "$tmp/out"
run "$CBLITE" revs people.cblite2 p1 --json
check "revs --json is the tree" [ "$(json 'len(d["revisions"])')" = 2 ]
run "$CBLITE" cat people.cblite2 p1 p2 --json
check "cat prints each document" [ "$(wc -l <"$tmp/out")" = 2 ]

# ---- local and design documents by their CouchDB names -------------------------------------
run "$CBLITE" put --dir "$tmp" --create ids _local/cfg '{"mode":"a"}' --json
expect_rc 0 "put _local/ID"
check "put _local/ID answers the local revision" [ "$(json 'd["id"] + " " + d["rev"]')" = "_local/cfg 0-1" ]
run "$CBLITE" get ids.cblite2 _local/cfg --json
expect_rc 0 "get _local/ID"
check "get _local/ID shows the local document" [ "$(json 'd["_id"] + " " + d["_rev"] + " " + d["mode"]')" = "_local/cfg 0-1 a" ]
run "$CBLITE" put ids.cblite2 _local/cfg '{"mode":"b"}'
expect_rc 3 "put _local/ID again without --rev"
run "$CBLITE" put ids.cblite2 _local/cfg --rev 0-1 '{"mode":"b"}'
check "put _local/ID --rev updates it" [ "$(cat "$tmp/out")" = "0-2" ]
run "$CBLITE" put ids.cblite2 _local/cfg --update '{"mode":"c"}'
check "put _local/ID --update replaces the current one" [ "$(cat "$tmp/out")" = "0-3" ]
run "$CBLITE" get ids.cblite2 _local/cfg --revs
expect_rc 64 "get _local/ID --revs is a usage error"
run "$CBLITE" ls ids.cblite2 --start _ --end _~
check "local documents are not listed" [ ! -s "$tmp/out" ]
run "$CBLITE" rm ids.cblite2 _local/cfg
expect_rc 0 "rm _local/ID"
run "$CBLITE" get ids.cblite2 _local/cfg
expect_rc 2 "a removed local document is gone"
run "$CBLITE" put ids.cblite2 _design/app '{"views":{"v":{"map":"function(doc){}"}}}'
expect_rc 0 "put _design/NAME"
run "$CBLITE" get ids.cblite2 _design/app --json
check "get _design/NAME" [ "$(json 'd["views"]["v"]["map"]')" = "function(doc){}" ]
run "$CBLITE" ls ids.cblite2 --start _ --end _~
check "design documents are listed" [ "$(cat "$tmp/out")" = "_design/app" ]
run "$CBLITE" put ids.cblite2 _other '{}'
expect_rc 4 "other IDs starting with '_' are refused"

# ---- collections: mkcoll, lscoll, --collection scope.name ----------------------------------
run "$CBLITE" mkcoll people.cblite2 app.items
expect_rc 0 "mkcoll app.items"
"$CBLITE" put people.cblite2 --collection app.items i1 '{"k":"v"}' >/dev/null
run "$CBLITE" lscoll people.cblite2 --json
check "lscoll lists app.items with its count" [ "$(json '[c["documents"] for c in d if c["scope"]=="app" and c["name"]=="items"][0]')" = 1 ]
run "$CBLITE" ls people.cblite2 --collection app.nope
expect_rc 2 "a missing collection"

# ---- query: all documents with options ---------------------------------------------------
run "$CBLITE" query people.cblite2 --start-key '"p2"' --limit 3 --json
expect_rc 0 "query all-docs"
check "query all-docs honours start key and limit" [ "$(json '",".join(r["id"] for r in d["rows"])')" = "p2,p20,p21" ]
run "$CBLITE" query people.cblite2 --options '{"descending":true,"limit":1}' --json
check "query --options" [ "$(json 'd["rows"][0]["id"]')" = p9 ]
run "$CBLITE" query people.cblite2 --options '{"nope":1}'
expect_rc 4 "query with an unknown option"
run "$CBLITE" query people.cblite2 byName
expect_rc 2 "query a view without an index"
# A design document's JavaScript view and filter: the tool runs them (DDOC/NAME).
for i in 1 2 3 4; do "$CBLITE" put --dir "$tmp" --create js "d$i" "{\"n\":$i,\"odd\":$((i % 2))}" >/dev/null; done
"$CBLITE" put js.cblite2 _design/app '{"views":{"byOdd":{"map":"function (doc) { emit(doc.odd, doc.n); }","reduce":"_sum"}},"filters":{"odd":"function (doc, req) { return doc.odd == Number(req.query.odd); }"}}' >/dev/null
run "$CBLITE" query js.cblite2 app/byOdd --options '{"group":true}' --json
expect_rc 0 "query a design document's view"
check "its rows, reduced per key" [ "$(json '[[r["key"], r["value"]] for r in d["rows"]]')" = "[[0, 6], [1, 4]]" ]
run "$CBLITE" changes js.cblite2 --filter app/odd --param odd=1
check "changes --filter DDOC/NAME with --param" [ "$(cut -f2 "$tmp/out" | paste -sd,)" = "d1,d3" ]
run "$CBLITE" changes js.cblite2 --filter _design
check "changes --filter _design" [ "$(cut -f2 "$tmp/out")" = "_design/app" ]
run "$CBLITE" changes js.cblite2 --filter app/none
expect_rc 2 "changes with a filter the design document lacks"
# A view's index, built by a program (the Python bindings over libcblite.so), read by name.
if [ -n "${CBLITE_LIBRARY:-}" ]; then
    PYTHONPATH="$BINDINGS" "$PYTHON" - "$tmp" <<'PY'
import sys, cblite
with cblite.Database("people", sys.argv[1], create=False) as db:
    v = db.default_collection.view("byN")
    v.set_map_reduce(lambda doc, emit: emit(doc["n"], doc["_id"]) if "n" in doc else None, "_count")
    list(v.query(reduce=False))
PY
    run "$CBLITE" query people.cblite2 byN --start-key 3 --end-key 5 --json
    expect_rc 0 "query a view by name"
    check "the view's rows by key" [ "$(json '[r["key"] for r in d["rows"]]')" = "[3, 4, 5]" ]
    run "$CBLITE" query people.cblite2 byN --descending --limit 1 --json
    check "the view's rows, descending, with their values" [ "$(json 'd["rows"][0]["value"] + " " + str(d["total_rows"])')" = "p30 30" ]
else
    echo "# CBLITE_LIBRARY not set: the view query through a program's index is skipped"
fi

# ---- attachments --------------------------------------------------------------------------
printf 'hello attachment' >"$tmp/a.txt"
run "$CBLITE" att put people.cblite2 p3 greeting "$tmp/a.txt" --type text/plain
expect_rc 0 "att put"
run "$CBLITE" att ls people.cblite2 p3 --json
check "att ls shows it" [ "$(json 'd[0]["name"] + " " + str(d[0]["length"])')" = "greeting 16" ]
run "$CBLITE" att get people.cblite2 p3 greeting
check "att get writes the content" [ "$(cat "$tmp/out")" = "hello attachment" ]

# ---- edit: $EDITOR, saves on the revision edited, reports a conflict -------------------------
cat >"$tmp/editor.sh" <<'SH'
#!/bin/sh
sed -i 's/"n": 4/"n": 44/' "$1"
SH
chmod +x "$tmp/editor.sh"
run env EDITOR="$tmp/editor.sh" "$CBLITE" edit people.cblite2 p4
expect_rc 0 "edit"
check "edit saved the change" [ "$("$CBLITE" get people.cblite2 p4 --json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["n"])')" = 44 ]
cat >"$tmp/racing-editor.sh" <<SH
#!/bin/sh
"$CBLITE" put "$tmp/people.cblite2" p5 --update '{"n":"someone else"}' >/dev/null
sed -i 's/"n": 5/"n": 55/' "\$1"
SH
chmod +x "$tmp/racing-editor.sh"
run env EDITOR="$tmp/racing-editor.sh" "$CBLITE" edit people.cblite2 p5
expect_rc 3 "edit after someone else saved: conflict"
check "the conflict message keeps the edited copy" grep -q "your copy is in" "$tmp/err"
check "the other save was not overwritten" [ "$("$CBLITE" get people.cblite2 p5 --json | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["n"])')" = "someone else" ]

# ---- export / import: exact round trip, summary, plain progress lines ----------------------
run "$CBLITE" export people.cblite2 -o "$tmp/people.jsonl"
expect_rc 0 "export"
check "export summary" grep -q "exported 30 documents (30 revisions)" "$tmp/out"
check "export progress is plain lines off a terminal" grep -q "^export: 30/30 documents$" "$tmp/err"
check "no bar off a terminal" bash -c "! grep -q '\[#' '$tmp/err'"
run "$CBLITE" import --dir "$tmp" --create copy "$tmp/people.jsonl"
expect_rc 0 "import"
check "import summary" grep -q "imported 30 revisions of 30 documents from 30 lines; 0 failed" "$tmp/out"
"$CBLITE" export copy.cblite2 -o "$tmp/copy.jsonl" >/dev/null 2>&1
check "export of the import is byte-identical (revisions, history, attachments)" cmp -s "$tmp/people.jsonl" "$tmp/copy.jsonl"
printf '{"_id":"bad","_rev":"zzz"}\nnot json\n' >"$tmp/bad.jsonl"
run "$CBLITE" import copy.cblite2 "$tmp/bad.jsonl" --json
expect_rc 1 "import with bad lines"
check "import --json counts the failures" [ "$(json 'd["failed"]')" = 2 ]

# ---- cp: every collection into another database ------------------------------------------------
run "$CBLITE" cp people.cblite2 "$tmp/other.cblite2"
expect_rc 0 "cp"
check "cp copied the named collection too" [ "$("$CBLITE" ls other.cblite2 --collection app.items)" = i1 ]
"$CBLITE" export other.cblite2 -o "$tmp/other.jsonl" >/dev/null 2>&1
check "cp is exact" cmp -s "$tmp/people.jsonl" "$tmp/other.jsonl"

# ---- check, reindex, --busy-timeout --------------------------------------------------------------
run "$CBLITE" check people.cblite2 --json
expect_rc 0 "check on a sound database"
check "check --json says ok" [ "$(json 'd["ok"]')" = True ]
run "$CBLITE" reindex people.cblite2 --busy-timeout 2000
expect_rc 0 "reindex"
check "reindex reports its start and duration off a terminal" bash -c "grep -q '^reindex: started$' '$tmp/err' && grep -q '^reindex: done in [0-9.]* s$' '$tmp/err'"
run "$CBLITE" compact people.cblite2 --json
expect_rc 0 "compact --json"
check "compact --json prints JSON only" [ "$(json 'd["compacted"]')" = True ]
check "compact --json writes no progress" [ ! -s "$tmp/err" ]
run "$CBLITE" ls people.cblite2 --busy-timeout -1
expect_rc 64 "a negative busy timeout"

# ---- encryption: keys from the environment, never echoed; encrypt / rekey / decrypt ----------
cp -r people.cblite2 secret.cblite2
run env CBLITE_DB_NEW_PASSWORD=first-pw "$CBLITE" encrypt secret.cblite2 --new-password
expect_rc 0 "encrypt"
check "the password is not printed" bash -c "! grep -q first-pw '$tmp/out' '$tmp/err'"
run "$CBLITE" ls secret.cblite2 </dev/null
expect_rc 6 "an encrypted database without a key"
check "the message says encrypted" grep -q "encrypted: an encryption key is required" "$tmp/err"
run env CBLITE_DB_PASSWORD=wrong "$CBLITE" ls secret.cblite2 --password
expect_rc 6 "a wrong password"
run env CBLITE_DB_PASSWORD=first-pw CBLITE_DB_NEW_KEY=$(printf 'ab%.0s' $(seq 1 32)) "$CBLITE" rekey secret.cblite2 --password --new-key
expect_rc 0 "rekey to a raw key"
run env CBLITE_DB_KEY=$(printf 'ab%.0s' $(seq 1 32)) "$CBLITE" decrypt secret.cblite2 --key
expect_rc 0 "decrypt"
check "decrypted database reads without a key" [ "$("$CBLITE" ls secret.cblite2 --limit 1)" = p1 ]
run "$CBLITE" ls secret.cblite2 --password </dev/null
expect_rc 64 "--password without a password or terminal"

# ---- diagnosis: damaged header vs encrypted; empty and missing files ----------------------------
cp -r people.cblite2 garbled.cblite2
printf 'this is not the header of anything' | dd of=garbled.cblite2/db.sqlite3 conv=notrunc 2>/dev/null
run "$CBLITE" ls garbled.cblite2
expect_rc 8 "a garbled header"
check "a garbled header is 'not a database or damaged', not 'encrypted'" grep -q "not a database, or the database file is damaged" "$tmp/err"
check "no SQL in the message" bash -c "! grep -qi 'select\|sqlite_master' '$tmp/err'"
mkdir empty.cblite2 && : >empty.cblite2/db.sqlite3
run "$CBLITE" put empty.cblite2 x '{}' --create
expect_rc 8 "an empty database file is an error, even with --create"
check "the empty file is still empty (no silent reset)" [ ! -s empty.cblite2/db.sqlite3 ]
cp -r people.cblite2 lost.cblite2 && rm lost.cblite2/db.sqlite3
run "$CBLITE" put lost.cblite2 x '{}' --create
expect_rc 8 "a bundle without its database file"
check "the missing file was not recreated" [ ! -e lost.cblite2/db.sqlite3 ]

# ---- read-only: nothing changes on disk; writes are refused --------------------------------------
cp -r people.cblite2 ro.cblite2
before=$(cd ro.cblite2 && find . -type f -exec sha256sum {} + | sort)
run "$CBLITE" ls ro.cblite2 --read-only --limit 1
expect_rc 0 "ls --read-only"
run "$CBLITE" put ro.cblite2 --read-only z '{}'
expect_rc 7 "a write through --read-only is forbidden"
run "$CBLITE" ls nosuch.cblite2 --read-only
expect_rc 2 "--read-only never creates"
check "the database file is unchanged by read-only use" [ "$(cd ro.cblite2 && find . -name db.sqlite3 -exec sha256sum {} + | sort)" = "$(echo "$before" | grep 'db.sqlite3$')" ]

# A read-only directory (a read-only bind mount, where the system allows one): SQLite cannot
# make its -shm file there, and --read-only still opens the database.
mkdir -p "$tmp/rodir" && cp -r people.cblite2 "$tmp/rodir/"
if unshare -m --propagation private true 2>/dev/null; then
    run unshare -m --propagation private bash -c "mount --bind -o ro '$tmp/rodir' '$tmp/rodir' && '$CBLITE' ls '$tmp/rodir/people.cblite2' --limit 2"
    check "without --read-only a read-only directory fails, saying to use it" grep -q "add --read-only" "$tmp/err"
    run unshare -m --propagation private bash -c "mount --bind -o ro '$tmp/rodir' '$tmp/rodir' && '$CBLITE' ls '$tmp/rodir/people.cblite2' --limit 2 --read-only"
    expect_rc 0 "--read-only opens a database in a read-only directory"
    check "and lists its documents" [ "$(tr '\n' ' ' <"$tmp/out")" = "p1 p10 " ]
else
    echo "# no mount namespace here: the read-only directory case is skipped"
fi

# ---- salvage: a damaged page; what is readable is exported, what is lost is listed -------------
cp -r people.cblite2 damaged.cblite2
"$PYTHON" - "$tmp/damaged.cblite2/db.sqlite3" <<'PY'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
page = 4096
at = data.find(b'"n":17,')          # a table page holding document p17
assert at > 0, "marker not found"
start = at - at % page
data[start:start + page] = bytes([0xA5]) * page
open(path, "wb").write(data)
PY
run "$CBLITE" export damaged.cblite2 -o "$tmp/damaged.jsonl"
check "a plain export of a damaged database fails" [ "$rc" != 0 ]
run "$CBLITE" check damaged.cblite2
expect_rc 8 "check finds the damage"
run "$CBLITE" export damaged.cblite2 --salvage --read-only -o "$tmp/salvaged.jsonl" --json
expect_rc 8 "export --salvage (something was lost)"
saved=$(wc -l <"$tmp/salvaged.jsonl")
lost=$(json 'len(d["lost"])')
check "salvage wrote most documents ($saved) and listed the lost ones ($lost)" [ "$saved" -ge 20 -a "$lost" -ge 1 ]
check "p17 is among the lost" [ "$(json '"p17" in [l.get("id") for l in d["lost"]]')" = True ]
check "salvaged + lost = every document" [ $((saved + lost)) = 30 ]
run "$CBLITE" import --dir "$tmp" --create rescued "$tmp/salvaged.jsonl"
expect_rc 0 "the salvaged lines import"

# ---- the progress bar under a pseudo-terminal ------------------------------------------------------
check "export draws a bar on a terminal" "$PYTHON" - "$CBLITE" "$tmp" <<'PY'
import os, pty, sys
cblite, tmp = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(cblite, [cblite, "export", tmp + "/people.cblite2", "-o", tmp + "/tty.jsonl"])
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
text = out.decode()
assert os.waitstatus_to_exitcode(status) == 0, text
assert "\r" in text and "[##############################] 100% 30/30 documents" in text, repr(text)
assert "export: 30/30" not in text, repr(text)      # no plain lines on a terminal
PY

# ---- the interactive shell: commands from a pipe; history and recall on a terminal ----------------
run bash -c "printf 'ls --limit 2\nget p1 --json\nno-such-command\nquit\nls\n' | '$CBLITE' shell people.cblite2"
expect_rc 0 "shell from a pipe"
check "shell ran ls and get" bash -c "head -n 2 '$tmp/out' | tr '\n' ' ' | grep -qx 'p1 p10 ' && grep -q '\"_id\":\"p1\"' '$tmp/out'"
check "shell reported the bad command and went on" grep -q "no-such-command" "$tmp/err"
check "shell stopped at quit" [ "$(grep -c '^p' "$tmp/out")" = 2 ]
printf 'ls --limit 1\n' >"$tmp/history"
check "shell recalls the previous session's line with the up arrow and saves the history" "$PYTHON" - "$CBLITE" "$tmp/people.cblite2" "$tmp/history" <<'PY'
import os, pty, sys, time
cblite, bundle, hist = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.environ["CBLITE_HISTORY"] = hist
    os.environ["TERM"] = "xterm"
    os.execv(cblite, [cblite, "shell", bundle])
out = b""
def read_until(token, timeout=10):
    global out
    end = time.time() + timeout
    while token not in out and time.time() < end:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return token in out
assert read_until(b"people> "), out
os.write(fd, b"\x1b[A\r")                      # up arrow, enter: "ls --limit 1" again
assert read_until(b"p1\r\n"), out
os.write(fd, b"get p2 --json\r")
assert read_until(b'"_id":"p2"'), out
os.write(fd, b"quit\r")
read_until(b"\x00", timeout=3)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, out
lines = open(hist).read().splitlines()
assert lines == ["ls --limit 1", "get p2 --json", "quit"], lines
PY

# ---- a write by the tool reaches another program's listener, marked external --------------------
if [ -n "${CBLITE_LIBRARY:-}" ]; then
    PYTHONPATH="$BINDINGS" "$PYTHON" - "$tmp" >"$tmp/listener.out" 2>&1 <<'PY' &
import sys, threading, time, cblite
seen = threading.Event()
found = []
def on_change(changes):
    for c in changes:
        if c.doc_id == "from-the-tool":
            found.append(c)
            seen.set()
with cblite.Database("people", sys.argv[1], create=False) as db:
    token = db.add_change_listener(on_change)
    print("ready", flush=True)
    started = time.monotonic()
    ok = seen.wait(10)
    token.remove()
    print("seen" if ok and found[0].external else "missing", round(time.monotonic() - started, 2), flush=True)
PY
    listener_pid=$!
    for _ in $(seq 1 100); do grep -q ready "$tmp/listener.out" && break; sleep 0.1; done
    "$CBLITE" put people.cblite2 from-the-tool '{"by":"cblite"}' >/dev/null
    wait "$listener_pid" || true
    check "the tool's write reached a listener in another process, marked external" grep -q "^seen" "$tmp/listener.out"
fi

# ---- serve --json: the URL as JSON ---------------------------------------------------------------
"$CBLITE" serve --dir "$tmp" --port 0 --json >"$tmp/serve.json" 2>&1 &
serve_pid=$!
for _ in $(seq 1 100); do [ -s "$tmp/serve.json" ] && break; sleep 0.1; done
check "serve --json prints its URL as JSON" "$PYTHON" -c "import json,sys; assert json.loads(open(sys.argv[1]).readline())['url'].startswith('http://')" "$tmp/serve.json"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
check "serve --json says it stopped" grep -q '{"stopped":true}' "$tmp/serve.json"

# ---- full-text search: text-index create / ls / rm, search with --limit, --json, --selector -------
"$CBLITE" put --dir "$tmp" --create fts a '{"title":"Coffee","body":"coffee beans and more coffee","year":2020}' >/dev/null
"$CBLITE" put --dir "$tmp" fts b '{"title":"Breakfast","body":"toast with coffee and milk","year":2021}' >/dev/null
"$CBLITE" put --dir "$tmp" fts c '{"title":"Café","body":"a café in Paris","year":2022}' >/dev/null
run "$CBLITE" text-index create fts.cblite2 notes title,body --stemming
expect_rc 0 "text-index create"
check "text-index create says created and names the design document" grep -q "^created	_design/notes	notes$" "$tmp/out"
run "$CBLITE" text-index ls fts.cblite2
check "text-index ls lists fields and options" grep -q "^_design/notes	notes	title,body	stemming$" "$tmp/out"
run "$CBLITE" search fts.cblite2 'coffee'
expect_rc 0 "search"
check "search prints hits best first with their snippets" bash -c "cut -f2 '$tmp/out' | tr '\n' ' ' | grep -qx 'a b ' && grep -q 'body: <b>coffee</b> beans' '$tmp/out'"
check "search prints the next page's bookmark on stderr" grep -q "^bookmark: " "$tmp/err"
run "$CBLITE" search fts.cblite2 'coffee' --limit 1 --json
check "search --limit --json" [ "$(json '[h["id"] for h in d["hits"]]')" = "['a']" ]
run "$CBLITE" search fts.cblite2 'coffee OR cafe' --selector '{"year":{"$gte":2021}}' --json
check "search --selector combines the text match and the selector" [ "$(json 'sorted(h["id"] for h in d["hits"])')" = "['b', 'c']" ]
run "$CBLITE" search fts.cblite2 'coffee AND'
expect_rc 4 "a malformed query is a bad request"
check "a malformed query names its position" grep -q "AND needs a term after it at position 7" "$tmp/err"
run "$CBLITE" text-index rm fts.cblite2 notes
expect_rc 0 "text-index rm"
run "$CBLITE" search fts.cblite2 'coffee'
expect_rc 4 "search without a full-text index"

echo "# $failures failure(s)"
[ "$failures" = 0 ]
