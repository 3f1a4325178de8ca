#!/usr/bin/env python3
"""Checks include/cblite.h against its own rules (its Conventions):

  - Names: a function is cbl_<object>_..., <object> being what its first argument is
    (db for a cbl_db; collection, doc or local for a cbl_collection; for every other
    handle its type without "cbl_"), except the library's own functions (no object), the
    calls on a database named by name (cbl_db_... taking a const char* first) and the
    constructors cbl_<object>_start / _create whose out-parameter is the new handle.
    Deprecated functions are exempt: they keep their old names.
  - Deprecation: a function whose comment says "Deprecated: use X" carries
    CBL_DEPRECATED("use X") and the reverse; X is declared and not deprecated itself.
  - Contents: the table of contents lists the section banners, in order.

Usage: check_header.py [include/cblite.h]      exit 1 listing every problem
       check_header.py --self-test [header]     shows that each check can fail
"""

import re
import sys

# The objects that name a cbl_collection besides "collection" (Conventions, "Names").
COLLECTION_ALIASES = {"doc", "local"}
CONSTRUCTOR_VERBS = {"start", "create"}

DECLARATION = re.compile(
    r"^(?!typedef)(?:CBL_WARN_UNUSED\s+)?(?P<ret>[a-z_][a-z_0-9 ]*?\**)\s*\b(?P<name>cbl_[a-z0-9_]+)"
    r"\((?P<params>[^)]*)\)\s*(?:CBL_DEPRECATED\(\s*\"(?P<macro>[^\"]*)\"\s*\))?\s*;", re.M)


def mask_comments(text):
    """The text with every comment blanked (offsets kept), and the comments' spans."""
    spans = [m.span() for m in re.finditer(r"/\*.*?\*/", text, re.S)]
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars), spans


def declarations(text):
    """[(name, [parameter, ...], comment before it, CBL_DEPRECATED message or None)]"""
    masked, spans = mask_comments(text)
    out = []
    for m in DECLARATION.finditer(masked):
        before = [s for s in spans if s[1] <= m.start()]
        comment = text[before[-1][0]:before[-1][1]] if before else ""
        params = [" ".join(p.split()) for p in m.group("params").split(",")]
        out.append((m.group("name"), params, comment, m.group("macro")))
    return out


def handle_types(text):
    """The opaque handles: `typedef struct cbl_x cbl_x;` (not the structs with fields)."""
    return set(re.findall(r"^typedef struct (cbl_[a-z_]+) \1;", text, re.M))


def naming_problems(text):
    handles = handle_types(text)
    objects = {h[len("cbl_"):]: h for h in handles}
    objects.update({alias: "cbl_collection" for alias in COLLECTION_ALIASES})
    problems = []
    for name, params, comment, _ in declarations(text):
        if "Deprecated: use" in comment:
            continue
        rest = name[len("cbl_"):]
        obj = max((o for o in objects if rest.startswith(o + "_")), key=len, default=None)
        first = re.fullmatch(r"(?:const )?(cbl_[a-z_]+) ?\* ?\w*", params[0])
        first_handle = first.group(1) if first and first.group(1) in handles else None
        if obj is not None and objects[obj] == first_handle:
            continue
        if obj is not None:
            verb = rest[len(obj) + 1:]
            makes_one = any(re.match(objects[obj] + r" ?\*\*", p) for p in params)
            if verb in CONSTRUCTOR_VERBS and makes_one:
                continue                                  # a constructor
            if obj == "db" and re.match(r"const char ?\*", params[0]):
                continue                                  # a database named by name
        elif first_handle is None:
            continue                                      # the library's own
        wanted = sorted(o for o, h in objects.items() if h == first_handle)
        problems.append(f"{name}: its first argument is {params[0]!r}, so its name should begin "
                        + (" or ".join(f"cbl_{o}_" for o in wanted) if wanted else
                           "with no object (a library function)"))
    return problems


def deprecation_problems(text):
    decls = declarations(text)
    deprecated = set()
    problems = []
    for name, _, comment, macro in decls:
        m = re.search(r"Deprecated: use (cbl_[a-z0-9_]+)", comment)
        if m:
            deprecated.add(name)
            if macro != "use " + m.group(1):
                problems.append(f"{name}: deprecated in favour of {m.group(1)}, but its declaration "
                                f"carries {'CBL_DEPRECATED(%r)' % macro if macro else 'no CBL_DEPRECATED'}")
        elif macro is not None:
            problems.append(f"{name}: CBL_DEPRECATED({macro!r}) without \"Deprecated: use\" in its comment")
    names = {d[0] for d in decls}
    for name, _, comment, _ in decls:
        m = re.search(r"Deprecated: use (cbl_[a-z0-9_]+)", comment)
        if m and name in deprecated and (m.group(1) not in names or m.group(1) in deprecated):
            problems.append(f"{name}: its replacement {m.group(1)} is not a declared, current function")
    return problems


def contents_problems(text):
    start = text.find(" * Contents")
    if start < 0:
        return ["no table of contents (\" * Contents\")"]
    block = text[start:text.index(" *\n", start)]
    toc = [(int(n), t) for n, t in re.findall(r"^ \* +(\d+)\. (\S+(?: \S+)*?)(?: {2,}.*)?$", block, re.M)]
    bar = r"/\* -{84} \*/"
    banners = [(int(n), re.split(r":| \(", t)[0])
               for n, t in re.findall(r"^" + bar + r"\n/\* (\d+)\. (.*?)\s*\*/\n" + bar + "$", text, re.M)]
    if toc != banners:
        return [f"the table of contents {toc} does not match the section banners {banners}"]
    if [n for n, _ in toc] != list(range(1, len(toc) + 1)):
        return [f"sections are not numbered 1..{len(toc)}: {[n for n, _ in toc]}"]
    return []


def problems(text):
    return naming_problems(text) + deprecation_problems(text) + contents_problems(text)


def self_test(text):
    """Each check finds a planted fault (so a passing run means something)."""
    assert problems(text) == [], "the header itself must pass before the self-test"
    assert len(declarations(text)) > 100
    faults = {
        # a misnamed current function
        "name": text.replace("cbl_view_update(cbl_view* view", "cbl_update_view(cbl_view* view", 1),
        "first argument": text.replace("cbl_view_info(cbl_view* view", "cbl_view_info(cbl_collection* view", 1),
        # a deprecated function without its macro, and a macro without the comment
        "macro missing": text.replace('\n    CBL_DEPRECATED("use cbl_emitter_emit")', "", 1),
        "comment missing": re.sub(r"Deprecated: use cbl_emitter_emit,", "Old name of cbl_emitter_emit,", text, 1),
        # the table of contents out of step with the banners
        "contents": text.replace("/* 8. Changes ", "/* 8. Change  ", 1),
    }
    for what, faulty in faults.items():
        assert faulty != text, f"self-test: could not plant the fault '{what}'"
        assert problems(faulty), f"self-test: the fault '{what}' went unnoticed"
    print(f"check_header: self-test passed ({len(faults)} planted faults found)")


def main(argv):
    args = [a for a in argv if a != "--self-test"]
    path = args[0] if args else "include/cblite.h"
    text = open(path, encoding="utf-8").read()
    if "--self-test" in argv:
        self_test(text)
        return 0
    found = problems(text)
    for p in found:
        print(f"{path}: {p}", file=sys.stderr)
    if found:
        return 1
    print(f"check_header: {len(declarations(text))} functions follow the naming rule, "
          f"deprecations carry CBL_DEPRECATED, the contents match the sections")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
