"""What the repository checkers of tools/ share (check_citations.py, check_enum_lists.py, check_isa_list.py,
check_layers.py, check_rope_types.py, check_public_only.py): the one argument, the root of the repository, and the verdict, every problem on a line of
its own, then a line that counts them, exit status 1 when there is any. A meson test fails on that status
(tests/meson.build), so every checker ends the same way.
"""
import os
import sys


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        return fh.read()


def run(check, doc):
    """check(root) -> (problems, the counting line): prints them and exits 1 when there is any problem; with other
    than one argument, exits with doc (the checker's usage)."""
    if len(sys.argv) != 2:
        sys.exit(doc)
    bad, counted = check(sys.argv[1])
    for b in bad:
        print(b)
    print(counted)
    sys.exit(1 if bad else 0)
