#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_target.c into Tests/reliability/corpus/ (checked in).
Format of an input: selector byte, flags byte, then NUL-separated fields."""
import os, hashlib
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(here, exist_ok=True)

def inp(sel, flags, *fields):
    return bytes([sel, flags]) + b"\0".join(f.encode() if isinstance(f, str) else f for f in fields)

bodies = ['{}', '{"a":1}', '{"a":[1,2,{"b":null}],"c":"x\\u00e9\\n"}', '{"_deleted":true}',
          '{"_attachments":{"f":{"length":3}}}', '{"n":-1.5e10,"t":true,"f":false}',
          '{"_id":"doc1","x":1}', '{"_rev":"1-abc","x":2}', '{"s":"\\ud83d\\ude00"}', '[]', '1', '{"a":',
          '{"k":"' + 'v' * 300 + '"}', '{"a":' + '[' * 40 + ']' * 40 + '}']
seeds = []
for i, b in enumerate(bodies):
    seeds.append(inp(0, 0, "doc%d" % i, b))
    seeds.append(inp(0, 1, "doc%d" % i, b, "1-abc"))
    seeds.append(inp(4, 0, "upd%d" % i, b))
    seeds.append(inp(5, i & 1, "loc%d" % i, b))
seeds += [
    inp(0, 0x80, "", '{"x":1}'),
    inp(1, 0, "pe", '{"v":1}', '["3-ccc","2-bbb","1-aaa"]'),
    inp(1, 0, "pe", '{"v":2}', '["2-ddd","1-aaa"]'),
    inp(1, 0, "pe", '{"_deleted":true}', '["4-eee","3-ccc"]'),
    inp(1, 0, "pe2", '{}', '["1-x"]'),
    inp(1, 0, "pe3", '{}', '[]'),
    inp(1, 0, "pe3", '{}', '["2-a","3-b"]'),
    inp(2, 0x0F, "seed"), inp(2, 0x07, "pe", "", "2-bbb"), inp(2, 0x01, "doc3"),
    inp(3, 0, "doc1"), inp(3, 1, "doc2"), inp(3, 0, "pe", "", "2-ddd"),
    inp(6, 0, "", '{"limit":5,"include_docs":true,"all_revs":true}'),
    inp(6, 3, "", '{"descending":true}'), inp(6, 0, "", '{"limit":-1}'),
    inp(7, 0, "db2", '{"create":true,"busy_timeout_ms":100}'),
    inp(7, 0, "db/with(sl)+ash$", 'null'), inp(7, 0, "Bad Name", '{}'),
    inp(7, 0, "enc", '{"encryption_key":{"password":"p"}}'),
    inp(7, 0, "raw", '{"encryption_key":{"raw_hex":"' + "ab" * 32 + '"}}'),
    inp(8, 1, "scope1", "coll1", "docx"), inp(8, 0, "", "_default"), inp(8, 1, "%bad", "c"),
    inp(9, 0, "seed"), inp(9, 1, "doc0"),
]
for s in seeds:
    name = hashlib.sha1(s).hexdigest()[:16]
    with open(os.path.join(here, name), "wb") as f:
        f.write(s)
print("corpus: %d seed inputs in %s" % (len(seeds), here))
