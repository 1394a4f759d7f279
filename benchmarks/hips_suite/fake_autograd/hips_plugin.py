"""pytest plugin for the HIPS suite: one record per check_grads case and per test, written as JSON."""

import json
import os

import pytest

from autograd import test_util

TESTS = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    test_util.CURRENT["test"] = item.nodeid
    start = len(test_util.RECORD)
    result = yield          # re-raises what the test raised
    failed = [r for r in test_util.RECORD[start:] if r.get("outcome") == "fail"]
    if failed:
        # The cases ran to the end; the test fails on its first failed case.
        raise AssertionError(f"{len(failed)} case(s) failed: {failed[0]['cause']}")
    return result


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        entry = {"test": report.nodeid, "outcome": report.outcome, "cause": ""}
        if report.outcome == "failed":
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["message"] = crash.message if crash is not None else str(report.longrepr)[:500]
        TESTS.append(entry)


def pytest_sessionfinish(session):
    path = os.environ.get("HIPS_SUITE_RECORD")
    if path:
        with open(path, "w") as f:
            json.dump({"cases": test_util.RECORD, "tests": TESTS}, f, indent=1)
