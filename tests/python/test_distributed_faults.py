"""hccl reliability: a failed collective (peer killed, peer hung, per-call timeout, mismatched numel /
dtype / reduce op / root, transport mismatch, DDP with a dying peer) never hands back stale data. Under
HCCL_ASYNC_ERROR_HANDLING=1 (the default, as torch_npu) or 3 the survivor exits non-zero within the
timeout + 5 s naming rank, op, sequence number and cause; under 0 or 2 it raises a typed error at
Work.wait(), the future, torch.npu.synchronize() or the next collective, and reading the output raises.
Nothing is left in /dev/shm afterwards."""
import re

import pytest

from dist_launch import launch, shm_leftovers

EXEC_TIMEOUT = 5
DIST_ERRORS = ("DistBackendError", "DistNetworkError")


def result(out):
    m = re.search(r"RESULT (\S+) ([\d.]+)(?: :: (.*))?", out)
    assert m, out[-3000:]
    return m.group(1), float(m.group(2)), m.group(3) or ""


def readback(out):
    m = re.search(r"READBACK (.*)", out)
    assert m, out[-3000:]
    return m.group(1)


def run(scenario, mode, extra=None, world=2, timeout=90):
    env = {"HCCL_EXEC_TIMEOUT": str(EXEC_TIMEOUT)}
    if mode is not None:
        env["HCCL_ASYNC_ERROR_HANDLING"] = str(mode)
    env.update(extra or {})
    return launch("fault_worker.py", world, args=[scenario], timeout=timeout, env=env)


def assert_raised(out, kind=DIST_ERRORS, words=()):
    """The survivor raised a typed error naming what happened, and its output did not read back."""
    k, secs, msg = result(out)
    assert k in kind, out[-3000:]
    assert secs <= EXEC_TIMEOUT + 5, (secs, msg)
    for w in words:
        assert re.search(w, msg), (w, msg)
    assert readback(out).startswith("raised"), out[-2000:]
    return msg


def assert_torn_down(rc, out, words=()):
    """The survivor exited non-zero, printing rank, op, sequence number and cause, and read nothing back."""
    assert rc == 1, (rc, out[-3000:])
    m = re.search(r"\[hccl\] rank (\d+): hccl: (\w+) #(\d+) on rank \d+ failed \(([^)]*)\)", out)
    assert m, out[-3000:]
    assert "RESULT" not in out and "READBACK" not in out, out[-2000:]
    for w in words:
        assert re.search(w, out), (w, out[-2000:])


@pytest.mark.parametrize("scenario, mode", [(s, 0) for s in ("killed", "future", "event", "kill", "nonblock")] +
                         [("killed", 2), ("future", 2)])
def test_dead_peer_raises_and_nothing_reads_back(scenario, mode):
    res = run(scenario, mode)
    assert res[1][0] == -9
    # synchronize, Event.synchronize and the next collective raise DistBackendError; wait() and the future
    # the typed error (DistNetworkError for a peer gone)
    msg = assert_raised(res[0][1], kind=("DistBackendError",) if scenario in ("killed", "event", "nonblock") else DIST_ERRORS)
    assert re.search(r"rank 1|unusable|timed out", msg), msg
    assert not shm_leftovers()


@pytest.mark.parametrize("mode", [None, 1, 3])
@pytest.mark.parametrize("scenario", ["killed", "future"])
def test_dead_peer_tears_the_survivor_down(scenario, mode):
    res = run(scenario, mode)
    assert_torn_down(res[0][0], res[0][1], words=[r"allreduce #\d+", r"rank 1"])
    assert not shm_leftovers()


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_dead_peer_blocking_wait(transport):
    # HCCL_BLOCKING_WAIT reports the error to wait() (and turns the tear-down off, as NCCL's does)
    res = run("kill", None, {"HCCL_BLOCKING_WAIT": "1", "NPU_SIM_HCCL_TRANSPORT": transport})
    assert res[1][0] == -9
    msg = assert_raised(res[0][1])
    assert "rank 1" in msg or "timed out" in msg
    assert not shm_leftovers()


def test_dead_peer_is_a_network_error_naming_op_seq_and_peer():
    # the future (as Work.wait()) carries the typed error; synchronize reports the device's DistBackendError
    res = run("future", 0)
    assert_raised(res[0][1], kind=("DistNetworkError",), words=[r"allreduce #\d+ on rank 0", r"peer gone", r"rank 1"])


@pytest.mark.parametrize("mode", [0, None])
def test_hung_peer_times_out(mode):
    res = run("hang", mode)
    if mode is None:
        assert_torn_down(res[0][0], res[0][1], words=[r"timeout", r"waiting for rank 1"])
    else:
        assert_raised(res[0][1], kind=("DistBackendError",), words=[r"timed out", r"waiting for rank 1", r"#\d+"])


def test_per_call_timeout_is_honoured():
    # the process group's timeout and HCCL_EXEC_TIMEOUT are long; the call's own 2 s decides
    res = run("percall", 0, {"HCCL_EXEC_TIMEOUT": "60"})
    k, secs, msg = result(res[0][1])
    assert k == "DistBackendError" and "timed out" in msg, msg
    assert secs < 6, secs
    assert readback(res[0][1]).startswith("raised")


@pytest.mark.parametrize("scenario, words", [
    ("numel", [r"numel=10", r"numel=12"]),
    ("dtype", [r"mismatch"]),
    ("op", [r"reduce_op=0", r"reduce_op=\d"]),
    ("root", [r"root=0", r"root=1"]),
])
def test_desync_fails_every_rank(scenario, words):
    res = run(scenario, 0)
    for rc, out in res:
        msg = assert_raised(out, kind=("DistBackendError",), words=[r"desync|mismatch"] + words)
        assert "desync" in msg or "size mismatch" in msg
    assert not shm_leftovers()


@pytest.mark.parametrize("scenario", ["op", "root"])
def test_desync_tears_down_by_default(scenario):
    res = run(scenario, None)
    for rc, out in res:
        assert_torn_down(rc, out, words=[r"desync"])


def test_transport_mismatch_names_it():
    res = launch("fault_worker.py", 2, args=["numel"], timeout=60,
                 rank_env=lambda r: {"NPU_SIM_HCCL_TRANSPORT": "tcp"} if r == 1 else {})
    for rc, out in res:
        assert rc != 0
        assert "transport mismatch" in out and "NPU_SIM_HCCL_TRANSPORT" in out, out[-2000:]
    assert not shm_leftovers()


def test_p2p_recv_from_dead_peer():
    res = run("p2p_killed", 0)
    assert_raised(res[0][1])


@pytest.mark.parametrize("mode", [0, None])
def test_ddp_with_a_dying_peer_never_steps_on_a_partial_gradient(mode):
    res = run("ddp_kill", mode)
    rc, out = res[0]
    assert "STEP 2 done" in out and "STEP 3 done" not in out, out[-3000:]
    if mode is None:
        assert_torn_down(rc, out)
    else:
        k, _, msg = result(out)
        assert k in DIST_ERRORS, out[-3000:]


def test_bad_error_handling_value_is_refused():
    res = run("numel", 7)
    for rc, out in res:
        assert "HCCL_ASYNC_ERROR_HANDLING='7'" in out, out[-2000:]


def test_rank_killed_during_setup_leaves_no_shm_segment():
    # rank 1 dies with its segment created and not yet unlinked; rank 0 fails after HCCL_CONNECT_TIMEOUT
    # and unlinks what the dead rank left
    res = launch("fault_worker.py", 2, args=["numel"], timeout=60, env={"HCCL_CONNECT_TIMEOUT": "3"},
                 rank_env=lambda r: {"NPU_SIM_FAULT_HCCL_SETUP": "kill"} if r == 1 else {})
    assert res[1][0] == -9
    assert res[0][0] != 0 and "HCCL_CONNECT_TIMEOUT" in res[0][1], res[0][1][-2000:]
    assert not shm_leftovers()
