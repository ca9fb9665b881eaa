"""`import gpt2lab` makes OpenMP's threads wait passively, as the CLI does
(spinning threads beside any other busy process make decoding much
slower), unless the user chose: a set OMP_WAIT_POLICY, or GOMP_SPINCOUNT,
is left alone. The policy has to be in the environment before the OpenMP
runtime loads (with the extension), so the package's __init__ sets it; the
runtime's own report (OMP_DISPLAY_ENV=VERBOSE, libgomp) shows it took.

Each case is a fresh interpreter. Skips when the module was not built.
"""
import os
import subprocess
import sys

import pytest

MODULE_DIR = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")


@pytest.fixture(autouse=True)
def module_built(gpt2lab):
    """Skips where the module is not built (each case imports it afresh)."""


PROBE = "import os, gpt2lab; print(repr(os.environ.get('OMP_WAIT_POLICY')))"


def imported(**env_set):
    """(OMP_WAIT_POLICY after `import gpt2lab`, the spin count libgomp
    reports or None) in a fresh interpreter whose environment has none of
    the two variables except those given."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_set, PYTHONPATH=MODULE_DIR, OMP_DISPLAY_ENV="VERBOSE")
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, \
        f"import gpt2lab with {env_set or 'nothing set'}" + ("" if r.returncode == 0 else f" ({r.stderr[-300:]!r})")
    spin = [line.split("=", 1)[1].strip().strip("'") for line in r.stderr.splitlines()
            if line.strip().startswith("GOMP_SPINCOUNT =")]
    return r.stdout.strip(), spin[0] if spin else None


def test_nothing_set_means_passive():
    policy, spin = imported()
    assert policy == "'PASSIVE'", f"nothing set: import gpt2lab sets OMP_WAIT_POLICY=PASSIVE (got {policy})"
    assert spin in (None, "0"), f"nothing set: the OpenMP runtime waits passively, spin count 0 (got {spin})"


def test_active_policy_is_left_alone():
    policy, spin = imported(OMP_WAIT_POLICY="active")
    assert policy == "'active'", f"OMP_WAIT_POLICY=active is left as the user set it (got {policy})"
    assert spin in (None, "30000000000"), f"OMP_WAIT_POLICY=active: the runtime spins (spin count {spin})"


def test_passive_policy_stays():
    policy, spin = imported(OMP_WAIT_POLICY="PASSIVE")
    assert policy == "'PASSIVE'", f"OMP_WAIT_POLICY=PASSIVE stays (got {policy})"


def test_spin_count_set_adds_no_policy():
    policy, spin = imported(GOMP_SPINCOUNT="10000")
    assert policy == "None", f"GOMP_SPINCOUNT set: no policy is added (got {policy})"
    assert spin in (None, "10000"), f"GOMP_SPINCOUNT=10000 is the runtime's spin count (got {spin})"
