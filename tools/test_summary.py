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


def failures(entry, f):
    """Lines naming a failing entry: its name, result, time against its timeout, and Catch2's failing cases."""
    name = entry.get("name", "?")
    took, limit = entry.get("duration"), entry.get("timeout")
    when = f" after {took:.1f} s" if isinstance(took, (int, float)) else ""
    if isinstance(limit, (int, float)) and limit > 0:
        when += f" (timeout {limit} s)"
    lines = [f"FAILED {name}: {entry.get('result', '?')}{when}, {f} case(s)"]
    out = entry.get("stdout", "") or ""
    # Catch2 prints the failing test case's name after a line of dashes, before its location
    for m in re.finditer(r"-{20,}\n(.+?)\n-{20,}\n(\S+:\d+)", out):
        lines.append(f"  case: {m.group(1).strip()} ({m.group(2)})")
    if len(lines) == 1 and out:
        lines += ["  " + l for l in out.strip().splitlines()[-5:]]
    return lines


def main(paths):
    passed = failed = 0
    named = []
    for path in paths:
        p = f = 0
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                entry = json.loads(line)
                a, b = count(entry)
                p, f = p + a, f + b
                if b:
                    named += failures(entry, b)
        print(f"{path}: {p} passed, {f} failed")
        passed, failed = passed + p, failed + f
    # the failures again, last, where a log's tail shows them
    for line in named:
        print(line)
    print(f"tests: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
