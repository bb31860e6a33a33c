#!/usr/bin/env python3
"""Holds lib/ to the ordered stack docs/architecture.md describes ("The layers", "Who may include what").

    check_layers.py ROOT

Fails (one line per problem, exit status 1) when
  - docs/architecture.md has no line "The stack, top to bottom: `a`, `b`, ..." or lib/'s folders are not
    exactly the layers it names;
  - a file of lib/ includes a file of a layer above its own ("up a layer"), or a file of the C++ wrapper
    (include/posenc/*.hpp: the wrapper sits above the C ABI), or a header the public C ABI does not have;
  - a unit built with the baseline flags (every layer but isa/, kernel/ and simd/) includes a file of simd/,
    a file of kernel/ other than job.hpp, or xsimd: the ODR trap of docs/architecture.md;
  - a vector intrinsic, a vector type or an intrinsics header appears outside lib/simd/ (lib/abi/fpenv.hpp
    may read and write the x86 control register, _mm_getcsr / _mm_setcsr of <xmmintrin.h>);
  - include/posenc/posenc.h includes other than <stdint.h> and posenc/parts.h, or parts.h other than
    <stdint.h> and posenc/posenc.h;
  - docs/architecture.md names a member `Type::member` (or `Type<S>::member`) that no struct or class Type of
    lib/ declares: a map that names code must name code that exists.
"""
import os
import re

from checks import read, run

STACK = re.compile(r"^The stack, top to bottom: (.*)\.$", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
BASELINE_MAY_KERNEL = {"kernel/job.hpp"}
PUBLIC_C = {"posenc/posenc.h", "posenc/parts.h"}
INTRINSIC = re.compile(r"\b(_mm\d*_\w+|__m(?:128|256|512)\w*|v\w+q_[fsu]\d+|float\d+x\d+_t|u?int\d+x\d+_t)\b|"
                       r"<(?:[a-z]*intrin\.h|arm_neon\.h)>")
FPENV = "lib/abi/fpenv.hpp"
FPENV_ALLOWED = {"_mm_getcsr", "_mm_setcsr", "<xmmintrin.h>"}
PUBLIC_INCLUDES = {"include/posenc/posenc.h": {"stdint.h", "posenc/parts.h"},
                   "include/posenc/parts.h": {"stdint.h", "posenc/posenc.h"}}
MEMBER = re.compile(r"`([A-Z]\w*)(?:<[^`>]*(?:<[^`>]*>)?[^`>]*>)?::(\w+)")


def code(text):
    """The text without its comments (// and /* */), so that a comment that names an intrinsic does not count."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def lib_files(root):
    for d, _, names in sorted(os.walk(os.path.join(root, "lib"))):
        for n in sorted(names):
            if n.endswith((".cpp", ".hpp", ".h")):
                yield os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")


def check(root):
    bad = []
    arch = read(root, "docs/architecture.md")
    m = STACK.search(arch)
    if not m:
        return ["docs/architecture.md: no line \"The stack, top to bottom: `a`, `b`, ....\""], "layers: no stack"
    stack = re.findall(r"`(\w+)`", m.group(1))
    rank = {name: i for i, name in enumerate(stack)}
    folders = sorted(d for d in os.listdir(os.path.join(root, "lib")) if os.path.isdir(os.path.join(root, "lib", d)))
    if sorted(stack) != folders:
        bad.append("docs/architecture.md: the stack %s is not lib/'s folders %s" % (stack, folders))

    files = list(lib_files(root))
    edges = 0
    for rel in files:
        layer = rel.split("/")[1]
        if layer not in rank:
            continue
        text = read(root, rel)
        for kind, inc in INCLUDE.findall(text):
            if kind == "<":
                if inc.startswith("xsimd") and layer not in ("simd",):
                    bad.append("%s: includes <%s>: xsimd belongs to lib/simd/" % (rel, inc))
                continue
            top = inc.split("/")[0]
            if top == "posenc":
                if inc not in PUBLIC_C:
                    bad.append("%s: includes %s: lib/ sees the public C headers only (%s), not the C++ wrapper "
                               "above the ABI" % (rel, inc, ", ".join(sorted(PUBLIC_C))))
                continue
            if top not in rank:
                if "/" in inc:
                    bad.append("%s: includes %s, of no layer of the stack" % (rel, inc))
                continue
            edges += 1
            if rank[top] < rank[layer]:
                bad.append("%s: includes %s: %s is above %s in the stack (%s)" % (rel, inc, top, layer,
                                                                                 " > ".join(stack)))
            if layer not in ("isa", "kernel", "simd"):
                if top == "simd" or (top == "kernel" and inc not in BASELINE_MAY_KERNEL):
                    bad.append("%s: includes %s: a baseline unit may include of kernel/ only %s, and nothing of "
                               "simd/ (the ODR trap)" % (rel, inc, ", ".join(sorted(BASELINE_MAY_KERNEL))))
        if layer != "simd":
            for hit in INTRINSIC.finditer(code(text)):
                word = hit.group(0)
                if rel == FPENV and word in FPENV_ALLOWED:
                    continue
                bad.append("%s: %s: vector intrinsics and their types belong to lib/simd/" % (rel, word))

    for rel, allowed in PUBLIC_INCLUDES.items():
        got = {inc for _, inc in INCLUDE.findall(read(root, rel))}
        if got != allowed:
            bad.append("%s: includes %s; docs/architecture.md says %s" % (rel, sorted(got), sorted(allowed)))

    sources = {rel: read(root, rel) for rel in files}
    cited = 0
    for typ, member in sorted(set(MEMBER.findall(arch))):
        holders = [t for t in sources.values() if re.search(r"\b(?:struct|class)\s+%s\b" % typ, t)]
        if not holders:
            bad.append("docs/architecture.md: `%s::%s`: lib/ has no struct or class %s" % (typ, member, typ))
            continue
        cited += 1
        decl = re.compile(r"\b%s\s*(?:\(|\{|=|;|<)|\b(?:struct|class|using)\s+%s\b" % (member, member))
        if not any(decl.search(code(t)) for t in holders):
            bad.append("docs/architecture.md: `%s::%s`: no file declaring %s declares %s" % (typ, member, typ, member))
    return bad, "layers: %d files, %d includes between layers, %d members named by the map; %d problems" % (
        len(files), edges, cited, len(bad))


if __name__ == "__main__":
    run(check, __doc__)
