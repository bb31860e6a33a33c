#!/usr/bin/env python3
"""Keeps the API reference in step with the public headers, both ways:
every public symbol of the headers (type, function, enum value, macro, struct field, public member) must
appear in the reference's code (inline `code` or a fenced block), and every posenc name the reference's
code mentions must still exist in a header.

    check_api_doc.py docs/api.md include/posenc/posenc.h include/posenc/posenc.hpp

A small scanner, not a C++ parser: it follows braces to know whether it is at namespace scope, in a class
(and which access section), in an enum, or in a body it skips (function bodies, namespace detail).
C++ names are reported qualified (posenc::spec::with_base); the reference may drop the leading posenc::.
Constructors and operators are covered by their class's entry.
"""
import re
import sys

IDENT = r"[A-Za-z_]\w*"
# Names the reference may use that are not header symbols: the environment variable, the CMake target
# and the variables of the CMake package.
NOT_SYMBOLS = {"POSENC_ISA", "posenc::posenc", "posenc_DIR", "posenc_VERSION", "posenc_FOUND", "POSENC_NO_VISIBILITY"}
# The headers' linkage brackets (posenc.h): read as nothing, like the extern "C" { } they expand to.
BRACKETS = re.compile(r"\bPOSENC_(?:BEGIN|END)_DECLS\b")


def strip_comments_and_strings(text):
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)
    return pattern.sub(lambda m: '""' if m.group(0)[0] in "\"'" else " ", text)


def strip_templates(stmt):
    """Drops `template <...>` heads (balanced angle brackets) so the declaration itself remains."""
    out = stmt
    while True:
        m = re.search(r"\btemplate\s*<", out)
        if not m:
            return out
        depth, i = 1, m.end()
        while i < len(out) and depth:
            depth += {"<": 1, ">": -1}.get(out[i], 0)
            i += 1
        out = out[:m.start()] + out[i:]


def macros(text):
    guards = set(re.findall(r"^\s*#\s*ifndef\s+(" + IDENT + ")", text, re.M))
    # a macro the header itself #undefs after use is its own helper, not part of the API
    local = set(re.findall(r"^\s*#\s*undef\s+(" + IDENT + ")", text, re.M))
    return {n for n in re.findall(r"^\s*#\s*define\s+(" + IDENT + ")", text, re.M) if n not in guards | local}


def declared_name(stmt):
    """The function name of a declaration or definition head, or None for operators."""
    m = re.search(r"(" + IDENT + r")\s*\(", strip_templates(stmt))
    return None if not m or m.group(1) == "operator" else m.group(1)


class Scope:
    def __init__(self, kind, qual="", owner="", access="public", c_struct=False):
        self.kind, self.qual, self.owner, self.access, self.c_struct = kind, qual, owner, access, c_struct

    def collects(self):
        return self.kind == "ns" or (self.kind == "class" and self.access == "public")


def symbols(path):
    raw = open(path, encoding="utf-8").read()
    found = set(macros(raw))
    text = BRACKETS.sub(" ", re.sub(r"^\s*#[^\n]*", " ", strip_comments_and_strings(raw), flags=re.M))
    stack = [Scope("ns")]
    stmt = ""

    def name_of(n):
        return stack[-1].qual + n

    for ch in text:
        top = stack[-1]
        if ch == ":" and top.kind == "class" and stmt.strip() in ("public", "private", "protected"):
            top.access, stmt = stmt.strip(), ""
            continue
        if ch == "{":
            head = strip_templates(" ".join(stmt.split())).strip()
            ns = re.match(r"namespace\s+(" + IDENT + ")", head)
            enum = re.match(r"(?:typedef\s+)?enum\s+(?:class\s+|struct\s+)?(" + IDENT + ")", head)
            cls = re.match(r"(typedef\s+)?(struct|class)\s+(" + IDENT + ")", head)
            if head.startswith('extern ""'):
                stack.append(Scope("ns", top.qual))
            elif ns:
                kind = "skip" if ns.group(1) == "detail" else "ns"
                stack.append(Scope(kind, top.qual + ns.group(1) + "::"))
            elif enum and top.collects():
                found.add(name_of(enum.group(1)))
                scoped = re.match(r"(?:typedef\s+)?enum\s+(?:class|struct)\b", head)
                stack.append(Scope("enum", top.qual + enum.group(1) + "::" if scoped else top.qual))
            elif cls and top.collects():
                found.add(name_of(cls.group(3)))
                c_struct = bool(cls.group(1))
                stack.append(Scope("class", top.qual + cls.group(3) + "::", cls.group(3),
                                   "private" if cls.group(2) == "class" else "public", c_struct))
            else:
                if "(" in head and top.collects():
                    n = declared_name(head)
                    # `rope rope::llama2(...) {`: a member defined out of its class (posenc::rope::llama2)
                    member = n and re.search("(" + IDENT + r")\s*::\s*" + re.escape(n) + r"\s*\(", head)
                    if member:
                        found.add(name_of(member.group(1) + "::" + n))
                    elif n and n != top.owner:
                        found.add(name_of(n))
                stack.append(Scope("skip"))
            stmt = ""
        elif ch == "}":
            if top.kind == "enum":
                for item in stmt.split(","):
                    m = re.match(r"\s*(" + IDENT + ")", item)
                    if m:
                        found.add(top.qual + m.group(1))
            stack.pop()
            stmt = ""
        elif ch == ";":
            head = " ".join(stmt.split())
            if top.collects() and head:
                using = re.match(r"using\s+(" + IDENT + r")\s*=", strip_templates(head).strip())
                if using:
                    found.add(name_of(using.group(1)))
                elif "(" in head:
                    n = declared_name(head)
                    if n and n != top.owner and not head.startswith("friend"):
                        found.add(name_of(n))
                elif top.kind == "class":  # a public data member; C struct fields are named bare
                    m = re.search(r"(" + IDENT + r")\s*(?:=.*)?$", head)
                    if m:
                        found.add(m.group(1) if top.c_struct else name_of(m.group(1)))
            stmt = ""
        else:
            stmt += ch
    return found


def code_text(markdown):
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", markdown, re.S | re.M)
    rest = re.sub(r"^```[^\n]*\n.*?^```", " ", markdown, flags=re.S | re.M)
    return "\n".join(fenced + re.findall(r"`([^`\n]+)`", rest))


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    code = code_text(open(argv[1], encoding="utf-8").read())
    public = set()
    for header in argv[2:]:
        names = symbols(header)
        if not names:
            sys.exit(f"{header}: no public symbols found; the scanner no longer understands it")
        public |= names

    def mentioned(name):
        forms = [name] + ([name[len("posenc::"):]] if name.startswith("posenc::") else [])
        return any(re.search(r"(?<![\w:.])" + re.escape(f) + r"(?!\w)", code) for f in forms)

    undocumented = sorted(n for n in public if not mentioned(n))
    known = public | {n[len("posenc::"):] for n in public if n.startswith("posenc::")} | NOT_SYMBOLS
    used = set(re.findall(r"(?<![\w:.])((?:posenc|POSENC)_\w+|posenc::\w+(?:::\w+)*)", code))
    stale = sorted(n for n in used if n not in known)
    for n in undocumented:
        print(f"undocumented: {n}")
    for n in stale:
        print(f"in {argv[1]} but in no header: {n}")
    print(f"{len(public)} public symbols, {len(undocumented)} undocumented, {len(stale)} stale")
    return 1 if undocumented or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
