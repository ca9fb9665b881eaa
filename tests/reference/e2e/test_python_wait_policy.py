"""`import gpt2lab` makes OpenMP's threads wait passively, as the CLI does
(spinning threads beside any other busy process make decoding much
slower), unless the user chose: a set OMP_WAIT_POLICY, or GOMP_SPINCOUNT,
is left alone. The policy has to be in the environment before the OpenMP
runtime loads (with the extension), so the package's __init__ sets it; the
runtime's own report (OMP_DISPLAY_ENV=VERBOSE, libgomp) shows it took.

Each case is a fresh interpreter. Skips (77) when the module was not built.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402
from harness import expect  # noqa: E402

MODULE_DIR = os.environ.get("GPT2LAB_PY_MODULE_DIR", "")
if not MODULE_DIR:
    harness.skip("the Python module is not built here (pybind11 missing, or a sanitizer build)")

PROBE = "import os, gpt2lab; print(repr(os.environ.get('OMP_WAIT_POLICY')))"


def imported(**env_set):
    """(OMP_WAIT_POLICY after `import gpt2lab`, the spin count libgomp
    reports or None) in a fresh interpreter whose environment has none of
    the two variables except those given."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_set, PYTHONPATH=MODULE_DIR, OMP_DISPLAY_ENV="VERBOSE")
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    expect(r.returncode == 0,
           f"import gpt2lab with {env_set or 'nothing set'}" + ("" if r.returncode == 0 else f" ({r.stderr[-300:]!r})"))
    spin = [line.split("=", 1)[1].strip().strip("'") for line in r.stderr.splitlines()
            if line.strip().startswith("GOMP_SPINCOUNT =")]
    return r.stdout.strip(), spin[0] if spin else None


policy, spin = imported()
expect(policy == "'PASSIVE'", f"nothing set: import gpt2lab sets OMP_WAIT_POLICY=PASSIVE (got {policy})")
expect(spin in (None, "0"), f"nothing set: the OpenMP runtime waits passively, spin count 0 (got {spin})")
policy, spin = imported(OMP_WAIT_POLICY="active")
expect(policy == "'active'", f"OMP_WAIT_POLICY=active is left as the user set it (got {policy})")
expect(spin in (None, "30000000000"), f"OMP_WAIT_POLICY=active: the runtime spins (spin count {spin})")
policy, spin = imported(OMP_WAIT_POLICY="PASSIVE")
expect(policy == "'PASSIVE'", f"OMP_WAIT_POLICY=PASSIVE stays (got {policy})")
policy, spin = imported(GOMP_SPINCOUNT="10000")
expect(policy == "None", f"GOMP_SPINCOUNT set: no policy is added (got {policy})")
expect(spin in (None, "10000"), f"GOMP_SPINCOUNT=10000 is the runtime's spin count (got {spin})")
harness.finish("python wait policy")
