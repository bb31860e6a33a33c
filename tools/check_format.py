#!/usr/bin/env python3
"""Fails when a C or C++ file of the formatted folders differs from what clang-format makes of it.

    check_format.py CLANG_FORMAT ROOT

The style is ROOT/.clang-format (Google's, 120 columns). The folders held to it are FOLDERS below; every
.c, .h, .cpp and .hpp file git tracks there (every such file, outside a git checkout) is run through
`CLANG_FORMAT --dry-run --Werror`, whose messages name the file and line of each difference. Fix with
`clang-format-14 -i FILE`. Exits 1 on any difference.
"""
import os
import subprocess
import sys

FOLDERS = ("lib", "include", "tests", "bench", "cli", "examples", "fuzz", "integrations", "python", "tools")
EXTS = (".c", ".h", ".cpp", ".hpp")


def files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--", *FOLDERS], check=True, capture_output=True,
                             text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [os.path.relpath(os.path.join(d, f), root) for top in FOLDERS
               for d, _, fs in os.walk(os.path.join(root, top)) for f in fs]
    return sorted(p for p in out if p.endswith(EXTS) and os.path.exists(os.path.join(root, p)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tool, root = sys.argv[1], sys.argv[2]
    names = files(root)
    res = subprocess.run([tool, "--dry-run", "--Werror", "--style=file"] + names, cwd=root, capture_output=True,
                         text=True)
    bad = sorted({line.split(":")[0] for line in res.stderr.splitlines() if ": error:" in line})
    sys.stderr.write(res.stderr[:20000])
    for b in bad:
        print("%s: not formatted (clang-format-14 -i %s)" % (b, b))
    print("%d files, %d not formatted" % (len(names), len(bad)))
    sys.exit(1 if res.returncode != 0 or bad else 0)


if __name__ == "__main__":
    main()
