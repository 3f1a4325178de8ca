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
GZIP = "text attachments are stored as sent, not gzip-encoded: the digest and ETag are the MD5 of the content " \
       "(CouchDB's, of its gzip form)"
DIFFERENCES = {
    11: (200, GZIP + ", so CouchDB's ETag does not match"),
    14: (206, GZIP + ", so a Range is honoured (CouchDB ignores it on gzip-stored content)"),
}

MD5_DIGEST = re.compile(r"md5-([A-Za-z0-9+/]{22}==)")


def digests(value):
    """Every attachment `digest` in a JSON answer."""
    if isinstance(value, dict):
        atts = value.get("_attachments")
        found = [a.get("digest") for a in atts.values()] if isinstance(atts, dict) else []
        return found + [d for v in value.values() if v is not atts for d in digests(v)]
    if isinstance(value, list):
        return [d for v in value for d in digests(v)]
    return []


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
    etag = want.get("etag", "")
    if rec["request"]["method"] in ("GET", "HEAD") and re.fullmatch(r'"[A-Za-z0-9+/]{22}=="', etag):
        # An attachment's ETag: the quoted base64 MD5 of the content served whole.
        got = headers.get("etag")
        if not got or not re.fullmatch(r'"[A-Za-z0-9+/]{22}=="', got):
            return "attachment ETag %r is not the quoted base64 MD5" % got
        if status == 200 and rec["request"]["method"] == "GET" and "content-encoding" not in headers:
            md5 = '"%s"' % base64.b64encode(hashlib.md5(body).digest()).decode()
            if got != md5:
                return "ETag %s is not the MD5 of the body (%s)" % (got, md5)
    return None


def test_attachments_replay_as_couchdb(serve):
    mismatches = Replay(serve(), "rest-attachments.jsonl", DIFFERENCES, check=check).run()
    assert not mismatches, "\n".join(mismatches)


def test_the_check_refuses_other_digests_and_etags():
    """The check above can fail: our engine's SHA-1 form, or an ETag that is not the body's MD5."""
    rec = {"request": {"method": "GET"}, "response": {"headers": [["ETag", '"GGr50SsbOcE/fCXIINrbrA=="']]}}
    sha1 = json.dumps({"_attachments": {"a": {"digest": "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "stub": True}}}).encode()
    assert "not md5-" in check(rec, 200, {"content-type": "application/json"}, sha1)
    assert "not the MD5" in check(rec, 200, {"etag": '"GGr50SsbOcE/fCXIINrbrA=="'}, b"other content")
    assert check(rec, 200, {"etag": '"%s"' % base64.b64encode(hashlib.md5(b"x").digest()).decode()}, b"x") is None
