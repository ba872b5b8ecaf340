"""Timing helpers shared by the benchmarks: best of several repeats (the machines are noisy)."""

from __future__ import annotations

import time

import numpy as np


def best_of(fn, repeats: int) -> float:
    """Smallest wall time [s] of ``repeats`` calls of ``fn``."""
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def per_call_us(fn, args_list, repeats: int) -> float:
    """Best-of-``repeats`` mean time [µs] of ``fn(*args)`` over ``args_list`` (a Python loop)."""
    def loop():
        for args in args_list:
            fn(*args)
    return best_of(loop, repeats) / len(args_list) * 1e6


def wait_for_kernels() -> None:
    """Wait until the numba kernels that are loading in the background (threads named
    ``robokin_ros accel``, started by a first large batch) are ready, so that no compilation
    competes with what is timed next."""
    import threading
    for thread in threading.enumerate():
        if thread.name == "robokin_ros accel":
            thread.join()


def interleaved(timers: dict, rounds: int) -> dict:
    """Best wall time [s] of each ``timers[key] = (setup, fn, count)`` over ``rounds`` rounds,
    divided by ``count``: every round runs each ``fn`` once (after its ``setup``, untimed), so
    all of them get the same chances at a shared machine's quiet moments."""
    best = dict.fromkeys(timers, np.inf)
    for _ in range(rounds):
        for key, (setup, fn, _) in timers.items():
            setup()
            t = time.perf_counter()
            fn()
            best[key] = min(best[key], time.perf_counter() - t)
    return {key: best[key] / timers[key][2] for key in timers}
