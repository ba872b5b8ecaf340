"""The Runtime (issue 38): settings, per-context use, threads from the cores free now, notices."""

from __future__ import annotations

import logging
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros.errors import ArgumentError
from robokin_ros.free_cores import FreeCores, available_cores, runnable_others
from robokin_ros.kernels import parallel
from robokin_ros.runtime import Notice, Runtime, current_runtime, default_runtime, settings_from_environment, using

UR5E = pathlib.Path(rk.__file__).resolve().parent / "robots" / "ur5e.urdf"


@pytest.mark.parametrize("text, others", [("0.5 0.4 0.3 1/99 123", 0), ("2.0 1.0 0.5 3/120 9", 2),
                                           ("1.0 1.0 1.0 7/70 1\n", 6), ("garbage", None), ("1 2 3 x/y 4", None)])
def test_runnable_others_reads_the_fourth_field_less_the_reader(text, others):
    assert runnable_others(text) == others


def _loadavg(tmp_path, running: int) -> str:
    path = tmp_path / "loadavg"
    path.write_text(f"1.00 1.00 1.00 {running}/100 4242\n")
    return str(path)


def test_free_cores_leave_out_those_other_processes_run_on(tmp_path):
    cores = available_cores()
    assert FreeCores(_loadavg(tmp_path, 1)).now() == cores            # only the reader runs
    assert FreeCores(_loadavg(tmp_path, 1 + cores)).now() == 1          # every core held: one thread
    assert FreeCores(_loadavg(tmp_path, 1 + 3 * cores)).now() == 1      # never fewer than one
    assert FreeCores(_loadavg(tmp_path, 1 + cores)).now(own=cores) == cores   # our own threads are not others
    assert FreeCores(str(tmp_path / "absent")).now() == cores          # a machine that does not tell


class _Readings(FreeCores):
    """A machine whose ``/proc/loadavg`` readings are ``texts``, one after another."""

    def __init__(self, texts):
        super().__init__("/proc/loadavg")
        self._readable, self.texts, self.read = True, list(texts), 0

    def _read(self):
        self.read += 1
        return self.texts.pop(0)


@pytest.mark.skipif(available_cores() < 2, reason="one core: nothing to share")
def test_a_reading_that_shows_another_thread_is_taken_again_once():
    """A thread just woken on the reader's core (one of the process's own ending a call) is gone
    after a yield; a process holding another core is in both readings; a quiet reading is not
    taken again."""
    cores, quiet, other = available_cores(), "0 0 0 1/90 1", "0 0 0 2/90 1"
    passing = _Readings([other, quiet])
    assert passing.now() == cores and passing.read == 2
    holding = _Readings([other, other])
    assert holding.now() == cores - 1 and holding.read == 2
    nobody = _Readings([quiet])
    assert nobody.now() == cores and nobody.read == 1


@pytest.mark.skipif(available_cores() < 2, reason="one core: nothing to share")
def test_the_workers_of_every_runtime_of_the_process_are_its_own(tmp_path):
    """Another runtime's worker threads running now are this process's, not another process's:
    a call on one runtime right after a call on another kept all its threads (counted per
    runtime, a quiet machine looked busy to it)."""
    for thread in default_runtime().running_background():   # (an earlier test's compile: its own too)
        thread.join()
    cores = available_cores()
    mine, theirs = Runtime(), Runtime()
    before = mine._resources.own.count
    # The reader, this process's threads counted now, and one more runnable:
    mine._resources.free_cores = FreeCores(_loadavg(tmp_path, 2 + before))
    assert mine.thread_count() == cores - 1
    started, release = threading.Event(), threading.Event()
    try:
        with theirs.alongside(1, lambda: (started.set(), release.wait(60))):
            assert started.wait(60)
            assert mine._resources.own.count == before + 1
            assert mine.thread_count() == cores   # the one more is theirs: this process's
    finally:
        release.set()
    assert mine._resources.own.count == before   # (the call is over: its worker no more)
    assert mine.thread_count() == cores - 1
    theirs.close()


def test_the_default_runtime_is_made_in_a_fresh_process():
    """Making the process default takes the process-wide state's lock too (it once waited for
    itself there)."""
    code = "import robokin_ros.runtime as r; print(r.default_runtime().settings.threads)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ROBOKIN_THREADS": "2"})
    assert done.returncode == 0 and done.stdout.strip() == "2", done.stderr


def test_a_runtime_on_a_busy_machine_runs_a_batch_on_one_thread(tmp_path):
    """The runtime takes its free cores from the sampler; on a machine whose other processes hold
    every core, a batched call runs on the calling thread alone (and gives the same bits)."""
    busy = Runtime()
    busy._resources.free_cores = FreeCores(_loadavg(tmp_path, 1 + available_cores()))
    assert busy.thread_count() == 1 and busy.thread_count(8) == 1
    model = rk.RobotModel.from_urdf_file(UR5E)
    rk.prepare(model)   # (the robot's own kernel for both calls: no tier swap between them)
    q = model.random_configuration(5000, np.random.default_rng(3))
    calls = []
    with using(busy):
        assert current_runtime() is busy and parallel.thread_count() == 1
        busy_result = rk.forward_kinematics(model, q)
        parallel.run_chunks(5000, lambda start, stop: calls.append((start, stop)), chunk_rows=100, min_rows=1)
    assert calls == [(0, 5000)]   # one chunk: the calling thread alone
    np.testing.assert_array_equal(busy_result, rk.forward_kinematics(model, q))


def test_settings_are_checked_by_name():
    with pytest.raises(ArgumentError, match="kind"):
        Runtime(kind="fast")
    with pytest.raises(ArgumentError, match="threads"):
        Runtime(threads=0)
    with pytest.raises(ArgumentError, match="accelerated"):
        Runtime(accelerated="yes")
    with pytest.raises(ArgumentError, match="compile_after"):
        Runtime(compile_after=-1)
    with pytest.raises(ArgumentError, match="speed"):
        Runtime().replaced(speed=2)
    with pytest.raises(ArgumentError, match="runtime"):
        with using("generic"):
            pass


def test_the_default_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ROBOKIN_THREADS", "3")
    monkeypatch.setenv("ROBOKIN_ACCEL", "off")
    settings = settings_from_environment()
    assert settings.threads == 3 and settings.accelerated is False
    monkeypatch.delenv("ROBOKIN_THREADS")
    monkeypatch.delenv("ROBOKIN_ACCEL")
    assert settings_from_environment().threads is None and settings_from_environment().accelerated is True
    assert isinstance(default_runtime(), Runtime)


def test_using_is_per_thread_and_reaches_the_threads_a_call_starts():
    mine = Runtime(kind="generic", accelerated=False, threads=2)
    seen_by_workers, seen_elsewhere = [], []
    with using(mine):
        inside = current_runtime()
        with mine.alongside(2, lambda: seen_by_workers.append(current_runtime())):
            pass
        other = threading.Thread(target=lambda: seen_elsewhere.append(current_runtime()))
        other.start()
        other.join()
    mine.close()
    assert inside is mine and current_runtime() is not mine
    assert seen_elsewhere == [default_runtime()]
    for _ in range(200):   # the pool's tasks finish on their own
        if len(seen_by_workers) == 2:
            break
        threading.Event().wait(0.01)
    assert seen_by_workers == [mine, mine]


def test_use_shares_the_resources_and_changes_only_what_it_names():
    base = Runtime(threads=2)
    with base.use(kind="generic") as derived:
        assert derived.kind == "generic" and derived.settings.threads == 2
        assert derived._resources is base._resources
        assert current_runtime() is derived
    assert base.kind == "generated"


def test_compile_notices_are_logged_and_sent_once_per_burst(caplog):
    runtime = Runtime()
    got: list[Notice] = []
    logging.getLogger("robokin_ros.compile").propagate = True
    with caplog.at_level(logging.INFO, logger="robokin_ros.compile"), runtime.subscribed(got.append):
        with runtime.compiling("arm"):
            with runtime.compiling("arm"):
                pass
    assert [n.started for n in got] == [True, False, False]
    assert got[1].running == 1 and "1 still compiling (about" in got[1].line()   # progress: one left
    assert got[2].kernels == 2 and got[2].running == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "robokin_ros.compile"]
    assert len(lines) == 2 and "compiling kernels for arm" in lines[0] and "compiled 2 kernels for arm" in lines[1]


def test_background_compiles_off_start_nothing():
    started = []
    assert Runtime(background_compiles=False).start_background(lambda: started.append(1)) is None
    runtime = Runtime()
    assert runtime.stop_background(1.0)
    assert runtime.start_background(lambda: started.append(1)) is None   # stopped
    runtime.resume_background()
    thread = runtime.start_background(lambda: started.append(current_runtime()))
    thread.join(5)
    assert started == [runtime]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_results_are_bit_identical_for_every_thread_count(threads):
    model = rk.RobotModel.from_urdf_file(UR5E)
    rk.prepare(model, dynamics=("rnea",))   # (the robot's own kernels: no tier changes between the calls)
    q = model.random_configuration(parallel.MIN_PARALLEL_ROWS * 2 + 77, np.random.default_rng(5))
    with using(Runtime(threads=1)):
        one = rk.forward_kinematics(model, q)
        tau_one = rk.rnea(model, q, q, q)
    with using(Runtime(threads=threads, share_cores=False)):
        many = rk.forward_kinematics(model, q)
        tau_many = rk.rnea(model, q, q, q)
    np.testing.assert_array_equal(one, many)
    np.testing.assert_array_equal(tau_one, tau_many)
