"""CouchDB 3.5's answers to the attachment API (Tests/Fixtures/couchdb-3.5/rest-attachments.jsonl),
replayed in order against `cblite serve` (rest_replay.py): every request gets CouchDB's status,
except the ones listed in DIFFERENCES with cblite's status and why (the README's table says the
same). Beside the statuses, every digest cblite shows must be CouchDB's form ("md5-" + base64 of
16 bytes) and every attachment ETag the quoted base64 MD5 of what it serves."""
import base64
import hashlib
import json
import re

from rest_replay import Replay

# seq -> (cblite's status, why). Every entry is checked too.
DIFFERENCES = {}
# seq -> why the attachments differ (their digests are compared with CouchDB's elsewhere).
ATTACHMENT_DIFFERENCES = {
    68: "an update without `_attachments` keeps the parent's attachments (the engine's rule); CouchDB drops them",
}

MD5_DIGEST = re.compile(r"md5-([A-Za-z0-9+/]{22}==)")


def attachments(value):
    """Every attachment entry in a JSON answer."""
    if isinstance(value, dict):
        atts = value.get("_attachments")
        found = list(atts.values()) if isinstance(atts, dict) else []
        return found + [a for v in value.values() if v is not atts for a in attachments(v)]
    if isinstance(value, list):
        return [a for v in value for a in attachments(v)]
    return []


def digests(value):
    return [a.get("digest") for a in attachments(value)]


def shapes(value):
    """What CouchDB shows of each entry: digest, stub or data or follows, encoding."""
    return sorted((a.get("digest"), "stub" in a, "data" in a, "follows" in a, a.get("encoding"), a.get("encoded_length"))
                  for a in attachments(value))


def check(rec, status, headers, body):
    """The digests' and ETags' form, where CouchDB sends them."""
    want = {k.lower(): v for k, v in rec["response"]["headers"]}
    if rec["request"]["method"] != "HEAD" and headers.get("content-type", "").startswith("application/json"):
        try:
            doc = json.loads(body)
        except ValueError:
            return "an unparseable JSON answer"
        for d in digests(doc):
            m = MD5_DIGEST.fullmatch(d or "")
            if not m or len(base64.b64decode(m.group(1))) != 16:
                return "digest %r is not md5-<base64 of 16 bytes>" % d
        # The same content kept the same way (text gzip-encoded): CouchDB's very digests and encodings.
        try:
            theirs = shapes(json.loads(rec["response"]["body"]))
        except (TypeError, ValueError):
            theirs = None
        if theirs is not None and rec["seq"] not in ATTACHMENT_DIFFERENCES and theirs != shapes(doc):
            return "attachments %s, CouchDB's %s" % (shapes(doc), theirs)
    etag = want.get("etag", "")
    if rec["request"]["method"] in ("GET", "HEAD") and re.fullmatch(r'"[A-Za-z0-9+/]{22}=="', etag):
        # An attachment's ETag: the quoted base64 MD5 of the content served whole.
        got = headers.get("etag")
        if not got or not re.fullmatch(r'"[A-Za-z0-9+/]{22}=="', got):
            return "attachment ETag %r is not the quoted base64 MD5" % got
        # The same content kept the same way (text gzip-encoded as CouchDB's zlib does): CouchDB's value.
        if got != etag:
            return "attachment ETag %s, CouchDB's %s" % (got, etag)
        # Content kept gzip-encoded (Accept-Ranges: none) has the MD5 of that form, sent or not.
        if status == 200 and rec["request"]["method"] == "GET" and headers.get("accept-ranges") != "none":
            md5 = '"%s"' % base64.b64encode(hashlib.md5(body).digest()).decode()
            if got != md5:
                return "ETag %s is not the MD5 of the body (%s)" % (got, md5)
    return None


def test_attachments_replay_as_couchdb(serve):
    mismatches = Replay(serve(), "rest-attachments.jsonl", DIFFERENCES, check=check).run()
    assert not mismatches, "\n".join(mismatches)


def test_the_check_refuses_other_digests_and_etags():
    """The check above can fail: our engine's SHA-1 form, an ETag that is not the body's MD5 or not CouchDB's."""
    rec = {"request": {"method": "GET"}, "response": {"headers": [["ETag", '"GGr50SsbOcE/fCXIINrbrA=="']]}}
    sha1 = json.dumps({"_attachments": {"a": {"digest": "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "stub": True}}}).encode()
    assert "not md5-" in check(rec, 200, {"content-type": "application/json"}, sha1)
    assert "not the MD5" in check(rec, 200, {"etag": '"GGr50SsbOcE/fCXIINrbrA=="'}, b"other content")
    assert "CouchDB's" in check(rec, 200, {"etag": '"%s"' % base64.b64encode(hashlib.md5(b"x").digest()).decode()}, b"x")
    x = '"%s"' % base64.b64encode(hashlib.md5(b"x").digest()).decode()
    assert check({"request": {"method": "GET"}, "response": {"headers": [["ETag", x]]}}, 200, {"etag": x}, b"x") is None
