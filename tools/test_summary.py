#!/usr/bin/env python3
"""Counts test cases across meson test logs and prints the closing line "tests: N passed, M failed".

A Catch2 binary contributes its test cases (from its summary line); any other test counts as one case.
A run that fails without a Catch2 summary (crash, timeout) counts as one failure; skipped runs (exit 77)
count as neither.
usage: test_summary.py testlog.json [testlog.json ...]
"""
import json
import re
import sys

ALL_PASSED = re.compile(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)")
MIXED = re.compile(r"test cases:\s+(\d+)\s+\|\s+(\d+) passed\s+\|\s+(\d+) failed")
ONLY_FAILED = re.compile(r"test cases:\s+(\d+)\s+\|\s+(\d+) failed")


def count(entry):
    result = entry.get("result", "")
    if result == "SKIP":
        return 0, 0
    out = entry.get("stdout", "") or ""
    m = ALL_PASSED.search(out)
    if m:
        cases = int(m.group(2))
        return (cases, 0) if result == "OK" else (cases, 1)
    m = MIXED.search(out)
    if m:
        return int(m.group(2)), int(m.group(3))
    m = ONLY_FAILED.search(out)
    if m:
        return 0, int(m.group(2))
    return (1, 0) if result == "OK" else (0, 1)


def main(paths):
    passed = failed = 0
    for path in paths:
        p = f = 0
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                a, b = count(json.loads(line))
                p, f = p + a, f + b
        print(f"{path}: {p} passed, {f} failed")
        passed, failed = passed + p, failed + f
    print(f"tests: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
