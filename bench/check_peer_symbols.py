#!/usr/bin/env python3
"""The ODR trap, checked on the benchmark's archives (the peers' per-ISA units and libposenc.a).

An externally visible code symbol (global, weak or unique) defined by objects built for different ISAs
would be merged by the linker into one copy, built with one ISA's flags, that every other ISA then runs.
The ISA of an object is read from its name (avx2, avx512, neon; otherwise baseline).

usage: check_peer_symbols.py ARCHIVE...
"""
import os
import re
import subprocess
import sys

ALLOWED = {"DW.ref.__gxx_personality_v0"}


def isa_of(obj):
    m = re.search(r"(avx512|avx2|neon)", obj)
    return m.group(1) if m else "baseline"


def main(archives):
    where = {}
    for archive in archives:
        # nm reads thin archives (meson's default for uninstalled libraries) too; -A names the member
        out = subprocess.run(["nm", "-A", "--defined-only", archive], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():  # archive:member:address type name
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TWVu" and parts[2] not in ALLOWED:
                obj = os.path.basename(parts[0].rsplit(":", 2)[1])
                where.setdefault(parts[2], set()).add((obj, isa_of(obj)))
    bad = {s: w for s, w in where.items() if len({isa for _, isa in w}) > 1}
    for sym, w in sorted(bad.items()):
        print("FAIL: %s defined for several ISAs: %s" % (sym, ", ".join(sorted(o for o, _ in w))))
    print("checked %d symbols in %d archives" % (len(where), len(archives)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
