"""The yardstick: HIPS autograd's numpy tests, run unmodified against autograd_dag.

    python benchmarks/hips_suite/run.py [--source autograd-1.9.1.tar.gz | DIR] [--keep DIR]

Gets HIPS autograd's source distribution (``pip download --no-binary autograd
--no-deps autograd==1.9.1``, cached in benchmarks/hips_suite/.cache), copies
its tests/test_numpy.py, test_systematic.py, test_linalg.py,
test_binary_ops.py and test_core.py (with their numpy_utils.py and
conftest.py) unchanged into a temporary directory, puts the renaming layer
``fake_autograd/`` first on the path (``autograd.numpy`` → numpy dispatching to
autograd_dag, ``autograd.test_util.check_grads`` → ``ad.check_grads``,
``grad``/``value_and_grad`` → ours), runs pytest, and prints the count.

A *case* is one ``check_grads`` call (HIPS's combo checks make many per test
function); a test function that makes none is one case by itself.
Complex-valued cases are excluded from the count (autograd_dag refuses complex
numbers in differentiation on purpose) and reported separately. This is a
measurement, not a gate: ``make test`` does not run it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
VERSION = "1.9.1"
FILES = ["test_numpy.py", "test_systematic.py", "test_linalg.py", "test_binary_ops.py", "test_core.py",
         "numpy_utils.py", "conftest.py"]


def sdist(cache: pathlib.Path) -> pathlib.Path:
    found = sorted(cache.glob(f"autograd-{VERSION}.tar.gz"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", "autograd", "--no-deps",
                    f"autograd=={VERSION}", "-d", str(cache)], check=True)
    return sorted(cache.glob(f"autograd-{VERSION}.tar.gz"))[0]


def copy_tests(source: pathlib.Path, dest: pathlib.Path) -> None:
    dest.mkdir(parents=True)
    if source.is_dir():
        for name in FILES:
            shutil.copy(source / "tests" / name, dest / name)
        return
    with tarfile.open(source) as tar:
        for member in tar.getmembers():
            parts = pathlib.PurePosixPath(member.name).parts
            if len(parts) == 3 and parts[1] == "tests" and parts[2] in FILES:
                (dest / parts[2]).write_bytes(tar.extractfile(member).read())
    missing = [n for n in FILES if not (dest / n).exists()]
    if missing:
        raise SystemExit(f"{source}: no tests/{', tests/'.join(missing)}")


def run(tests: pathlib.Path, record: pathlib.Path) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE / "fake_autograd"), str(ROOT), env.get("PYTHONPATH", "")])
    env["HIPS_SUITE_RECORD"] = str(record)
    (tests / "pytest.ini").write_text("[pytest]\n")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "hips_plugin", "-p", "no:cacheprovider",
           "-p", "no:randomly", "--rootdir", str(tests), "-c", str(tests / "pytest.ini"), str(tests)]
    return subprocess.run(cmd, env=env, cwd=tests, stdout=subprocess.DEVNULL).returncode


def summarize(record: dict) -> None:
    cases = record["cases"]
    by_test = collections.defaultdict(list)
    for c in cases:
        by_test[c["test"]].append(c)
    units = list(cases)
    for t in record["tests"]:
        if t["test"] not in by_test:    # a test without check_grads calls is one case
            text = t.get("message", "")
            complex_ = "complex" in text or "real numbers only" in text
            units.append({"test": t["test"], "outcome": "pass" if t["outcome"] == "passed" else
                          "complex" if complex_ else "fail" if t["outcome"] == "failed" else "skipped",
                          "cause": "complex value" if complex_ else _short(text)})
        elif t["outcome"] == "failed" and not any(c["outcome"] == "fail" for c in by_test[t["test"]]):
            # The test failed outside its check_grads calls (its own assertion or setup).
            text = t.get("message", "")
            if "complex" not in text and "real numbers only" not in text:
                units.append({"test": t["test"], "outcome": "fail", "cause": "outside check_grads: " + _short(text)})
    count = collections.Counter(u["outcome"] for u in units)
    real = count["pass"] + count["fail"]
    print(f"HIPS autograd {VERSION} tests: {', '.join(FILES[:5])}")
    print(f"test functions: {len(record['tests'])} "
          f"({sum(t['outcome'] == 'passed' for t in record['tests'])} passed, "
          f"{sum(t['outcome'] == 'failed' for t in record['tests'])} failed, "
          f"{sum(t['outcome'] == 'skipped' for t in record['tests'])} skipped)")
    print(f"cases: {len(units)} total; {count['complex']} complex-valued (excluded); "
          f"{count['skipped']} skipped; {real} real-valued")
    print(f"real-valued cases passed: {count['pass']} / {real} = {100.0 * count['pass'] / max(real, 1):.1f} %")
    causes = collections.Counter(u["cause"] for u in units if u["outcome"] == "fail")
    if causes:
        print(f"failed: {count['fail']}, by cause:")
        for cause, n in causes.most_common():
            print(f"  {n:4d}  {cause}")
    per_file = collections.defaultdict(collections.Counter)
    for u in units:
        per_file[u["test"].split("::")[0].split("/")[-1]][u["outcome"]] += 1
    print("per file (pass / real-valued, complex excluded):")
    for name, c in sorted(per_file.items()):
        print(f"  {name:22s} {c['pass']:4d} / {c['pass'] + c['fail']:4d}   complex {c['complex']}")


def _short(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first[:100]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--source", type=pathlib.Path, help="autograd sdist (.tar.gz) or source directory")
    parser.add_argument("--keep", type=pathlib.Path, help="copy the run (tests, record.json) here")
    args = parser.parse_args()
    source = args.source or sdist(HERE / ".cache")
    with tempfile.TemporaryDirectory() as tmp:
        tests = pathlib.Path(tmp) / "tests"
        copy_tests(source, tests)
        record_path = pathlib.Path(tmp) / "record.json"
        run(tests, record_path)
        record = json.loads(record_path.read_text())
        if args.keep:
            shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
    summarize(record)


if __name__ == "__main__":
    main()
