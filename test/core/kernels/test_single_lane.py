"""The single-configuration lane of the public calls (robokin_ros.kernels.single_lane): one
configuration gives the batched path's result (and so the generic kernels' and Pinocchio's, which
other tests compare with the batched path), whether or not the compiled entry is loaded; what the
entry refuses raises the general path's typed errors; the kernels are built once per model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robokin_ros import (
    NonFiniteError,
    RobotModel,
    ShapeError,
    aba,
    crba,
    forward_kinematics,
    gravity_torques,
    jacobian,
    model_cache,
    prepare,
    rnea,
)
from robokin_ros.kernels import accel
from robokin_ros.kernels.dynamics_codegen import DYNAMICS_KERNELS, built_single
from robokin_ros.kernels.fk_codegen import FK_KERNELS, built_fk, compiled_fk, compiled_jacobian
from robokin_ros.kernels.plan import dynamics_tree

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "test" / "fixtures"
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = next((p for p in (ROOT.parent / "shared" / "urdf-corpus", ROOT.parent.parent / "shared" / "urdf-corpus")
               if p.is_dir()), None)

needs_numba = pytest.mark.skipif(not accel.available(), reason="numba is not installed (optional accelerator)")

CASES = ["fixture:double_pendulum", "fixture:branched", "fixture:prismatic_continuous_mimic", "fixture:floating",
         "bundled:panda", "corpus:kuka_lbr_iiwa14", "corpus:interbotix_wx250s",
         "corpus:poppy_ergo_jr"]


def load(case: str) -> RobotModel:
    where, name = case.split(":")
    if where == "corpus":
        if CORPUS is None or not (CORPUS / f"{name}.urdf").is_file():
            pytest.skip(f"the URDF corpus (shared/urdf-corpus) has no {name}.urdf here")
        return RobotModel.from_urdf_file(CORPUS / f"{name}.urdf")
    return RobotModel.from_urdf_file((FIXTURES if where == "fixture" else ROBOTS) / f"{name}.urdf")


def has_dynamics(model: RobotModel) -> bool:
    return dynamics_tree(model).has_inertial and not dynamics_tree(model).massless_coordinates


def single_and_batched(model: RobotModel, rng) -> list:
    """``(name, single result, batched row)`` of each public call with a single lane, at the
    second of three random states."""
    q = model.random_configuration(3, rng)
    v, a = rng.normal(size=(2, 3, model.n_v))
    tip = model.link_names[-1]
    calls = [("forward_kinematics", lambda x: forward_kinematics(model, x), (q,)),
             ("jacobian", lambda x: jacobian(model, x, tip), (q,))]
    if has_dynamics(model):
        calls += [("rnea", lambda *x: rnea(model, *x), (q, v, a)), ("crba", lambda x: crba(model, x), (q,)),
                  ("aba", lambda *x: aba(model, *x), (q, v, a)),
                  ("gravity_torques", lambda x: gravity_torques(model, x), (q,))]
    return [(name, call(*(x[1].copy() for x in args)), call(*args)[1]) for name, call, args in calls]


def assert_single_equals_batched(model: RobotModel, seed: int) -> None:
    for name, single, batched in single_and_batched(model, np.random.default_rng(seed)):
        assert single.shape == batched.shape, name
        rtol = 1e-9 if name == "aba" else 1e-12
        np.testing.assert_allclose(single, batched, rtol=rtol, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_public_single_calls_equal_the_batched_path_before_the_kernels_load(run_with, case, monkeypatch):
    run_with(accelerated=False)   # the Python-float and numpy kernels
    assert_single_equals_batched(load(case), 40)


@needs_numba
@pytest.mark.parametrize("case", CASES)
def test_public_single_calls_equal_the_batched_path_through_the_compiled_entries(run_with, case, monkeypatch):
    run_with(accelerated=True)
    model = load(case)
    tip = model.link_names[-1]
    dynamics = ("rnea", "gravity_torques", "crba", "aba") if has_dynamics(model) else ()
    loaded = prepare(model, [(tip,)], dynamics=dynamics)
    assert loaded == (case != "fixture:floating")   # a floating joint: no generated kernel, the general path
    assert_single_equals_batched(model, 41)


@needs_numba
def test_public_single_calls_refuse_bad_input_with_the_typed_error(run_with, monkeypatch):
    run_with(accelerated=True)
    model = RobotModel.from_urdf_file(FIXTURES / "double_pendulum.urdf")
    assert prepare(model, [("link2",)], dynamics=("rnea", "gravity_torques", "crba", "aba"))
    assert built_fk(model).accelerated_single is not None   # the entries are loaded: they refuse, not numpy
    q, z, nan = np.array([0.3, -0.2]), np.zeros(2), np.array([0.1, np.nan])
    for call in (lambda x: forward_kinematics(model, x), lambda x: jacobian(model, x, "link2"),
                 lambda x: crba(model, x), lambda x: gravity_torques(model, x), lambda x: rnea(model, x, z, z),
                 lambda x: aba(model, x, z, z)):
        with pytest.raises(NonFiniteError, match=r"q has non-finite entries at \['joint2'\]"):
            call(nan)
        with pytest.raises(ShapeError, match=r"q must have shape"):
            call(np.zeros(3))
        call(q)   # and the good configuration still goes through
    with pytest.raises(NonFiniteError, match=r"v has non-finite entries at \['joint2'\]"):
        rnea(model, q, nan, z)
    with pytest.raises(ShapeError, match=r"a must have shape"):
        rnea(model, q, z, np.zeros(3))
    with pytest.raises(ShapeError):
        forward_kinematics(model, q, out=np.empty((model.n_links + 1, 4, 4)))
    out = np.empty((model.n_links, 4, 4))
    assert forward_kinematics(model, q, out=out) is out


@needs_numba
def test_the_registry_holds_one_kernel_per_model_and_call(run_with, monkeypatch):
    run_with(accelerated=True)
    model = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
    assert prepare(model, [("panda_hand_tcp",)], dynamics=("rnea", "crba"))
    rng = np.random.default_rng(42)
    q, v, a = model.random_configuration(1, rng)[0], rng.normal(size=model.n_v), rng.normal(size=model.n_v)
    fk, J = compiled_fk(model), compiled_jacobian(model, "panda_hand_tcp")
    kernels = (built_single(model, "rnea"), built_single(model, "crba"))
    sizes = model_cache.sizes(model)
    for _ in range(20):
        forward_kinematics(model, q)
        jacobian(model, q, "panda_hand_tcp")
        rnea(model, q, v, a)
        crba(model, q)
    assert model_cache.sizes(model) == sizes   # nothing built per call
    assert sizes[FK_KERNELS] >= 2 and sizes[DYNAMICS_KERNELS] == 2
    assert built_fk(model) is fk and compiled_jacobian(model, "panda_hand_tcp") is J
    assert (built_single(model, "rnea"), built_single(model, "crba")) == kernels


@needs_numba
def test_the_direct_entry_equals_the_dispatched_one_and_refuses_another_dtype():
    """The lane calls a lone ``q`` into a new array through the entry's C wrapper, skipping numba's
    dispatch (accel.direct_entry): same bits as the dispatched entry; another dtype is still a
    TypeError of unboxing; a read-only ``q`` goes through it and equals the batched path."""
    model = load("bundled:panda")
    kernel = compiled_fk(model)
    assert kernel.accelerate() and kernel.direct_single is not None
    q = model.random_configuration(1, np.random.default_rng(3))[0]
    direct, dispatched = np.empty(kernel.shape), np.empty(kernel.shape)
    assert kernel.direct_single(q, direct) == 0 and kernel.accelerated_single(q, dispatched) == 0
    np.testing.assert_array_equal(direct, dispatched)
    with pytest.raises(TypeError):
        kernel.direct_single(q.astype(np.float32), direct)
    frozen_q = q.copy()
    frozen_q.flags.writeable = False
    np.testing.assert_array_equal(forward_kinematics(model, frozen_q), forward_kinematics(model, q[None])[0])
    np.testing.assert_array_equal(crba(model, frozen_q), crba(model, q[None])[0])
