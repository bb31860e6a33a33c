#!/usr/bin/env python3
"""A shared object that links posenc's static archive exports posenc's C ABI and none of its C++ internals
(docs/architecture.md, "Who may include what"; issue 31: a libllama linking posenc re-exported 300 of them).

usage: check_exports.py SHARED_OBJECT HEADER...
       check_exports.py SHARED_OBJECT --exactly NAME[,NAME...]

Every function the headers declare (a name posenc_... followed by "(") must be a defined dynamic symbol of the
shared object, and no defined dynamic symbol may belong to posenc's C++ namespaces (demangled "posenc::",
"posenc_ggml::") or be one of its internal C++ functions. With --exactly (a loadable module such as the ggml
backend, libggml-posenc.so): the defined dynamic symbols are exactly the names given. Prints the problems and
exits 1 if there are any.
"""
import re
import subprocess
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    so, headers = argv[1], argv[2:]
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", so], capture_output=True, text=True, check=True).stdout
    names = [line.split(None, 2)[2] for line in out.splitlines() if len(line.split(None, 2)) == 3]
    if headers[0] == "--exactly":
        want = set(headers[1].split(","))
        problems = ["exported but not wanted: " + n for n in sorted(set(names) - want)]
        problems += ["not exported: " + n for n in sorted(want - set(names))]
        for p in problems:
            print(p)
        print("check_exports: %d exported, %d problems" % (len(names), len(problems)))
        return 1 if problems else 0
    problems = []
    internal = [n for n in names if "posenc::" in n or "posenc_ggml::" in n]
    problems += ["exported C++ internal: " + n for n in internal]
    declared = set()
    for h in headers:
        with open(h) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        declared |= set(re.findall(r"\b(posenc_\w+)\s*\(", text))
    exported = set(names)
    problems += ["not exported: " + d for d in sorted(declared - exported)]
    for p in problems:
        print(p)
    print("check_exports: %d exported, %d of posenc's C functions, %d problems" %
          (len(names), len(declared & exported), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
