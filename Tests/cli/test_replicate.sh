#!/usr/bin/env bash
# `cblite push`, `cblite pull` and `cblite sync` against `cblite serve`, from the outside.
# Usage: Tests/cli/test_replicate.sh path/to/cblite
set -euo pipefail

CBLITE=${1:?usage: $0 path/to/cblite}
CBLITE=$(cd "$(dirname "$CBLITE")" && pwd)/$(basename "$CBLITE")
PYTHON=${PYTHON:-python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cblite-cli-replicate.XXXXXX")
server_pid=""
cont_pid=""
peer_pid=""
tls_pid=""
cleanup() {
    [ -n "$tls_pid" ] && kill "$tls_pid" 2>/dev/null || true
    [ -n "$cont_pid" ] && kill "$cont_pid" 2>/dev/null || true
    [ -n "$peer_pid" ] && kill "$peer_pid" 2>/dev/null || true
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    [ -n "$server_pid" ] && wait "$server_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

srv=$tmp/server     # the served directory
loc=$tmp/local      # the local databases
mkdir -p "$srv" "$loc"
unset CBLITE_PASSWORD CBLITE_DIR

failures=0
pass() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

# Runs a command, storing its exit code in $rc, standard output in $tmp/out and standard
# error in $tmp/err (set -e does not stop on its failure).
run() { rc=0; "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?; }
show() { echo "--- exit $rc; stdout:"; cat "$tmp/out"; echo "--- stderr:"; cat "$tmp/err"; echo "---"; }
expect_rc() {
    local want=$1 what=$2
    if [ "$rc" = "$want" ]; then pass "$what (exit $rc)"; else fail "$what: exit $rc, expected $want"; show; fi
}
# The document's field as JSON, or "missing".
field() { "$CBLITE" get --dir "$loc" --json "$1" "$2" 2>/dev/null | "$PYTHON" -c "import json,sys; print(json.dumps(json.load(sys.stdin).get('$3')))" || echo missing; }

# ---- the server: one user, every request needs credentials ----------------------------
"$CBLITE" put --dir "$srv" --create remote seed '{"from":"server"}' >/dev/null
CBLITE_PASSWORD=s3cret "$CBLITE" serve --dir "$srv" --port 0 --user alice >"$tmp/serve.log" 2>&1 &
server_pid=$!
base=""
for _ in $(seq 1 100); do
    base=$(sed -n 's/^cblite listening on \(http[^ ]*\)$/\1/p' "$tmp/serve.log" | head -n1)
    [ -n "$base" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$base" ]; then echo "cblite serve did not start:"; cat "$tmp/serve.log"; exit 1; fi
base=${base%/}
echo "# server at $base"
host=${base#http://}

# ---- local documents ----------------------------------------------------------------
for i in 1 2 3; do "$CBLITE" put --dir "$loc" --create src "doc$i" "{\"n\":$i}" >/dev/null; done

# ---- push (creates the peer's database), password from the environment ----------------
export CBLITE_PASSWORD=s3cret
run "$CBLITE" push --dir "$loc" src "$base/copy" --user alice --create-target
expect_rc 0 "push"
check "push summary counts 3 documents" grep -q "documents pushed: 3" "$tmp/out"
check "the password is not printed" bash -c "! grep -q s3cret '$tmp/out' '$tmp/err'"

# Again: nothing left to send (the checkpoint).
run "$CBLITE" push --dir "$loc" src "$base/copy" --user alice
expect_rc 0 "second push"
check "second push sends nothing" grep -q "documents pushed: 0" "$tmp/out"

# ---- pull into a new local database (--create-target creates it) ----------------------
unset CBLITE_PASSWORD
run "$CBLITE" pull --dir "$loc" dst "http://alice:s3cret@$host/copy" --create-target
expect_rc 0 "pull with credentials in the URL"
check "pull summary counts 3 documents" grep -q "documents pulled: 3" "$tmp/out"
check "pulled doc2" [ "$(field dst doc2 n)" = 2 ]
check "pulled every document" [ "$("$CBLITE" ls --dir "$loc" dst | tr '\n' ' ')" = "doc1 doc2 doc3 " ]

# A pull into a missing database without --create-target: the local 404 (exit 2).
run "$CBLITE" pull --dir "$loc" nosuchdb "http://alice:s3cret@$host/copy"
expect_rc 2 "pull into a missing local database"

# ---- sync: both ways, /_session cookie authentication --------------------------------
"$CBLITE" put --dir "$loc" dst from-dst '{"side":"dst"}' >/dev/null
"$CBLITE" put --dir "$loc" src from-src '{"side":"src"}' >/dev/null
export CBLITE_PASSWORD=s3cret
run "$CBLITE" push --dir "$loc" src "$base/copy" --user alice --session
expect_rc 0 "push with --session"
check "push with --session sends 1 document" grep -q "documents pushed: 1" "$tmp/out"
run "$CBLITE" sync --dir "$loc" dst "$base/copy" --user alice
expect_rc 0 "sync"
check "sync pushed from-dst" grep -q "documents pushed: 1" "$tmp/out"
check "sync pulled from-src" grep -q "documents pulled: 1" "$tmp/out"
check "from-src arrived in dst" [ "$(field dst from-src side)" = '"src"' ]
run "$CBLITE" pull --dir "$loc" src "$base/copy" --user alice
expect_rc 0 "pull back into src"
check "from-dst arrived in src" [ "$(field src from-dst side)" = '"dst"' ]

# ---- --doc-id, --header, --batch-size ---------------------------------------------------
run "$CBLITE" pull --dir "$loc" only "$base/copy" --user alice --create-target --doc-id doc1 --doc-id doc3 \
    --header 'X-Test: yes' --batch-size 1
expect_rc 0 "pull --doc-id"
check "pull --doc-id fetched only those" [ "$("$CBLITE" ls --dir "$loc" only | tr '\n' ' ')" = "doc1 doc3 " ]

# ---- --collection: a named collection, created by --create-target on a pull ---------------
run "$CBLITE" pull --dir "$loc" dst "$base/copy" --user alice --collection app.items --create-target --doc-id doc2
expect_rc 0 "pull into a new collection"
check "the collection has doc2" [ "$("$CBLITE" ls --dir "$loc" --collection app.items dst | tr '\n' ' ')" = "doc2 " ]
run "$CBLITE" push --dir "$loc" dst "$base/copy" --user alice --collection no.such
expect_rc 2 "push from a missing collection"

# ---- --json: one object per line, a final summary --------------------------------------
"$CBLITE" put --dir "$loc" src json-doc '{"j":1}' >/dev/null
run "$CBLITE" push --dir "$loc" src "$base/copy" --user alice --json
expect_rc 0 "push --json"
check "--json output is JSON lines ending with a summary" "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert lines and all(isinstance(o, dict) for o in lines), lines
assert all(o["type"] in ("status", "document", "summary") for o in lines), lines
s = lines[-1]
assert s["type"] == "summary" and s["documents_pushed"] == 1 and s["document_failures"] == 0, s
assert s["activity"] == "stopped" and s["exit_code"] == 0 and "error" not in s, s
assert any(o["type"] == "status" for o in lines[:-1]), lines
' "$tmp/out"

# ---- documents the peer refuses: exit 1, the first 20 failures in the summary ----------
# A stand-in peer that speaks just enough of the protocol for a push and refuses, in
# _bulk_docs, every document whose ID starts with "bad" (cblite's listener refuses none).
cat >"$tmp/refusing_peer.py" <<'PY'
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Peer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null")
    local = {}   # the checkpoints
    def do_GET(self):
        path = self.path.split("?")[0].rstrip("/")
        if path == "/db/_changes":
            # A pull: the feed's query (the filter and its parameters) written down, no rows.
            with open(sys.argv[1], "a") as f:
                f.write(self.path + "\n")
            self.answer(200, {"results": [], "last_seq": "0", "pending": 0})
        elif path == "/db":
            self.answer(200, {"db_name": "db", "update_seq": "0", "instance_start_time": "0"})
        elif path in Peer.local:
            self.answer(200, Peer.local[path])
        else:
            self.answer(404, {"error": "not_found", "reason": "missing"})
    def do_PUT(self):
        doc = self.body()
        if self.path.startswith("/db/_local/"):
            rev = "0-%d" % (int(Peer.local.get(self.path, {}).get("_rev", "0-0")[2:]) + 1)
            Peer.local[self.path] = dict(doc, _id=self.path[4:], _rev=rev)
            self.answer(201, {"ok": True, "id": self.path[4:], "rev": rev})
        else:
            self.answer(404, {"error": "not_found", "reason": "missing"})
    def do_POST(self):
        path = self.path.split("?")[0]
        req = self.body()
        if path == "/db/_revs_diff":
            self.answer(200, {k: {"missing": v} for k, v in req.items()})
        elif path == "/db/_bulk_docs":
            self.answer(201, [{"id": d["_id"], "rev": d["_rev"], "error": "forbidden", "reason": "refused by the test peer"}
                              for d in req["docs"] if d["_id"].startswith("bad")])
        else:
            self.answer(404, {"error": "not_found", "reason": "missing"})

server = ThreadingHTTPServer(("127.0.0.1", 0), Peer)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
"$PYTHON" "$tmp/refusing_peer.py" "$tmp/peer.changes" >"$tmp/peer.port" &
peer_pid=$!
for _ in $(seq 1 50); do [ -s "$tmp/peer.port" ] && break; sleep 0.1; done
peer="http://127.0.0.1:$(cat "$tmp/peer.port")/db"
for i in $(seq -w 1 25); do "$CBLITE" put --dir "$loc" --create refused "bad$i" '{"x":1}' >/dev/null; done
"$CBLITE" put --dir "$loc" refused good '{"x":1}' >/dev/null
run "$CBLITE" push --dir "$loc" refused "$peer"
expect_rc 1 "push with refused documents"
check "refused: 1 pushed, 25 failures" grep -qz "documents pushed: 1.*failures: 25" "$tmp/out"
check "refused: the failures list id, rev and reason" grep -q "push bad01 1-[0-9a-f]*: 403 forbidden: refused by the test peer" "$tmp/out"
check "refused: 20 listed, and 5 more" [ "$(grep -c '^    push bad' "$tmp/out")" = 20 ]
check "refused: ... and 5 more" grep -q "\.\.\. and 5 more" "$tmp/out"
check "refused: 25 waiting to retry" grep -q "waiting to retry: 25" "$tmp/out"
"$CBLITE" put --dir "$loc" refused bad26 '{"x":1}' >/dev/null
run "$CBLITE" push --dir "$loc" refused "$peer" --json --clear-failed
expect_rc 1 "push with a refused document (--json, --clear-failed)"
check "--json: a document line and the summary's failures" "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
docs = [o for o in lines if o["type"] == "document"]
assert [d["id"] for d in docs] == ["bad26"] and docs[0]["error"]["status"] == 403, docs
s = lines[-1]
assert s["document_failures"] == 1 and s["failures"][0]["id"] == "bad26" and s["exit_code"] == 1, s
assert s["documents_to_retry"] == 1, s
' "$tmp/out"
# The next run has no new change, yet offers the refused one again (its checkpoint kept it).
run "$CBLITE" push --dir "$loc" refused "$peer" --json
expect_rc 1 "a refused document is retried by the next run"
check "retried: bad26 offered and refused again" "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [o["id"] for o in lines if o["type"] == "document"] == ["bad26"], lines
assert lines[-1]["documents_to_retry"] == 1 and lines[-1]["total"] == 0, lines[-1]
' "$tmp/out"

# ---- --filter NAME --param KEY=VALUE: the peer's filter for a pull ----------------------
run "$CBLITE" pull --dir "$loc" filtered "$peer" --create-target --filter app/by_type --param type=note --param "q=a b"
expect_rc 0 "pull --filter --param"
check "pull --filter: the peer's feed asked with the filter and its parameters" \
    "$PYTHON" -c '
import sys, urllib.parse
q = urllib.parse.parse_qs(urllib.parse.urlsplit(open(sys.argv[1]).read().splitlines()[-1]).query)
assert q["filter"] == ["app/by_type"] and q["type"] == ["note"] and q["q"] == ["a b"], q
' "$tmp/peer.changes"
run "$CBLITE" pull --dir "$loc" filtered "$peer" --param type=note
expect_rc 64 "--param without --filter"
run "$CBLITE" pull --dir "$loc" filtered "$peer" --filter f --param novalue
expect_rc 64 "--param without KEY="
kill "$peer_pid"; wait "$peer_pid" 2>/dev/null || true
peer_pid=""

# ---- wrong password: exit 1 and the 401 ---------------------------------------------
CBLITE_PASSWORD=wrong run "$CBLITE" push --dir "$loc" src "$base/copy" --user alice
expect_rc 1 "wrong password"
check "wrong password reports 401" grep -q "401" "$tmp/out"
check "wrong password: error on stderr" grep -q "replication failed: 401" "$tmp/err"
CBLITE_PASSWORD=wrong run "$CBLITE" push --dir "$loc" src "$base/copy" --user alice --json
expect_rc 1 "wrong password (--json)"
check "--json summary carries the 401" "$PYTHON" -c '
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
assert s["type"] == "summary" and s["error"]["status"] == 401 and s["exit_code"] == 1, s
' "$tmp/out"
# --create-target with a wrong password leaves no new database behind.
CBLITE_PASSWORD=wrong run "$CBLITE" pull --dir "$loc" never-made "$base/copy" --user alice --create-target
expect_rc 1 "pull --create-target, wrong password"
check "no database left behind by a refused pull" [ ! -e "$loc/never-made.cblite2" ]
# No credentials at all.
env -u CBLITE_PASSWORD "$CBLITE" push --dir "$loc" src "$base/copy" >"$tmp/out" 2>"$tmp/err" </dev/null && rc=0 || rc=$?
expect_rc 1 "no credentials"

# ---- usage errors: 64 --------------------------------------------------------------
run "$CBLITE" push --dir "$loc" src
expect_rc 64 "missing URL"
run "$CBLITE" push --dir "$loc" src "ftp://$host/copy"
expect_rc 64 "not an http URL"
run "$CBLITE" push --dir "$loc" src "$base/copy" --batch-size 0
expect_rc 64 "batch size 0"
run "$CBLITE" push --dir "$loc" src "$base/copy" --header 'no colon'
expect_rc 64 "malformed header"
run "$CBLITE" push --dir "$loc" src "$base/copy" --pinned-cert abcd
expect_rc 64 "pinned certificate on http"
env -u CBLITE_PASSWORD "$CBLITE" push --dir "$loc" src "$base/copy" --user alice >"$tmp/out" 2>"$tmp/err" </dev/null && rc=0 || rc=$?
expect_rc 64 "--user without a password"
check "--user without a password says why" grep -q CBLITE_PASSWORD "$tmp/err"
run "$CBLITE" push --dir "$loc" src "$base/copy" --bogus-option
expect_rc 64 "unknown option"

# ---- --continuous: follows new changes until SIGINT, then a summary and exit 0 -------
"$CBLITE" push --dir "$loc" src "$base/copy" --user alice --continuous >"$tmp/cont.out" 2>"$tmp/cont.err" &
cont_pid=$!
sleep 1
"$CBLITE" put --dir "$loc" src live '{"live":true}' >/dev/null
arrived=no
for _ in $(seq 1 50); do
    "$CBLITE" pull --dir "$loc" watch "$base/copy" --user alice --create-target --doc-id live >/dev/null 2>&1 || true
    if "$CBLITE" get --dir "$loc" watch live >/dev/null 2>&1; then arrived=yes; break; fi
    sleep 0.2
done
check "continuous push sent a new document" [ "$arrived" = yes ]
kill -INT "$cont_pid"
rc=0; wait "$cont_pid" || rc=$?
cont_pid=""
if [ "$rc" = 0 ]; then pass "continuous push stops on SIGINT (exit 0)"; else fail "continuous push: exit $rc"; cat "$tmp/cont.out" "$tmp/cont.err"; fi
check "continuous push prints a summary" grep -q "stopped in" "$tmp/cont.out"
check "continuous push counted the document" grep -q "documents pushed: 1" "$tmp/cont.out"

# ---- HTTPS: a listener's anonymous certificate trusted by its pinned SHA-256 -------------
mkdir -p "$tmp/tls"
"$CBLITE" serve --dir "$tmp/tls" --port 0 --tls-anonymous >"$tmp/tls.log" 2>&1 &
tls_pid=$!
tls_base=""; pin=""
for _ in $(seq 1 100); do
    tls_base=$(sed -n 's/^cblite listening on \(https[^ ]*\)$/\1/p' "$tmp/tls.log" | head -n1)
    pin=$(sed -n 's/^TLS certificate SHA-256: \([0-9a-fA-F:]*\)$/\1/p' "$tmp/tls.log" | head -n1)
    [ -n "$tls_base" ] && [ -n "$pin" ] && break
    sleep 0.1
done
run "$CBLITE" push --dir "$loc" src "${tls_base%/}/secure" --create-target --pinned-cert "$pin"
expect_rc 0 "push over HTTPS with --pinned-cert"
check "HTTPS push counts every document" grep -q "documents pushed: $("$CBLITE" ls --dir "$loc" src | wc -l)" "$tmp/out"
kill -TERM "$tls_pid"; wait "$tls_pid" || true
tls_pid=""

# ---- the server goes away cleanly --------------------------------------------------
kill -INT "$server_pid"
wait "$server_pid" || true
server_pid=""

if [ "$failures" -ne 0 ]; then echo "test_replicate: $failures failed"; exit 1; fi
echo "test_replicate: all passed"
