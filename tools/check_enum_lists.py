#!/usr/bin/env python3
"""Holds the RoPE enumerations to their one list each, lib/setup/enum_lists.hpp (as check_isa_list.py does the paths).

    check_enum_lists.py ROOT

For each list (pairs, rope types, layouts) of X(ENUM, name) lines:
  - include/posenc/posenc.h's enum has exactly the enumerators PREFIX_<ENUM> = 0, 1, ... in the list's order;
  - include/posenc/posenc.hpp's scoped enum (rope_pairs, rope_type, rope_layout) has the names in that order
    (`default_` for the keyword);
  - nothing else spells out the names as a list: a file of cli/, python/ (its tests aside), posenc.hpp or lib/
    (the list itself aside) with most of a list's names as quoted literals within six lines ("chunked",
    "vision", "strided", ... in an initializer, a tuple or a dict) fails; such code asks the library
    (posenc_rope_layout_name, posenc_rope_layout_from_name, ...). Subsets for a scheme's logic stay below
    the threshold; documentation (docs/, docstrings: names followed by text) is not a list of literals.
Prints what is wrong and exits 1 (docs/architecture.md, "Add a layout").
"""
import math
import os
import re

import checks
from checks import read

LISTS = (  # macro, C prefix, C enum, C++ enum class
    ("POSENC_ROPE_PAIRS_LIST", "POSENC_ROPE_", "posenc_rope_pairs", "rope_pairs"),
    ("POSENC_ROPE_TYPE_LIST", "POSENC_ROPE_TYPE_", "posenc_rope_type", "rope_type"),
    ("POSENC_ROPE_LAYOUT_LIST", "POSENC_SECTIONS_", "posenc_rope_layout", "rope_layout"),
)
SCAN = ("cli", "python", "lib", os.path.join("include", "posenc", "posenc.hpp"))
EXTS = (".c", ".cpp", ".h", ".hpp", ".py", ".pyi")
WINDOW = 6


def lists(text):
    out = {}
    for macro, _, _, _ in LISTS:
        m = re.search(r"#define %s\(X\)(.*?)(?:\n\s*\n|\Z)" % macro, text, re.S)
        out[macro] = re.findall(r"X\((\w+),\s*(\w+)[,)]", m.group(1)) if m else []
    return out


def files(root):
    for top in SCAN:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            yield top
            continue
        for dirpath, _, names in os.walk(path):
            if os.path.relpath(dirpath, root).startswith(os.path.join("python", "tests")):
                continue  # the tests are the independent side: they may spell everything out
            for name in sorted(names):
                if name.endswith(EXTS):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def check(root):
    bad = []
    table = lists(read(root, "lib/setup/enum_lists.hpp") + "\n\n" + read(root, "lib/setup/rope_types.hpp"))
    header, wrapper = read(root, "include/posenc/posenc.h"), read(root, "include/posenc/posenc.hpp")
    for macro, prefix, c_enum, cpp_enum in LISTS:
        entries = table[macro]
        if not entries:
            bad.append("lib/setup/enum_lists.hpp: no %s" % macro)
            continue
        m = re.search(r"typedef enum %s \{(.*?)\} %s;" % (c_enum, c_enum), header, re.S)
        body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S) if m else ""
        got = re.findall(r"\b(%s\w+)\s*=\s*(\d+)" % prefix, body)
        want = [("%s%s" % (prefix, e), str(k)) for k, (e, _) in enumerate(entries)]
        if got != want:
            bad.append("posenc.h: %s is %s, lib/setup/enum_lists.hpp says %s" % (c_enum, got, want))
        m = re.search(r"enum class %s : int \{(.*?)\};" % cpp_enum, wrapper, re.S)
        body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S) if m else ""
        got = [n.rstrip("_") for n in re.findall(r"^\s*(\w+)\s*=", body, re.M)]
        if got != [n for _, n in entries]:
            bad.append("posenc.hpp: enum class %s is %s, lib/setup/enum_lists.hpp says %s" %
                       (cpp_enum, got, [n for _, n in entries]))
    # hand-written lists of the names
    for rel in files(root):
        if rel in (os.path.join("lib", "setup", "enum_lists.hpp"), os.path.join("lib", "setup", "rope_types.hpp")):
            continue
        lines = read(root, rel).split("\n")
        for macro, _, c_enum, _ in LISTS:
            names = {n for _, n in table[macro]}
            need = max(2, math.ceil(0.6 * len(names)))
            literal = re.compile(r"[\"'](%s)[\"']\s*[,)}\]:]" % "|".join(
                sorted(names | {n.replace("_", "-") for n in names}, key=len, reverse=True)))
            found = [set(x.replace("-", "_") for x in literal.findall(line)) for line in lines]
            for i in range(len(lines)):
                seen = set().union(*found[i:i + WINDOW])
                if len(seen) >= need:
                    bad.append("%s:%d: a hand-written list of %s names (%s): ask the library" %
                               (rel, i + 1, c_enum, ", ".join(sorted(seen))))
                    break
    return bad, "%d enumerations, %d problems" % (len(LISTS), len(bad))


if __name__ == "__main__":
    checks.run(check, __doc__)
