#!/usr/bin/env python3
"""Holds every place that names a rope type's parameters to its one definition, lib/setup/rope_types.hpp.

    check_rope_types.py ROOT           the check (meson test rope-types)
    check_rope_types.py ROOT --table   prints docs/rope.md's table "One row per rope type" as the definition gives it

Fails (one line per problem, exit status 1) when, for a row X(ENUM, name, summary, fields, accepted, transformers,
elsewhere, aliases) of POSENC_ROPE_TYPE_LIST,
  - docs/rope.md's table "One row per rope type" has no row for the type, a row that differs from the definition, or
    a row for a type the list does not have; or docs/rope.md has no paragraph that names the type in bold (its
    formula, "Every scheme" or "vLLM's schemes");
  - no file of lib/setup/schemes/ defines `const Family kFamily<ENUM>` (its refusals, frequencies and attention),
    or more than one does, or one defines a family for a type the list does not have;
  - tests/test_rope_init.cpp never names POSENC_ROPE_TYPE_<ENUM> (its MPFR test);
  - a key of `fields` is not one of the `posenc` tool's scaling options (cli/rope.cpp's params()), the tool's
    help (cli/help.cpp) names other rope types for an option than those whose fields hold its key, or its
    --rope-type does not name the type;
  - the `transformers` keys are not among the fields and accepted keys (posenc.torch reads what transformers reads
    through posenc.rope_init).
The C enum is tools/check_enum_lists.py's. docs/architecture.md, "Add a RoPE scheme".
"""
import os
import re
import sys

from checks import read, run

DEF = "lib/setup/rope_types.hpp"
COLUMNS = ("summary", "fields", "accepted", "transformers", "elsewhere", "aliases")


def args_of(call):
    """The arguments of X(...) as strings: identifiers as they are, adjacent string literals joined."""
    out, cur, i = [], [], 0
    while i < len(call):
        c = call[i]
        if c == '"':
            j = i + 1
            while call[j] != '"':
                j += 2 if call[j] == "\\" else 1
            cur.append(("s", call[i + 1:j]))
            i = j + 1
            continue
        if c == ",":
            out.append(cur)
            cur = []
        elif not c.isspace():
            m = re.match(r"\w+", call[i:])
            cur.append(("w", m.group(0)))
            i += len(m.group(0))
            continue
        i += 1
    out.append(cur)
    return ["".join(v for _, v in a) for a in out]


def rows(root):
    text = read(root, DEF).replace("\\\n", "\n")
    m = re.search(r"#define POSENC_ROPE_TYPE_LIST\(X\)(.*?)(?://\s*clang-format on|\Z)", text, re.S)
    body = m.group(1) if m else ""
    out = []
    for call in re.finditer(r"\bX\(((?:[^()\"]|\"(?:[^\"\\]|\\.)*\")*)\)", body):
        a = args_of(call.group(1))
        out.append(dict(zip(("enum", "name") + COLUMNS, a)))
    return out


def keys(s):
    return s.split()


def cell(s):
    return ", ".join("`%s`" % k for k in keys(s)) or "-"


def table(defs):
    lines = ["| type | formula | fields it reads (dict keys) | further keys taken | transformers reads | refused "
             "(another runtime's) | aliases |", "|---|---|---|---|---|---|---|"]
    for r in defs:
        hf = "(not a transformers type)" if r["transformers"] == "-" else cell(r["transformers"])
        lines.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r["summary"], cell(r["fields"]), cell(r["accepted"]), hf, cell(r["elsewhere"]),
            cell(r["aliases"])))
    return lines


def help_blocks(text):
    """The option blocks of `posenc rope`'s help: option -> its lines (the option's line and its continuations)."""
    start = text.find("posenc rope (")
    blocks, cur = {}, None
    for line in text[start:].splitlines():
        if re.match(r"\s{4}--", line):
            head = re.split(r"\S\s{2,}", line.strip() + "  ", maxsplit=1)[0]  # "--short-mscale M, --long-mscale M"
            cur = re.findall(r"--[\w-]+", head)
            for o in cur:
                blocks[o] = [line]
        elif cur and re.match(r"\s{10,}\S", line):
            for o in cur:
                blocks[o].append(line)
        else:
            cur = None
    return blocks


def check(root):
    bad = []
    defs = rows(root)
    if not defs:
        return ["%s: no POSENC_ROPE_TYPE_LIST rows" % DEF], "rope types: none"
    names = [r["name"] for r in defs]

    doc = read(root, "docs/rope.md")
    m = re.search(r"^### One row per rope type\n(.*?)(?=^### |\Z)", doc, re.S | re.M)
    got = [l for l in (m.group(1).splitlines() if m else []) if l.startswith("|")]
    want = table(defs)
    if not m:
        bad.append("docs/rope.md: no section \"### One row per rope type\" (check_rope_types.py ROOT --table prints it)")
    elif got != want:
        for line in want:
            if line not in got:
                bad.append("docs/rope.md: the table lacks the definition's row: %s" % line)
        for line in got:
            if line not in want:
                bad.append("docs/rope.md: a table row the definition does not give: %s" % line)
    for n in names:
        if "**%s**" % n not in doc:
            bad.append("docs/rope.md: no paragraph names **%s** (its formula)" % n)

    families = {}
    sdir = os.path.join(root, "lib", "setup", "schemes")
    for name in sorted(os.listdir(sdir)) if os.path.isdir(sdir) else []:
        for enum in re.findall(r"\bconst Family kFamily(\w+)\b", read(root, "lib/setup/schemes/" + name)):
            families.setdefault(enum, []).append("lib/setup/schemes/" + name)
    tests = read(root, "tests/test_rope_init.cpp")
    for r in defs:
        where = families.pop(r["enum"], [])
        if len(where) != 1:
            bad.append("lib/setup/schemes/: %s defines kFamily%s (its refusals, frequencies and attention): %s" % (
                "no file" if not where else "more than one file", r["enum"], ", ".join(where)))
        if not re.search(r"\bPOSENC_ROPE_TYPE_%s\b" % r["enum"], tests):
            bad.append("tests/test_rope_init.cpp: never names POSENC_ROPE_TYPE_%s (its MPFR test)" % r["enum"])
        if r["transformers"] != "-":
            extra = set(keys(r["transformers"])) - set(keys(r["fields"])) - set(keys(r["accepted"]))
            if extra:
                bad.append("%s: %s: transformers reads %s, which posenc's scheme neither reads nor takes" % (
                    DEF, r["name"], ", ".join(sorted(extra))))

    for enum, where in sorted(families.items()):
        bad.append("%s: kFamily%s, a family of no rope type of %s" % (", ".join(where), enum, DEF))

    cli = read(root, "cli/rope.cpp")
    options = dict((k, o) for o, k in re.findall(r'\{"(--[\w-]+)", "(\w+)"', cli))
    for r in defs:
        for k in keys(r["fields"]):
            if k not in options:
                bad.append("cli/rope.cpp: no scaling option for %s's field %s" % (r["name"], k))
    blocks = help_blocks(read(root, "cli/help.cpp"))
    listed = " ".join(blocks.get("--rope-type", []))
    for n in names:
        if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(n), listed):
            bad.append("cli/help.cpp: --rope-type does not name %s" % n)
    for key, option in sorted(options.items()):
        readers = {r["name"] for r in defs if key in keys(r["fields"])}
        block = " ".join(blocks.get(option, []))
        if not block:
            bad.append("cli/help.cpp: no help for %s" % option)
            continue
        # "default" is also the help's word for a default value; no scaling option applies to the default type
        said = {n for n in names if n != "default" and re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(n), block)}
        if "every type but default" in block:
            said = set(names) - {"default"}
        if said != readers:
            bad.append("cli/help.cpp: %s names %s; the definitions that read %s: %s" % (
                option, sorted(said), key, sorted(readers)))
    return bad, "rope types: %d definitions, %d options; %d problems" % (len(defs), len(options), len(bad))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == "--table":
        print("\n".join(table(rows(sys.argv[1]))))
        sys.exit(0)
    run(check, __doc__)
