"""The optional numba accelerator of the generated kernels equals the numpy recursions (the oracle).

The numba tests are skipped when numba is not installed; the fallback tests run everywhere.
Compiled code goes to a temporary cache directory, never to the user's.
"""

import functools
import glob
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import robokin_ros
from robokin_ros import RobotModel, forward_kinematics, jacobian
from robokin_ros.kernels import accel, disk_cache
from robokin_ros.kernels.fk_codegen import NUMPY, compiled_fk, compiled_frames
from robokin_ros.kernels.selection import use
from robokin_ros.kinematics import forward_kinematics_generic
from robokin_ros.kinematics.geometric_jacobians import frame_pose_and_jacobian

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
SMALL = [os.path.join(FIXTURES, f) for f in ("planar_2link.urdf", "prismatic_continuous_mimic.urdf", "branched.urdf")]
needs_numba = pytest.mark.skipif(not accel.available(), reason="numba is not installed (optional accelerator)")


def _numpy_fk(model, q, monkeypatch):
    with use(accelerated=False):
        return forward_kinematics(model, q)


@pytest.mark.slow   # compiles into an empty cache
@needs_numba
@pytest.mark.parametrize("path", SMALL + [os.path.join(ROBOTS, "ur5e.urdf")], ids=os.path.basename)
def test_accelerated_fk_equals_the_numpy_and_generic_kernels(path, accelerated, monkeypatch):
    model = RobotModel.from_urdf_file(path)
    kernel = compiled_fk(model)
    assert kernel.accelerate()
    q = model.random_configuration(37, rng=1)
    fast = kernel.batch(q)
    np.testing.assert_allclose(fast, forward_kinematics_generic(model, q), atol=1e-12, rtol=0)
    np.testing.assert_allclose(fast, _numpy_fk(model, q, monkeypatch), atol=1e-12, rtol=0)
    np.testing.assert_allclose(kernel.single(q[3]), fast[3], atol=1e-15, rtol=0)
    np.testing.assert_allclose(kernel.single(np.asfortranarray(q)[5]), fast[5], atol=1e-15, rtol=0)  # strided row
    # through the public API, with batch dimensions and a non-contiguous q
    q2 = model.random_configuration(12, rng=2).reshape(3, 4, model.n_q)[:, ::2]
    np.testing.assert_allclose(forward_kinematics(model, q2), forward_kinematics_generic(model, q2), atol=1e-12, rtol=0)


@pytest.mark.slow   # compiles into an empty cache
@needs_numba
def test_accelerated_jacobian_kernel_equals_numpy(accelerated, monkeypatch):
    model = RobotModel.from_urdf_file(os.path.join(ROBOTS, "twin_arm_torso.urdf"))
    frames = ("left_tool0", "camera_optical_frame")
    kernel = compiled_frames(model, frames)
    q = model.random_configuration(9, rng=3)
    with use(accelerated=False):   # the numpy oracle
        assert kernel.batch(q) is None
        expected = [frame_pose_and_jacobian(model, q, frame) for frame in frames]
        T_ref, J_ref = expected[0]
    assert kernel.accelerate()
    fast = kernel.batch(q)
    for k, (T_k, J_k) in enumerate(expected):
        np.testing.assert_allclose(fast[:, k, :4, :4], T_k, atol=1e-12, rtol=0)
        np.testing.assert_allclose(fast[:, k, 4:, :model.n_v], J_k, atol=1e-12, rtol=0)
    with use("generic"):
        J_generic = jacobian(model, q, frames[0])
    np.testing.assert_allclose(J_ref, J_generic, atol=1e-12, rtol=0)
    assert compiled_frames(model, (frames[0],)).accelerate()
    T, J = frame_pose_and_jacobian(model, q, frames[0])
    np.testing.assert_allclose(T, T_ref, atol=1e-12, rtol=0)
    np.testing.assert_allclose(J, J_generic, atol=1e-12, rtol=0)


@needs_numba
def test_a_large_batch_compiles_in_the_background_and_caches_on_disk(run_with, accelerated, monkeypatch):
    model = RobotModel.from_urdf_file(SMALL[0])
    kernel = compiled_fk(model)
    run_with(compile_after=8)
    kernel.batch(model.random_configuration(7, rng=0))
    assert kernel._compiling is None and kernel._accelerated is None  # below MIN_BATCH: numpy only
    q = model.random_configuration(8, rng=0)
    np.testing.assert_allclose(kernel.batch(q), forward_kinematics_generic(model, q), atol=1e-12, rtol=0)
    kernel._compiling.join()                      # compiled in the background meanwhile
    assert kernel._accelerated is not None
    np.testing.assert_allclose(kernel.batch(q[:3]), forward_kinematics_generic(model, q[:3]), atol=1e-12, rtol=0)
    modules = glob.glob(os.path.join(accelerated, "robokin_kernel_*.py"))
    assert modules
    for module in modules:
        with open(module) as f:
            assert "@numba.njit(cache=True" in f.read()
    assert glob.glob(os.path.join(accelerated, "__pycache__", "robokin_kernel_*.nbi"))  # numba's cache index


NEW_PROCESS = """
import sys
import numpy as np
from robokin_ros import RobotModel
from robokin_ros.kernels.fk_codegen import compiled_fk
from robokin_ros.kinematics import forward_kinematics_generic
model = RobotModel.from_urdf_file(sys.argv[1])
kernel = compiled_fk(model)
assert kernel.accelerate()
q = model.random_configuration(5, rng=0)
stats = kernel._accelerated.stats
print(np.abs(kernel.batch(q) - forward_kinematics_generic(model, q)).max(), sum(stats.cache_hits.values()),
      sum(stats.cache_misses.values()))
"""


@needs_numba
def test_a_new_process_loads_the_compiled_kernel_from_the_disk_cache(accelerated):
    path = SMALL[2]
    assert compiled_fk(RobotModel.from_urdf_file(path)).accelerate()  # compiled (and cached) here
    env = {**os.environ, "ROBOKIN_CACHE_DIR": accelerated, "ROBOKIN_ACCEL": "1",
           "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", NEW_PROCESS, path], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    error, hits, misses = run.stdout.split()
    assert float(error) <= 1e-12
    assert (int(hits), int(misses)) == (1, 0)  # numba loaded it from the cache: nothing compiled


@needs_numba
def test_disabling_the_accelerator_returns_to_numpy_even_once_loaded(run_with, accelerated, monkeypatch):
    model = RobotModel.from_urdf_file(SMALL[1])
    kernel = compiled_fk(model)
    assert kernel.accelerate()
    calls = []
    original = kernel._accelerated
    kernel._accelerated = lambda qb, out, claims: calls.append(qb.shape) or original(qb, out, claims)
    q = model.random_configuration(5, rng=4)
    kernel.batch(q)
    assert calls == [(5, model.n_q)]
    run_with(accelerated=False)
    # no compiled tier runs: the kernel answers None and the public call runs the oracle
    assert kernel.batch(q) is None and kernel.single(q[0]) is None and kernel.backend == NUMPY
    np.testing.assert_array_equal(forward_kinematics(model, q), forward_kinematics_generic(model, q))
    np.testing.assert_array_equal(forward_kinematics(model, q[0]), forward_kinematics_generic(model, q[0]))
    assert calls == [(5, model.n_q)] and not kernel.accelerate()


@needs_numba
def test_a_failing_compilation_warns_once_and_keeps_numpy(run_with, tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    run_with(accelerated=True)
    monkeypatch.setattr(accel.loaded().functions, "get", lambda name: None)

    def disk_full(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(disk_cache, "write_entry", disk_full)
    model = RobotModel.from_urdf_file(os.path.join(FIXTURES, "double_pendulum.urdf"))
    kernel = compiled_fk(model)
    with pytest.warns(RuntimeWarning, match="numba kernel unavailable, using numpy"):
        assert not kernel.accelerate()
    assert not kernel.accelerate()  # no second attempt (and no second warning)
    q = model.random_configuration(300, rng=5)
    np.testing.assert_allclose(forward_kinematics(model, q), forward_kinematics_generic(model, q), atol=1e-12, rtol=0)
    assert kernel.backend != "generated numba"


def test_without_numba_the_numpy_oracle_runs(monkeypatch):
    monkeypatch.setattr(accel, "available", lambda: False)   # numba not installed
    model = RobotModel.from_urdf_file(SMALL[2])
    kernel = compiled_fk(model)
    assert not accel.active() and not kernel.accelerate() and not robokin_ros.prepare(model)
    q = model.random_configuration(accel.MIN_BATCH, rng=6)
    assert kernel.batch(q) is None and kernel.single(q[0]) is None and kernel.backend == NUMPY
    np.testing.assert_array_equal(forward_kinematics(model, q), forward_kinematics_generic(model, q))
    assert kernel._accelerated is None


@pytest.mark.parametrize("value, expected", [("0", False), ("off", False), ("False", False), ("no", False),
                                             ("1", True), ("", True)])
def test_the_environment_variable_sets_the_default(value, expected, monkeypatch):
    from robokin_ros.runtime import settings_from_environment

    monkeypatch.setenv("ROBOKIN_ACCEL", value)
    assert settings_from_environment().accelerated is expected


def test_the_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    assert disk_cache.cache_dir() == str(tmp_path)
    monkeypatch.delenv("ROBOKIN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.cache_dir() == str(tmp_path / "xdg" / "robokin_ros")


@needs_numba
def test_prepare_accelerates_fk_and_frame_kernels_so_single_calls_use_them(accelerated):
    model = RobotModel.from_urdf_file(SMALL[0])
    tip = model.link_names[-1]
    assert robokin_ros.prepare(model, [(tip,)])
    assert compiled_fk(model)._accelerated is not None
    assert compiled_frames(model, (tip,))._accelerated is not None
    q = model.random_configuration(1, rng=7)[0]
    np.testing.assert_allclose(compiled_fk(model).single(q), forward_kinematics_generic(model, q), atol=1e-12, rtol=0)


SOURCE_HASH = """
import hashlib, sys
from robokin_ros import RobotModel
from robokin_ros.kernels.fk_codegen import compiled_fk, compiled_frames
model = RobotModel.from_urdf_file(sys.argv[1])
kernels = compiled_fk(model).generated, compiled_frames(model, ("left_tool0", "right_tool0")).generated
text = "".join(repr((k.body, k.values)) for k in kernels)
print(hashlib.sha256(text.encode()).hexdigest())
"""


def test_the_generated_source_is_the_same_in_every_process():
    # the disk cache is keyed by the source's hash: string hashing (set order) must not change it
    path = os.path.join(ROBOTS, "twin_arm_torso.urdf")
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
        run = subprocess.run([sys.executable, "-c", SOURCE_HASH, path], env=env, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        digests.add(run.stdout.strip())
    assert len(digests) == 1


def test_missing_numba_is_said_once(run_with, monkeypatch, caplog):
    import importlib.util as util
    real = util.find_spec
    monkeypatch.setattr(util, "find_spec", lambda name, *a: None if name == "numba" else real(name, *a))
    accel.available.cache_clear()
    monkeypatch.setattr(accel, "available", functools.cache(accel.available.__wrapped__))   # (asked anew)
    # ROS's launch (imported by launch tests in the same session) makes new loggers LaunchLoggers
    # that do not propagate to the root logger caplog listens on
    monkeypatch.setattr(logging.getLogger("robokin_ros"), "propagate", True)
    with caplog.at_level("WARNING", logger="robokin_ros"):
        assert not accel.available() and not accel.available()
    messages = [r.getMessage() for r in caplog.records if "numba is not installed" in r.getMessage()]
    assert len(messages) == 1
