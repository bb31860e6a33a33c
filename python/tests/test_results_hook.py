"""conftest.py itself: the POSENC_RESULTS lines that tools/test_summary.py counts, and the `isa` fixture's
restoring of the path that was active. Runs pytest on a small test file, in a child process, with a copy of
this directory's conftest.py."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import posenc

HERE = pathlib.Path(__file__).resolve().parent

SAMPLE = '''
import pytest
import posenc

def test_ok(): pass
def test_fail(): assert False
def test_skip(): pytest.skip("not here")
@pytest.fixture
def broken(): raise RuntimeError("setup")
def test_setup_error(broken): pass
@pytest.mark.parametrize("v", ['a"b'])
def test_quoted(v): pass
def test_isa(isa):
    assert posenc.active_isa() == isa
def test_after_isa():
    assert posenc.active_isa() == posenc.Isa.SCALAR  # what the run forced before the isa tests
'''


def test_results_lines_and_isa_restore(tmp_path):
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    results = tmp_path / "results.jsonl"
    env = dict(os.environ, POSENC_RESULTS=str(results), POSENC_ISA="scalar")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sample.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr  # test_fail and test_setup_error fail
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    got = {d["name"]: d["result"] for d in lines}
    want = {
        "pytest test_sample.py::test_ok": "OK",
        "pytest test_sample.py::test_fail": "FAIL",
        "pytest test_sample.py::test_skip": "SKIP",
        "pytest test_sample.py::test_setup_error": "FAIL",
        'pytest test_sample.py::test_quoted[a"b]': "OK",
        "pytest test_sample.py::test_after_isa": "OK",
    }
    for isa in posenc.available_isas():
        want[f"pytest test_sample.py::test_isa[{posenc.isa_name(isa)}]"] = "OK"
    assert got == want, p.stdout
    assert len(lines) == len(want)  # one line per test
    tool = HERE.parents[1] / "tools" / "test_summary.py"
    if not tool.exists():  # tests run outside the source tree
        return
    summary = subprocess.run([sys.executable, str(tool), str(results)], capture_output=True, text=True)
    n_ok = sum(v == "OK" for v in want.values())
    assert f"tests: {n_ok} passed, 2 failed" in summary.stdout
