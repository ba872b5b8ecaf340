"""Background loads (:mod:`robokin_ros.kernels.lazy_accel`): :func:`stop_background_loads` waits
for a running load and holds new ones; :func:`resume_background_loads` lets them start again.

A stand-in kernel whose load blocks until the test releases it makes every step deterministic
(no numba, no wall-clock race: a blocked load is still running whatever the timeout)."""

from __future__ import annotations

import contextvars
import threading

import pytest

from robokin_ros.kernels import accel
from robokin_ros.kernels.lazy_accel import (
    LazyAccelerated,
    resume_background_loads,
    running_background_loads,
    stop_background_loads,
)


class BlockingKernel(LazyAccelerated):
    """Loads the string ``"compiled"`` once :attr:`release` is set."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()
        self.loads = 0

    def _load(self):
        self.loads += 1
        assert self.release.wait(600.0), "the test never released the load"
        return "compiled"


@pytest.fixture
def loads(run_with, monkeypatch):
    """Background loads possible (numba or not), from a batch of 4; resumed and drained afterwards."""
    monkeypatch.setattr(accel, "available", lambda: True)
    run_with(accelerated=True)
    run_with(compile_after=4)
    kernels: list[BlockingKernel] = []
    yield kernels
    for kernel in kernels:
        kernel.release.set()
    assert stop_background_loads(600.0)
    resume_background_loads()


def _kernel(kernels) -> BlockingKernel:
    kernels.append(BlockingKernel())
    return kernels[-1]


def test_stop_waits_for_a_running_load(loads):
    kernel = _kernel(loads)
    assert kernel._kernel(4) is None                 # started in the background, numpy meanwhile
    assert [t.name for t in running_background_loads()] == ["robokin_ros accel"]
    assert not stop_background_loads(0.0)            # blocked: still running after the wait
    kernel.release.set()
    assert stop_background_loads(600.0)              # ... until it ends
    assert running_background_loads() == [] and kernel._kernel(4) == "compiled"
    resume_background_loads()


def test_no_load_starts_while_stopped_and_loads_start_again_after_resume(loads):
    assert stop_background_loads(0.0)
    held = _kernel(loads)
    for _ in range(3):
        assert held._kernel(4) is None
    assert running_background_loads() == [] and held.loads == 0
    resume_background_loads()
    assert held._kernel(4) is None                   # the next call starts it
    assert len(running_background_loads()) == 1      # (blocked until released)
    held.release.set()
    assert stop_background_loads(600.0)
    assert held.loads == 1 and held._kernel(4) == "compiled"
    resume_background_loads()
    again = _kernel(loads)                           # a stop and a resume more: loads still start
    again.release.set()
    again._kernel(4)
    assert stop_background_loads(600.0) and again._kernel(4) == "compiled"
    resume_background_loads()


def test_a_kernel_starts_one_load_however_many_threads_ask(loads):
    kernel = _kernel(loads)
    # (each thread in a copy of this test's context: the runtime that loads after 4 configurations)
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(kernel._kernel, 4)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(running_background_loads()) == 1
    kernel.release.set()
    assert stop_background_loads(600.0) and kernel.loads == 1
    resume_background_loads()


def test_counted_calls_start_the_load_once_enough_configurations_went_through(loads):
    kernel = _kernel(loads)
    kernel.counts_calls = True
    for _ in range(3):
        kernel._kernel(1)
    assert running_background_loads() == [] and kernel.loads == 0
    kernel.release.set()
    kernel._kernel(1)                                # the 4th configuration
    assert stop_background_loads(600.0) and kernel.loads == 1 and kernel._accelerated == "compiled"
    resume_background_loads()

