"""CouchDB's authentication database `_users` through `cblite serve`: public signup,
passwords hashed on write, logins by Basic and `_session` with the document's roles,
CouchDB 3.5's validation and access rules, and changes taking effect at once."""
import base64

from test_security import ADMIN, start


def basic(name, password):
    return {"Authorization": "Basic " + base64.b64encode(("%s:%s" % (name, password)).encode()).decode()}


DAN = basic("dan", "d4n")


def user(name, password, roles=()):
    return {"_id": "org.couchdb.user:" + name, "name": name, "type": "user", "roles": list(roles), "password": password}


def test_signup_hashing_and_logins(serve, workdir):
    s = start(serve, workdir)
    # Anyone may sign up (the database is made on first use), without roles.
    assert s.json("PUT", "/_users/org.couchdb.user:eve", user("eve", "x", ["boss"])) == \
        (403, {"error": "forbidden", "reason": "Only _admin may set roles"})
    status, body = s.json("PUT", "/_users/org.couchdb.user:dan", user("dan", "d4n"))
    assert status == 201, body
    stored = s.json("GET", "/_users/org.couchdb.user:dan", headers=ADMIN)[1]
    assert "password" not in stored
    assert (stored["password_scheme"], stored["pbkdf2_prf"]) == ("pbkdf2", "sha256")
    assert isinstance(stored["iterations"], int) and len(stored["derived_key"]) == 64 and stored["salt"]
    # Basic and cookie logins, with the document's roles.
    assert s.json("GET", "/_session", headers=DAN)[1]["userCtx"] == {"name": "dan", "roles": []}
    assert s.json("GET", "/_session", headers=basic("dan", "wrong"))[0] == 401
    status, h, _ = s.request("POST", "/_session", {"name": "dan", "password": "d4n"})
    assert status == 200
    cookie = {"Cookie": h["set-cookie"].split(";")[0]}
    assert s.json("GET", "/_session", headers=cookie)[1]["userCtx"] == {"name": "dan", "roles": []}
    # Their own document they read; another's, and the listings, they do not.
    assert s.json("GET", "/_users/org.couchdb.user:dan", headers=DAN)[0] == 200
    assert s.json("GET", "/_users/org.couchdb.user:dan")[0] == 404
    assert s.json("GET", "/_users/_all_docs", headers=DAN)[0] == 401
    assert s.json("GET", "/_users/_changes", headers=DAN)[0] == 401
    assert s.json("PUT", "/_users/_security", {}, headers=ADMIN) == \
        (403, {"error": "forbidden", "reason": "You can't edit the security object of the user database."})


def test_roles_validation_and_changes_take_effect(serve, workdir):
    s = start(serve, workdir)
    assert s.json("PUT", "/db", headers=ADMIN)[0] == 201
    assert s.json("PUT", "/db/_security", {"members": {"roles": ["staff"]}}, headers=ADMIN)[0] == 200
    status, body = s.json("PUT", "/_users/org.couchdb.user:dan", user("dan", "d4n"))
    rev = body["rev"]
    assert s.json("GET", "/db", headers=DAN)[0] == 403
    # Users may not give themselves roles; admins may, but no system roles.
    doc = dict(user("dan", "d4n", ["staff"]), _rev=rev)
    assert s.json("PUT", "/_users/org.couchdb.user:dan", doc, headers=DAN) == \
        (403, {"error": "forbidden", "reason": "Only _admin may edit roles"})
    assert s.json("PUT", "/_users/org.couchdb.user:dan", dict(doc, roles=["_admin"]), headers=ADMIN) == \
        (403, {"error": "forbidden", "reason": "No system roles (starting with underscore) in users db."})
    status, body = s.json("PUT", "/_users/org.couchdb.user:dan", doc, headers=ADMIN)
    assert status == 201
    assert s.json("GET", "/db", headers=DAN)[0] == 200            # the new role, at once
    # CouchDB's shape rules.
    assert s.json("PUT", "/_users/org.couchdb.user:x", user("y", "p"), headers=ADMIN)[1]["reason"] == \
        "Doc ID must be of the form org.couchdb.user:name"
    assert s.json("PUT", "/_users/org.couchdb.user:x", dict(user("x", "p"), type="thing"), headers=ADMIN)[1]["reason"] == \
        "doc.type must be user"
    # Another user's document is not theirs to change, or to see.
    assert s.json("PUT", "/_users/org.couchdb.user:fay", user("fay", "f4y"))[0] == 201
    assert s.json("PUT", "/_users/org.couchdb.user:fay", user("fay", "new"), headers=DAN)[0] == 404
    assert s.json("GET", "/_users/org.couchdb.user:fay", headers=DAN)[0] == 404
    # A new password, then a deletion, end the old credentials at once.
    rev = body["rev"]
    status, body = s.json("PUT", "/_users/org.couchdb.user:dan", dict(doc, _rev=rev, password="n3w"), headers=DAN)
    assert status == 201, body
    assert s.json("GET", "/db", headers=DAN)[0] == 401
    new = basic("dan", "n3w")
    assert s.json("GET", "/db", headers=new)[0] == 200
    assert s.json("DELETE", "/_users/org.couchdb.user:dan?rev=" + body["rev"], headers=new)[0] == 200
    assert s.json("GET", "/db", headers=new)[0] == 401
