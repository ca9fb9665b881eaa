"""What every reference test shares, as pytest fixtures and hooks.

Fixtures: `gpt2lab` (the built Python module, or a skip saying why it is
missing), `gpt2lab_gpt2` (the same, needing data/gpt2 too), `report`
(tools/report imported as `report`), `tiny_gpt2_model` and `tiny_server`
(a random model over GPT-2's tokens, and `gpt2lab serve` on it), `tmp`
(tmp_path as a string). Scratch folders are pytest's tmp_path (one test)
and tmp_path_factory (a module-scoped fixture that several tests read,
such as a trained model). The gpt2lab binary and the test tool come from
the environment ctest sets (harness.BIN, harness.TOOL).

Exit status as ctest reads it (SKIP_RETURN_CODE 77): a file whose tests all
skipped (a missing prerequisite: node, MPI, the fetched data outside CI)
exits 77, shown as skipped, never as passed; a failed test exits 1.
ctest gives each file a --basetemp of its own; it is removed unless a test
failed or GPT2LAB_KEEP_SCRATCH=1 is set.
"""
import os
import shutil

import pytest

import harness
import serve_util

_outcomes = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_configure(config):
    # ctest gives each file its own --basetemp (tests/CMakeLists.txt);
    # pytest makes that folder but not its parent.
    if config.option.basetemp:
        os.makedirs(os.path.dirname(os.path.abspath(config.option.basetemp)), exist_ok=True)


def _count(report):
    if report.outcome in _outcomes and (report.when == "call" or report.outcome != "passed"):
        _outcomes[report.outcome] += 1


def pytest_runtest_logreport(report):
    _count(report)


def pytest_collectreport(report):
    # A module-level skip (pytest.skip(allow_module_level=True)) is reported
    # at collection, not per test.
    if report.outcome != "passed":
        _count(report)


def pytest_sessionfinish(session, exitstatus):
    nothing_ran = not _outcomes["passed"] and not _outcomes["failed"]
    if nothing_ran and _outcomes["skipped"] and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = harness.SKIP
    # A --basetemp (ctest's) is removed when the file passed or skipped, as
    # the trained runs in it add up; it is kept for a look when a test
    # failed, and always with GPT2LAB_KEEP_SCRATCH=1.
    basetemp = session.config.option.basetemp
    if basetemp and session.exitstatus in (0, harness.SKIP) and not os.environ.get("GPT2LAB_KEEP_SCRATCH"):
        shutil.rmtree(basetemp, ignore_errors=True)


@pytest.fixture(scope="session")
def gpt2lab():
    """The built Python module (a skip where it is not built: pybind11
    missing, or a sanitizer build)."""
    return harness.gpt2lab_module(need_gpt2_data=False)


@pytest.fixture(scope="session")
def gpt2lab_gpt2():
    """The built Python module where GPT-2's tokenizer (data/gpt2) is there
    too (a skip without either, a failure without data/gpt2 under CI)."""
    return harness.gpt2lab_module()


@pytest.fixture(scope="session")
def report():
    """tools/report, imported as `report` the way its entry point does."""
    return harness.report_package()


@pytest.fixture(scope="module")
def tiny_gpt2_model(gpt2lab_gpt2, tmp_path_factory):
    """A random 1-layer checkpoint over GPT-2's 50257 tokens (seed 5): the
    model the sampler tests compare the CLI, Model and server on. Skips with
    gpt2lab_gpt2 (the server and Model need data/gpt2)."""
    model = str(tmp_path_factory.mktemp("tiny") / "tiny")
    harness.run("init", "--out", model, "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "64",
                "--vocab-size", "50257", "--seed", "5", check=True)
    return model


@pytest.fixture(scope="module")
def tiny_server(tiny_gpt2_model):
    """`gpt2lab serve --threads 1` on tiny_gpt2_model, for the module."""
    with serve_util.Server(tiny_gpt2_model, "--threads", "1") as srv:
        yield srv


@pytest.fixture
def tmp(tmp_path):
    """tmp_path as a string, for tests that join paths with os.path."""
    return str(tmp_path)
