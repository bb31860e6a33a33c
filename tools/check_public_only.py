#!/usr/bin/env python3
"""Holds the integrations, the Python binding, the command-line tool and the examples to the public headers.

    check_public_only.py ROOT

Every C or C++ file (.c .cc .cpp .h .hpp) under integrations/, python/, cli/ and examples/ must reach the
library through include/posenc/ only: an #include of a file of lib/ (by its name, as the build's include path
lets it be written, or by a path through lib/) or a mention of posenc::detail (or `using namespace
posenc::detail`) is reported with its line, and the check exits 1. What such a file needs becomes public
(docs/architecture.md, "Public headers only"). Tests and benchmarks may reach inside.
"""
import os
import re

import checks

DIRS = ("integrations", "python", "cli", "examples")
EXTS = (".c", ".cc", ".cpp", ".h", ".hpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
DETAIL = re.compile(r"\bposenc\s*::\s*detail\b")


def check(root):
    lib_dir = os.path.join(root, "lib")
    lib = set()  # each file of lib/ as the build's include path lets it be written: "setup/freq.hpp"
    for dirpath, _, names in os.walk(lib_dir):
        lib.update(os.path.relpath(os.path.join(dirpath, n), lib_dir).replace(os.sep, "/") for n in names)
    bad, files = [], 0
    for top in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(EXTS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                files += 1
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for no, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if m:
                            inc = m.group(1)
                            through_lib = "lib/" in inc.replace("\\", "/") and not inc.startswith("posenc/")
                            # a file of lib/ by its path below lib/ (the build puts lib/ on the include path),
                            # unless the including directory has a file of that path itself
                            inside = inc in lib and not os.path.exists(os.path.join(dirpath, inc))
                            if through_lib or inside:
                                bad.append("%s:%d: includes %s, a file of lib/" % (rel, no, inc))
                        if DETAIL.search(line.split("//")[0]):
                            bad.append("%s:%d: names posenc::detail" % (rel, no))
    return bad, "%d files, %d uses of the library's internals" % (files, len(bad))


if __name__ == "__main__":
    checks.run(check, __doc__)
