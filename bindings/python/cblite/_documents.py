"""Documents on their way to the library: the shapes a document and the bulk calls'
arguments take, and the builders of the JSON the library is given for them (shared by
Collection and Database's default-collection shortcuts)."""

from __future__ import annotations

import base64
import datetime as _dt
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import _deep_json
from ._util import dumps, json_arg

#: A document as read: a dict with ``_id`` and ``_rev``.
Doc = Dict[str, Any]
#: A document body as given: a dict (or mapping), or JSON text.
Body = Union[Mapping[str, Any], str, bytes]
#: When a document expires: a unix time, a datetime, a timedelta from now, or None.
Expiration = Union[int, float, _dt.datetime, _dt.timedelta, None]
#: Documents for the bulk calls: a list of dicts, {"docs": [...]}, or JSON text.
Docs = Union[Iterable[Mapping[str, Any]], Mapping[str, Any], str, bytes]
#: _bulk_get requests: dicts, document IDs or (id, rev) pairs; or {"docs": [...]}, or JSON.
BulkGetRequests = Union[Iterable[Union[Mapping[str, Any], str, Tuple[str, Optional[str]]]],
                        Mapping[str, Any], str, bytes]


class _Missing:
    """The absent `default` of get() (a repr that says so, in signatures and docs)."""

    def __repr__(self) -> str:
        return "<no default: NotFound>"


MISSING: Any = _Missing()


def body_dict(body: Body) -> Dict[str, Any]:
    """A body as a new dict (JSON text parsed)."""
    if isinstance(body, (str, bytes)):
        parsed = _deep_json.loads(body)
        if not isinstance(parsed, dict):
            raise TypeError("a document body is a JSON object")
        return parsed
    return dict(body)


# Output-only metadata that must not be fed back as input (update callbacks).
OUTPUT_ONLY = ("_id", "_rev", "_conflicts", "_revisions", "_local_seq")


def with_base64_attachments(doc: Any) -> Any:
    """A document for the library: attachment ``data`` given as bytes becomes base64 text
    (the JSON form); the caller's dict is not modified."""
    if not isinstance(doc, dict):
        return doc
    atts = doc.get("_attachments")
    if not isinstance(atts, dict) or not any(
            isinstance(a, dict) and isinstance(a.get("data"), (bytes, bytearray, memoryview))
            for a in atts.values()):
        return doc
    out = dict(doc)
    out["_attachments"] = {
        name: ({**a, "data": base64.b64encode(bytes(a["data"])).decode("ascii")}
               if isinstance(a, dict) and isinstance(a.get("data"), (bytes, bytearray, memoryview))
               else a)
        for name, a in atts.items()}
    return out


def docs_arg(docs: Docs, what: str) -> bytes:
    """A list of documents (or ``{"docs": [...]}``, or JSON text) as the library's JSON."""
    if isinstance(docs, (str, bytes)):
        return json_arg(docs, what)
    if isinstance(docs, dict):
        if "docs" not in docs:
            raise TypeError(f"{what}: expected a list of documents or {{'docs': [...]}}")
        docs = docs["docs"]
    return dumps([with_base64_attachments(d) for d in docs])


def rev_list(revs: Iterable[str], what: str) -> List[str]:
    if isinstance(revs, (str, bytes)):
        raise TypeError(f"{what} must be a list of revision IDs, not a single string")
    return list(revs)


def revision_options(revisions: bool, latest: bool, attachments: bool,
                      atts_since: Optional[Iterable[str]],
                      conflicts: bool, deleted_conflicts: bool, revs_info: bool,
                      local_seq: bool) -> Optional[bytes]:
    """CouchDB's read options (cbl_doc_open_revs / cbl_collection_docs_bulk_get), only those set."""
    o: Dict[Any, Any] = {}
    if revisions:
        o["revs"] = True
    if latest:
        o["latest"] = True
    if attachments:
        o["attachments"] = True
    if atts_since is not None:
        o["atts_since"] = rev_list(atts_since, "atts_since")
    if conflicts:
        o["conflicts"] = True
    if deleted_conflicts:
        o["deleted_conflicts"] = True
    if revs_info:
        o["revs_info"] = True
    if local_seq:
        o["local_seq"] = True
    return dumps(o) if o else None


def bulk_get_request(requests: BulkGetRequests) -> bytes:
    """``{"docs": [...]}`` from dicts ``{"id", "rev"?, "atts_since"?}``, plain IDs or
    ``(id, rev)`` pairs."""
    if isinstance(requests, (str, bytes)):
        return json_arg(requests, "bulk_get request")
    if isinstance(requests, dict):
        if "docs" not in requests:
            raise TypeError("bulk_get: expected a list of requests or {'docs': [...]}")
        requests = requests["docs"]
    docs = []
    for r in requests:
        if isinstance(r, str):
            docs.append({"id": r})
        elif isinstance(r, tuple):
            if len(r) != 2:
                raise TypeError("bulk_get: a tuple request is (doc_id, rev)")
            docs.append({"id": r[0]} if r[1] is None else {"id": r[0], "rev": r[1]})
        elif isinstance(r, dict):
            d = dict(r)
            if d.get("atts_since") is not None:
                d["atts_since"] = rev_list(d["atts_since"], "atts_since")
            docs.append(d)
        else:
            raise TypeError("bulk_get: each request is a dict, a document ID or (id, rev)")
    return dumps({"docs": docs})
