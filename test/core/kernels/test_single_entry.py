"""The compiled single-configuration entries (:func:`robokin_ros.kernels.numba_source.single_source`) of
the FK, Jacobian and dynamics kernels: their results against the numpy oracle and their own code
run by the interpreter, their
status codes (0 written, 1 non-finite input or mimic value, 2 wrong shape; ``out`` untouched
then), numba's refusal of other types, and how the public single calls reach them.

Skipped without numba; compiled code goes to a temporary cache directory.
"""

import os
import threading

import numpy as np
import pytest
from reference import run_generated

from robokin_ros import KernelCheckError, RobotModel, forward_kinematics, jacobian, prepare, rnea
from robokin_ros.kernels import accel
from robokin_ros.kernels.dynamics_codegen import compiled_crba, compiled_rnea
from robokin_ros.kernels.fk_codegen import compiled_fk, compiled_jacobian
from robokin_ros.kernels.selection import use
from robokin_ros.kinematics import forward_kinematics_generic

HERE = os.path.dirname(__file__)
MIMIC = os.path.join(HERE, "..", "..", "fixtures", "prismatic_continuous_mimic.urdf")
PANDA = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots", "panda.urdf")
pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed (optional accelerator)")


@pytest.fixture
def mimic(accelerated):
    model = RobotModel.from_urdf_file(MIMIC)
    kernel = compiled_fk(model)
    assert kernel.accelerate()
    return model, kernel


def test_the_fk_entry_equals_its_code_interpreted_and_the_oracle(mimic):
    model, kernel = mimic
    for q in model.random_configuration(20, np.random.default_rng(0)):
        out = np.empty(kernel.shape)
        assert kernel.accelerated_single(q, out) == 0
        np.testing.assert_allclose(out, run_generated(kernel.generated, q), rtol=0, atol=1e-12)
        np.testing.assert_allclose(out, forward_kinematics_generic(model, q), rtol=0, atol=1e-12)


@pytest.mark.parametrize("q, status", [
    (np.array([0.2, np.nan]), 1),
    (np.array([np.inf, 0.3]), 1),
    (np.array([0.5, 1e308]), 1),            # finite, but the mimic joint's 2 q + 0.1 overflows
    (np.array([0.2, 0.3, 0.4]), 2),
    (np.array([0.2]), 2),
], ids=["nan", "inf", "mimic overflow", "long", "short"])
def test_the_fk_entry_refuses_bad_configurations_without_writing(mimic, q, status):
    _, kernel = mimic
    out = np.full(kernel.shape, 7.0)
    assert kernel.accelerated_single(q, out) == status
    assert (out == 7.0).all()


def test_the_fk_entry_refuses_a_wrong_out_shape(mimic):
    model, kernel = mimic
    out = np.full((model.n_links + 1, 4, 4), 7.0)
    assert kernel.accelerated_single(np.zeros(model.n_q), out) == 2
    assert (out == 7.0).all()


@pytest.mark.parametrize("q, out", [
    (np.zeros(2, np.float32), None),
    ([0.0, 0.0], None),
    (np.zeros(4)[::2], None),
    (np.zeros((1, 2)), None),
    (np.zeros(2), np.zeros((5, 4, 4), np.float32)),
    (np.zeros(2), np.zeros(80)),
], ids=["float32", "list", "strided", "2-D", "float32 out", "flat out"])
def test_numba_refuses_other_types_instead_of_compiling_them(mimic, q, out):
    model, kernel = mimic
    with pytest.raises(TypeError):
        kernel.accelerated_single(q, np.empty(kernel.shape) if out is None else out)
    assert len(kernel.accelerated_single.signatures) == 1


@pytest.mark.slow   # compiles into an empty cache
def test_the_dynamics_entries_read_every_input_and_check_each(accelerated):
    model = RobotModel.from_urdf_file(PANDA)
    kernel = compiled_rnea(model, True, True, np.array([0.0, 0.0, -9.81]))
    assert kernel.accelerate()
    rng = np.random.default_rng(1)
    q = model.random_configuration(1, rng)[0]
    v, a = rng.normal(size=(2, model.n_v))
    out = np.empty(model.n_v)
    assert kernel.accelerated_single(q, v, a, out) == 0
    np.testing.assert_allclose(out, run_generated(kernel.generated, np.concatenate([q, v, a])), rtol=1e-12, atol=1e-12)
    with use("generic"):   # the numpy oracle
        np.testing.assert_allclose(out, rnea(model, q, v, a), rtol=1e-9, atol=1e-9)
    bad = a.copy()
    bad[-1] = np.nan
    assert kernel.accelerated_single(q, v, bad, out) == 1
    assert kernel.accelerated_single(q, v[:-1], a, out) == 2
    assert kernel.accelerated_single(q, v, a, np.empty(model.n_v + 1)) == 2


def test_a_single_entry_that_disagrees_fails_its_check(accelerated):
    model = RobotModel.from_urdf_file(MIMIC)
    kernel = compiled_crba(model)
    assert kernel.accelerate()
    sizes, shape = kernel.input_sizes, kernel.shape
    accel.check_single(kernel.accelerated_single, sizes, shape)      # the real one passes

    class Compiled:
        """A compiled entry computing ``call`` from the real entry's source (its ``py_func``)."""

        def __init__(self, call):
            self.call, self.py_func = call, kernel.accelerated_single.py_func

        def __call__(self, q, out):
            return self.call(q, out)

    def zeros(q, out):
        out[:] = 0.0
        return 0

    for fake in (Compiled(lambda q, out: 1), Compiled(zeros)):
        with pytest.raises(KernelCheckError, match="single entry disagrees"):
            accel.check_single(fake, sizes, shape)


@pytest.mark.slow   # compiles into an empty cache
def test_prepare_loads_the_jacobian_entry_of_a_single_frame(accelerated):
    model = RobotModel.from_urdf_file(PANDA)
    assert prepare(model, frames=[("panda_hand_tcp",)])
    assert compiled_jacobian(model, "panda_hand_tcp").accelerated_single is not None


def test_single_jacobian_calls_add_up_to_loading_the_entry(run_with, accelerated, monkeypatch):
    run_with(compile_after=5)
    model = RobotModel.from_urdf_file(PANDA)
    q = model.random_configuration(1, np.random.default_rng(2))[0]
    expected = jacobian(model, q, "panda_link7")
    for _ in range(5):
        jacobian(model, q, "panda_link7")
    for thread in threading.enumerate():
        if thread.name == "robokin_ros accel":
            thread.join()
    assert compiled_jacobian(model, "panda_link7").accelerated_single is not None
    np.testing.assert_allclose(jacobian(model, q, "panda_link7"), expected, rtol=0, atol=1e-12)


def test_public_single_fk_writes_out_through_the_entry(accelerated, monkeypatch):
    model = RobotModel.from_urdf_file(PANDA)
    assert prepare(model)
    q = model.random_configuration(1, np.random.default_rng(3))[0]
    out = np.empty((model.n_links, 4, 4))
    assert forward_kinematics(model, q, out=out) is out
    with use(accelerated=False):
        np.testing.assert_allclose(out, forward_kinematics(model, q), rtol=0, atol=1e-12)
