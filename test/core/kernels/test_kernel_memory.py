"""The memory of compiled kernels is bounded (issue 33 item 12).

numba never frees loaded code (it keeps every module in LLVM's JIT engine), so the kernels of
every distinct robot a process saw stay; the process loads at most ``ROBOKIN_MAX_KERNELS``
distinct generated modules (:data:`robokin_ros.kernels.accel.MAX_MODULES`), further kernels
keep their numpy / float path. Reloading a robot already seen loads nothing new.
"""

from __future__ import annotations

import uuid
import warnings

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros.errors import KernelCheckError
from robokin_ros.kernels import accel

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def tiny_source() -> str:
    return f"# {uuid.uuid4().hex}\nimport numba\n\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1.0\n"


def test_the_module_cap_reads_the_environment(monkeypatch):
    monkeypatch.delenv("ROBOKIN_MAX_KERNELS", raising=False)
    assert accel.module_cap() == accel.MAX_MODULES
    monkeypatch.setenv("ROBOKIN_MAX_KERNELS", "7")
    assert accel.module_cap() == 7


def test_past_the_cap_a_new_module_is_refused_and_a_loaded_one_shared(accelerated, monkeypatch):
    first = tiny_source()
    f = accel.load_function(first, "f", [("f", (1.0,))])
    monkeypatch.setenv("ROBOKIN_MAX_KERNELS", str(accel.loaded_modules()))
    with pytest.raises(KernelCheckError, match="ROBOKIN_MAX_KERNELS"):
        accel.load_function(tiny_source(), "f", [("f", (1.0,))])
    assert accel.load_function(first, "f", [("f", (1.0,))]) is f


def arm(k: int) -> rk.RobotModel:
    """A 6-DOF arm whose lengths depend on ``k`` (distinct generated source per ``k``)."""
    table = [[0.0, np.pi / 2, 0.1 + 0.001 * k, 0.0], [0.4 + 0.001 * k, 0.0, 0.0, 0.0], [0.35, 0.0, 0.0, 0.0],
             [0.0, np.pi / 2, 0.1, 0.0], [0.0, -np.pi / 2, 0.09, 0.0], [0.0, 0.0, 0.08 + 0.001 * k, 0.0]]
    return rk.RobotModel.from_dh(table, limits=[[-3.0, 3.0]] * 6, name=f"arm{k}")


@pytest.mark.slow
def test_distinct_robots_past_the_cap_run_uncompiled_and_load_nothing(accelerated, monkeypatch):
    """Ten distinct generated robots with room for three more modules: the first three robots'
    FK kernels load, the others keep numpy (one warning each) and add no module; their results
    equal the compiled ones'; a robot seen before is accelerated again from the loaded module."""
    room = 3
    monkeypatch.setenv("ROBOKIN_MAX_KERNELS", str(accel.loaded_modules() + room))
    prepared = []
    q = np.random.default_rng(0).uniform(-3, 3, (5, 6))
    for k in range(10):
        model = arm(1000 + k)   # (not the bench's or another test's robots)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prepared.append(rk.prepare(model))
        assert prepared[-1] or any("ROBOKIN_MAX_KERNELS" in str(w.message) for w in caught)
        assert np.allclose(rk.forward_kinematics(model, q), rk.forward_kinematics(arm(1000 + k), q), atol=1e-12)
        del model
    assert prepared == [True] * room + [False] * (10 - room)
    assert accel.loaded_modules() <= accel.module_cap()
    assert rk.prepare(arm(1000))   # seen before: its module is shared, nothing new is loaded
