"""Users, roles and per-database `_security` through `cblite serve`, as CouchDB 3 enforces
them: members-only databases, design documents for database admins, sessions and cookie
authentication, passwords only from the environment and only hashed in files."""
import base64
import json
import os
import subprocess

from conftest import BIN, SERVE, Server


def basic(name, password):
    return {"Authorization": "Basic " + base64.b64encode(("%s:%s" % (name, password)).encode()).decode()}


ADMIN, BOB, CAROL = basic("admin", "s3cret"), basic("bob", "b0b"), basic("carol", "c4rol")


def users_config(workdir):
    """A configuration file: bob with the role "staff", carol with none (neither a server admin)."""
    path = os.path.join(workdir, "serve.json")
    with open(path, "w") as f:
        json.dump({"users": {"bob": {"password": "b0b", "roles": ["staff"]},
                             "carol": {"password": "c4rol", "roles": []}}}, f)
    return path


def start(serve, workdir):
    return serve("--user", "admin:s3cret", "--config", users_config(workdir))


def test_members_only_database_and_admins_only_design_documents(serve, workdir):
    s = start(serve, workdir)
    assert s.json("PUT", "/db", headers=ADMIN)[0] == 201
    # A new database is CouchDB 3's admin_only: closed to every other user.
    assert s.json("GET", "/db/_security", headers=ADMIN)[1] == {"members": {"roles": ["_admin"]}, "admins": {"roles": ["_admin"]}}
    assert s.json("GET", "/db", headers=BOB) == (403, {"error": "forbidden", "reason": "You are not allowed to access this db."})
    assert s.json("GET", "/db") == (401, {"error": "unauthorized", "reason": "You are not authorized to access this db."})
    assert s.json("GET", "/missing")[0] == 404
    # Members by role, admins by name.
    sec = {"admins": {"names": ["carol"], "roles": []}, "members": {"names": [], "roles": ["staff"]}}
    assert s.json("PUT", "/db/_security", sec, headers=ADMIN) == (200, {"ok": True})
    assert s.json("PUT", "/db/doc", {"v": 1}, headers=BOB)[0] == 201
    assert s.json("GET", "/db/doc", headers=BOB)[1]["v"] == 1
    assert s.json("PUT", "/db/_design/app", {}, headers=BOB) == \
        (403, {"error": "forbidden", "reason": "You are not a db or server admin."})
    assert s.json("PUT", "/db/_security", {}, headers=BOB)[0] == 403
    status, rows = s.json("POST", "/db/_bulk_docs", {"docs": [{"_id": "ok"}, {"_id": "_design/no"}]}, headers=BOB)
    assert status == 201 and [r.get("error") for r in rows] == [None, "forbidden"]
    assert s.json("PUT", "/db/_design/app", {}, headers=CAROL)[0] == 201
    assert s.json("GET", "/db/doc", headers=CAROL)[0] == 200     # a database admin is a member
    assert s.json("GET", "/db/doc")[0] == 401
    # Server endpoints stay the server admins'.
    assert s.json("GET", "/_all_dbs", headers=CAROL) == (401, {"error": "unauthorized", "reason": "You are not a server admin."})
    assert s.json("PUT", "/db2", headers=BOB)[0] == 401


def test_sessions_and_cookie_authentication(serve, workdir):
    s = start(serve, workdir)
    assert s.json("PUT", "/db", headers=ADMIN)[0] == 201
    assert s.json("PUT", "/db/_security", {"members": {"roles": ["staff"]}}, headers=ADMIN)[0] == 200
    status, h, body = s.request("POST", "/_session", "name=bob&password=b0b", {"Content-Type": "application/x-www-form-urlencoded"})
    assert (status, json.loads(body)) == (200, {"ok": True, "name": "bob", "roles": ["staff"]})
    assert "; Version=1; Expires=" in h["set-cookie"] and h["set-cookie"].endswith("; Max-Age=600; Path=/; HttpOnly")
    cookie = {"Cookie": h["set-cookie"].split(";")[0]}
    # CouchDB's cookie: base64url of "name:hex time:MAC".
    value = cookie["Cookie"].split("=", 1)[1]
    raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    assert raw.startswith(b"bob:") and raw.count(b":") >= 2
    assert s.json("GET", "/_session", headers=cookie)[1] == {
        "ok": True, "userCtx": {"name": "bob", "roles": ["staff"]},
        "info": {"authentication_handlers": ["cookie", "default"], "authenticated": "cookie"}}
    assert s.json("PUT", "/db/x", {}, headers=cookie)[0] == 201
    assert s.json("GET", "/db/x", headers=cookie)[0] == 200
    assert s.json("GET", "/_session", headers={"Cookie": "AuthSession=!!"}) == \
        (400, {"error": "bad_request", "reason": "Malformed AuthSession cookie. Please clear your cookies."})
    status, h, _ = s.request("POST", "/_session", {"name": "bob", "password": "wrong"})
    assert status == 401 and h["set-cookie"].startswith("AuthSession=;")
    status, h, _ = s.request("POST", "/_session?next=/db", {"name": "admin", "password": "s3cret"}, {"Host": "example:5984"})
    assert (status, h["location"]) == (302, "http://example:5984/db")
    status, h, _ = s.request("DELETE", "/_session", headers=cookie)
    assert status == 200 and h["set-cookie"].startswith("AuthSession=; Version=1; Expires=")


def test_passwords_in_the_serve_configuration_file_get_hashed(serve, workdir):
    path = users_config(workdir)
    s = start(serve, workdir)
    with open(path) as f:
        saved = json.load(f)
    assert saved["users"]["bob"]["password"].startswith("-pbkdf2:sha256-") and saved["users"]["bob"]["roles"] == ["staff"]
    assert saved["users"]["carol"]["password"].startswith("-pbkdf2:sha256-")
    assert s.json("GET", "/_session", headers=BOB)[1]["userCtx"] == {"name": "bob", "roles": ["staff"]}
    s.stop()
    # Started again from the hashes: the same users.
    s = serve("--config", path)
    assert s.json("GET", "/_session", headers=CAROL)[1]["userCtx"] == {"name": "carol", "roles": []}
    assert s.json("GET", "/_session", headers=basic("carol", "wrong"))[0] == 401


def test_passwords_are_hashed_in_the_configuration(serve, workdir):
    # A password written in clear into [admins] is hashed at the first start, as CouchDB does.
    path = os.path.join(workdir, "listener-config.json")
    with open(path, "w") as f:
        json.dump({"admins": {"root": "r00t"}}, f)
    s = serve()
    with open(path) as f:
        saved = f.read()
    assert "r00t" not in saved
    stored = json.loads(saved)["admins"]["root"]
    assert stored.startswith("-pbkdf2:sha256-") and len(stored.split(",")) == 3
    root = basic("root", "r00t")
    assert s.json("GET", "/_all_dbs")[0] == 401
    assert s.json("GET", "/_all_dbs", headers=root)[0] == 200
    # PUT a plain password into _config/admins: the previous value is answered, the hash kept.
    assert s.json("PUT", "/_node/_local/_config/admins/ops", json.dumps("0ps"), headers=root) == (200, "")
    status, value = s.json("GET", "/_node/_local/_config/admins/ops", headers=root)
    assert value.startswith("-pbkdf2:sha256-") and "0ps" not in value
    assert s.json("GET", "/_all_dbs", headers=basic("ops", "0ps"))[0] == 200
    with open(path) as f:
        assert "0ps" not in f.read()


def run_serve(workdir, *args, env=None):
    """`cblite serve` that must refuse to start: (exit code, stderr)."""
    p = subprocess.run([*SERVE, "--dir", workdir, "--port", "0", *args], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30, env=env)
    return p.returncode, p.stderr


def test_user_password_from_the_environment_never_the_command_line(serve, workdir):
    if SERVE[0] != BIN:
        return                        # the bindings' stand-in takes no other way either
    env = {k: v for k, v in os.environ.items() if k != "CBLITE_PASSWORD"}
    code, err = run_serve(workdir, "--user", "admin:s3cret", env=env)
    assert code == 64 and "CBLITE_PASSWORD" in err
    code, err = run_serve(workdir, "--user", "admin", env=env)      # no variable, no terminal
    assert code == 64 and "CBLITE_PASSWORD" in err
    s = Server(workdir, "--user", "admin", env=dict(env, CBLITE_PASSWORD="from-env"))
    try:
        assert s.json("GET", "/_all_dbs", headers=basic("admin", "from-env"))[0] == 200
        assert s.json("GET", "/_all_dbs", headers=basic("admin", "s3cret"))[0] == 401
        with open("/proc/%d/cmdline" % s.proc.pid, "rb") as f:
            assert b"from-env" not in f.read()
    finally:
        assert s.stop() == 0
