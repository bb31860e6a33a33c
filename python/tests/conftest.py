"""Shared fixtures of the posenc Python tests, and the CI results hook.

- `isa`: parametrised over posenc.available_isas(); forces that path for the test and restores the path that
  was active before (so every test using it runs once per SIMD path of this machine and build).
- POSENC_RESULTS: when this environment variable names a file, one JSON line per test is appended to it,
  {"name": "pytest <nodeid>", "result": "OK" | "FAIL" | "SKIP"}, the format of scripts/deps.sh's
  posenc_record that tools/test_summary.py counts (SKIP counts as neither passed nor failed).
"""
import json
import os

import pytest

import posenc


def _isa_id(isa):
    return posenc.isa_name(isa)


@pytest.fixture(params=posenc.available_isas(), ids=_isa_id)
def isa(request):
    before = posenc.active_isa()
    posenc.force_isa(request.param)
    assert posenc.active_isa() == request.param
    try:
        yield request.param
    finally:
        try:
            posenc.force_isa(before)
        except posenc.Unsupported:  # POSENC_ISA named a path that is not available: nothing to restore to
            pass


# ---- POSENC_RESULTS ----------------------------------------------------------------------------------------

_outcomes = {}


def _verdict(report):
    if report.failed:
        return "FAIL"
    if report.skipped:
        return "SKIP"
    return "OK"


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    # setup, call and teardown each report; the worst one decides (a failed teardown fails a passed test)
    rank = {"OK": 0, "SKIP": 1, "FAIL": 2}
    v = _verdict(report)
    if report.when == "call" and hasattr(report, "wasxfail"):
        v = "SKIP" if report.skipped else "FAIL"  # an expected failure counts as neither; a strict XPASS fails
    prev = _outcomes.get(report.nodeid)
    if prev is None or rank[v] > rank[prev]:
        _outcomes[report.nodeid] = v


def pytest_runtest_logfinish(nodeid, location):
    result = _outcomes.pop(nodeid, None)
    path = os.environ.get("POSENC_RESULTS")
    if not path or result is None:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"name": "pytest " + nodeid, "result": result}) + "\n")


def pytest_collectreport(report):
    # a test module that cannot even be collected (an import error) is a failure the summary must see
    path = os.environ.get("POSENC_RESULTS")
    if path and report.failed:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": "pytest " + (report.nodeid or "collection"), "result": "FAIL"}) + "\n")
