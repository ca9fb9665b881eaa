"""Data parallel across hosts, simulated with real networking: 2 ranks in 2
network namespaces (scripts/netns_cluster.sh), talking TCP over veth and a
bridge, train exactly like 1 process with accumulation 2; a rank killed, or
its host's link set down, ends the job with an error within a bound instead
of hanging it.
Skips when namespaces cannot be made (not root, no `ip netns`) or
gpt2lab was built without MPI. The cluster is named after this process
(g2l<pid>) and taken down at the end, also on failure, a timeout or SIGTERM;
one left by a test that was killed outright is taken down by the next."""
import glob
import os
import shutil
import signal
import subprocess
import time

import pytest

import harness
from harness import BIN, SOURCE, read_metrics
from shards import make_dataset

CLUSTER = os.path.join(SOURCE, "scripts", "netns_cluster.sh")
STATE = "/run/gpt2lab-netns"
MPIRUN = shutil.which("mpirun")
NAME = f"g2l{os.getpid()}"

MODEL = ["--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--block-size", "32", "--vocab-size", "97"]
COMMON = MODEL + ["-B", "4", "-T", "32", "--lr", "3e-3", "--warmup", "2", "--eval-every", "0", "--eval-batches", "1",
                  "--grad-clip", "1.0", "--quiet", "--threads", "1", "--shuffle"]
ENV = {"OMP_NUM_THREADS": "1"}
BOUND_S = 60  # a failure must end the job within this (a hang guard, not a speed check)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def take_down_stale():
    """Clusters of earlier runs of this test whose process is gone."""
    for path in glob.glob(os.path.join(STATE, "g2l[0-9]*")):
        pid = os.path.basename(path)[3:]
        if pid.isdigit() and not alive(int(pid)):
            harness.command([CLUSTER, "down", "--name", os.path.basename(path)])


def mpirun(name, data, out, *extra):
    """The argv of a 2-rank training run launched from host 0 of the cluster."""
    with open(os.path.join(STATE, name, "mpirun")) as f:
        options = f.read().split()
    return [CLUSTER, "exec", "0", "--name", name, "--", MPIRUN, *options, "-np", "2", "-x", "OMP_NUM_THREADS=1",
            BIN, "train", "--data", data, "--out", out, *COMMON, *extra]


def rank_pids(name, host):
    """The gpt2lab processes running in host HOST of the cluster."""
    pids = harness.command(["ip", "netns", "pids", f"{name}-{host}"]).stdout.split()
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "gpt2lab":
                    found.append(int(pid))
        except OSError:
            pass
    return found


def trains(out):
    """True once rank 0 has written a train row (a line may be half written)."""
    try:
        return any(r.get("kind") == "train" for r in read_metrics(out))
    except (OSError, ValueError):
        return False


def fail_midway(name, data, out, break_it):
    """Starts a long run, breaks it once it trains (break_it()), and returns
    (ended in time, exit code, seconds to end, stderr)."""
    p = subprocess.Popen(mpirun(name, data, out, "--steps", "1000000", "--comm-timeout", "4"),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **ENV})
    harness.wait_until(p, lambda: trains(out), "the 2-host run training", every=0.1)
    broke = p.poll() is None and break_it()
    t0 = time.time()
    try:
        _, err = p.communicate(timeout=BOUND_S)
        ended = True
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        ended = False
    return broke and ended, p.returncode, time.time() - t0, err


def kill_rank(name):
    pids = rank_pids(name, 1)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return bool(pids)


def cut_link(name):
    return harness.command(["ip", "-n", f"{name}-1", "link", "set", "eth0", "down"]).returncode == 0


def skip_without_namespaces():
    if not MPIRUN or "libmpi" not in harness.command(["ldd", BIN]).stdout:
        pytest.skip("gpt2lab is built without MPI (cmake -DGPT2LAB_MPI=ON with Open MPI installed)")
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("network namespaces need root and iproute2's `ip`")
    probe = f"g2lprobe{os.getpid()}"
    if harness.command(["ip", "netns", "add", probe]).returncode != 0:
        pytest.skip("this machine does not allow network namespaces (ip netns add failed)")
    harness.command(["ip", "netns", "del", probe])


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)  # runs the fixture's finally


def take_down():
    harness.command([CLUSTER, "down", "--name", NAME], timeout=60)


@pytest.fixture(scope="module")
def cluster():
    """The 2-host cluster's name, taken down at the end (also on failure or SIGTERM)."""
    skip_without_namespaces()
    take_down_stale()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        harness.command([CLUSTER, "up", "2", "--name", NAME], check=True, timeout=60)
        yield NAME
    finally:
        take_down()


@pytest.fixture(scope="module")
def data(cluster, tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("data")), 97, n_train=20000, n_val=2000)


@pytest.fixture(scope="module")
def ref(data, tmp_path_factory):
    ref = str(tmp_path_factory.mktemp("ref") / "ref")
    harness.run("train", "--data", data, "--out", ref, *COMMON, "--steps", "3", "--accum", "2", env=ENV, timeout=120,
                check=True)
    return ref


@pytest.mark.parametrize("zero", ["0", "1"])
def test_two_hosts_equal_one_process_with_accumulation(cluster, data, ref, tmp, zero):
    out = os.path.join(tmp, "hosts" + zero)
    r = harness.command(mpirun(cluster, data, out, "--steps", "3", "--zero", zero, "--bucket-mb", "0.005"), env=ENV,
                        timeout=120)
    if r.returncode != 0:
        print(r.stderr[-3000:])
    assert r.returncode == 0, f"2 ranks in 2 namespaces train (ZeRO-{zero}; exit {r.returncode})"
    a = [x for x in read_metrics(ref) if x.get("kind") == "train"]
    b = [x for x in read_metrics(out) if x.get("kind") == "train"]
    w = max(abs(x["loss"] - y["loss"]) / x["loss"] for x, y in zip(a, b)) if len(a) == len(b) else float("inf")
    assert len(b) == 3 and w <= 1e-5, (f"2 hosts{' + ZeRO-1' if zero == '1' else ''} = 1 process with accum 2 "
                                       f"(worst loss rel diff {w:.1e})")


@pytest.fixture(scope="module")
def rank_killed(cluster, data, tmp_path_factory):
    return fail_midway(cluster, data, str(tmp_path_factory.mktemp("killed") / "killed"), lambda: kill_rank(cluster))


def test_killed_rank_ends_the_job(rank_killed):
    ok, rc, secs, _ = rank_killed
    assert ok and rc != 0, f"rank 1 killed on host 1: the job ends in {secs:.1f} s with exit {rc}"


def test_mpirun_says_a_rank_died(rank_killed):
    err = rank_killed[3]
    assert "signal" in err.lower() or "exited" in err.lower() or "abort" in err.lower(), "mpirun says a rank died"


@pytest.fixture(scope="module")
def link_cut(cluster, data, tmp_path_factory):
    return fail_midway(cluster, data, str(tmp_path_factory.mktemp("cut") / "cut"), lambda: cut_link(cluster))


def test_cut_link_ends_the_job(link_cut):
    ok, rc, secs, _ = link_cut
    assert ok and rc != 0, f"host 1's link set down: the job ends in {secs:.1f} s with exit {rc}"


def test_rank_says_which_collective_did_not_complete(link_cut):
    err = link_cut[3]
    assert "has not completed after" in err and "--comm-timeout" in err, \
        ("a rank says which collective did not complete, and why: " +
         next((line for line in err.splitlines() if "gpt2lab: rank" in line), "(no such line)"))


def test_cluster_is_taken_down(cluster):
    # Last in the file: the fixture's own teardown then finds nothing to do.
    take_down()
    left = [ns for ns in harness.command(["ip", "netns", "list"]).stdout.split() if ns.startswith(NAME + "-")]
    assert not left and not os.path.exists(os.path.join(STATE, NAME)), \
        f"the cluster is taken down ({len(left)} namespaces left)"
