"""The numba kernel cache is verified, not trusted: an edited or truncated module, garbage
compiled code, or a kernel that disagrees with numpy is rebuilt; nothing accumulates per model
in sys.modules; the cache directory is bounded."""

from __future__ import annotations

import gc
import glob
import os
import sys
import weakref

import numpy as np
import pytest

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.kernels import accel, selection
from robokin_ros.kernels.fk_codegen import compiled_fk

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def chain(length: float) -> RobotModel:
    """A small 2-DOF arm; ``length`` makes its generated source (and cache entry) distinct."""
    return RobotModel.from_urdf(
        f'<robot name="c"><link name="a"/><link name="b"/><link name="c"/>'
        f'<joint name="j1" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
        f'<origin xyz="0 0 {length}"/></joint>'
        f'<joint name="j2" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>'
        f'<origin xyz="{length} 0 0.1"/></joint></robot>')


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(accel, "enabled", True)
    accel._KERNELS.clear()
    return tmp_path


def expected_fk(model, q):
    with selection.use("generic"):
        return forward_kinematics(model, q)


def modules(folder) -> list[str]:
    return sorted(glob.glob(os.path.join(str(folder), "robokin_kernel_*.py")))


def test_edited_module_is_rebuilt(cache):
    model = chain(0.5)
    assert compiled_fk(model).accelerate()
    [path] = modules(cache)
    good = open(path).read()
    # still valid Python, but the kernel writes zeros
    zeros = good.split("    for b in range")[0] + "    out[:] = 0.0\n"
    open(path, "w").write(zeros)
    accel._KERNELS.clear()
    again = chain(0.5)
    with pytest.warns(RuntimeWarning, match="does not match its source; rebuilt"):
        assert compiled_fk(again).accelerate()
    q = np.random.default_rng(0).uniform(-3, 3, (300, 2))
    np.testing.assert_allclose(forward_kinematics(again, q), expected_fk(again, q), atol=1e-12)
    assert open(path).read() == good


def test_truncated_module_is_rebuilt(cache):
    model = chain(0.6)
    assert compiled_fk(model).accelerate()
    [path] = modules(cache)
    good = open(path).read()
    open(path, "w").write(good[: good.index("@numba.njit")])   # valid Python without a kernel
    accel._KERNELS.clear()
    with pytest.warns(RuntimeWarning, match="rebuilt"):
        assert compiled_fk(chain(0.6)).accelerate()
    assert open(path).read() == good


def test_garbage_compiled_code_is_never_used(cache):
    model = chain(0.7)
    assert compiled_fk(model).accelerate()
    for path in glob.glob(os.path.join(str(cache), "__pycache__", "*.nbc")):
        open(path, "wb").write(b"\x00garbage" * 100)
    accel._KERNELS.clear()
    again = chain(0.7)
    with pytest.warns(RuntimeWarning, match="failed to load .*; rebuilt"):
        assert compiled_fk(again).accelerate()   # rebuilt, not numpy forever
    q = np.random.default_rng(1).uniform(-3, 3, (300, 2))
    np.testing.assert_allclose(forward_kinematics(again, q), expected_fk(again, q), atol=1e-12)


def test_a_kernel_that_disagrees_with_numpy_is_not_used(cache, monkeypatch):
    model = chain(0.8)
    kernel = compiled_fk(model)
    monkeypatch.setattr(kernel, "flat", lambda q: [0.0] * kernel._flat_template.size)   # a wrong reference
    with pytest.warns(RuntimeWarning):
        assert not kernel.accelerate()
    assert kernel._accelerated is None
    assert modules(cache) == []   # the disagreeing entry was purged


def test_nothing_accumulates_in_sys_modules_and_models_are_freed(cache):
    before = {n for n in sys.modules if n.startswith("robokin_kernel_")}
    refs = []
    for k in range(4):
        model = chain(1.0 + k)
        assert compiled_fk(model).accelerate()
        refs.append(weakref.ref(model))
        del model
    gc.collect()
    assert {n for n in sys.modules if n.startswith("robokin_kernel_")} == before
    assert all(r() is None for r in refs)


def test_cache_directory_is_bounded(cache, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_MAX_ENTRIES", "2")
    for k in range(4):
        assert compiled_fk(chain(2.0 + k)).accelerate()
    assert len(modules(cache)) == 2
    names = {os.path.basename(p)[:-3] for p in modules(cache)}
    compiled = glob.glob(os.path.join(str(cache), "__pycache__", "*"))
    assert all(os.path.basename(p).split(".")[0] in names for p in compiled)
