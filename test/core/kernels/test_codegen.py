"""The generated per-robot kernels agree with the generic kernels they replace.

The generated code runs only compiled in the library; here its arithmetic is also run by the
interpreter (:func:`reference.run_generated`), so these tests check the emitted code without
compiling it; the public calls run whichever tier serves now (the generic compiled one, or the
numpy oracle)."""

import glob
import os

import numpy as np
import pytest
from peers import ERD_ROBOTS, erd_urdf
from reference import run_generated

from robokin_ros import Reference, RobotModel, forward_kinematics
from robokin_ros.kernels.fk_codegen import (
    compiled_fk,
    compiled_frames,
    compiled_joint_poses,
    generate_link_poses_source,
)
from robokin_ros.kernels.selection import use
from robokin_ros.kinematics import forward_kinematics_generic
from robokin_ros.kinematics.geometric_jacobians import frame_pose_and_jacobian

HERE = os.path.dirname(__file__)
BUNDLED = sorted(glob.glob(os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots", "*.urdf")))
FIXTURES = [os.path.join(HERE, "..", "..", "fixtures", f) for f in
            ("planar_2link.urdf", "prismatic_continuous_mimic.urdf", "branched.urdf", "double_pendulum.urdf")]
EXTERNAL = ["ur5", "panda", "xarm7", "talos", "solo12", "anymal_c", "go1", "kinova", "baxter", "tiago", "z1", "romeo"]


def _models():
    for path in BUNDLED + FIXTURES:
        yield pytest.param(path, id=os.path.basename(path))
    for key in EXTERNAL:
        yield pytest.param(key, id=f"erd-{key}")


def _load(which: str) -> RobotModel:
    path = erd_urdf(ERD_ROBOTS[which]) if which in ERD_ROBOTS else which
    return RobotModel.from_urdf_file(path)


@pytest.mark.parametrize("which", list(_models()))
def test_generated_fk_equals_generic_kernel(which):
    model = _load(which)
    kernel = compiled_fk(model)
    assert kernel is not None
    q = model.random_configuration(16, rng=3)
    expected = forward_kinematics_generic(model, q)
    for k in (0, 5, 15):
        np.testing.assert_allclose(run_generated(kernel.generated, q[k]), expected[k], atol=1e-12, rtol=0)
    np.testing.assert_allclose(forward_kinematics(model, q), expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(forward_kinematics(model, q[5]), expected[5], atol=1e-12, rtol=0)


@pytest.mark.parametrize("which", list(_models()))
def test_generated_frame_kernel_equals_generic_jacobian(which, monkeypatch):
    model = _load(which)
    q = model.random_configuration(4, rng=5)
    frames = [model.link_names[-1], model.link_names[len(model.link_names) // 2], model.root_link]
    for frame in frames:
        for reference in Reference:
            T_gen, J_gen = frame_pose_and_jacobian(model, q, frame, reference, point=[0.05, -0.1, 0.2])
            with use("generic"):
                T_ref, J_ref = frame_pose_and_jacobian(model, q, frame, reference, point=[0.05, -0.1, 0.2])
            np.testing.assert_allclose(T_gen, T_ref, atol=1e-12, rtol=0)
            np.testing.assert_allclose(J_gen, J_ref, atol=1e-12, rtol=0)
            T1, J1 = frame_pose_and_jacobian(model, q[2], frame, reference)
            assert T1.shape == (4, 4) and J1.shape == (6, model.n_v)
        generated = compiled_frames(model, (frame,))
        if generated is not None:   # the emitted pose and LOCAL_WORLD_ALIGNED Jacobian
            F = run_generated(generated.generated, q[2])[0]
            with use("generic"):
                T_ref, J_ref = frame_pose_and_jacobian(model, q[2], frame)
            np.testing.assert_allclose(F[:4, :4], T_ref, atol=1e-12, rtol=0)
            np.testing.assert_allclose(F[4:, :model.n_v], J_ref, atol=1e-12, rtol=0)


def test_forward_kinematics_dispatches_to_the_generated_kernel_and_keeps_batch_shape():
    model = RobotModel.from_urdf_file(BUNDLED[0])
    q = model.random_configuration(6, rng=1).reshape(2, 3, model.n_q)
    assert compiled_fk(model) is not None
    T = forward_kinematics(model, q)
    assert T.shape == (2, 3, model.n_links, 4, 4)
    np.testing.assert_allclose(T, forward_kinematics_generic(model, q), atol=1e-12, rtol=0)


def test_models_with_floating_or_planar_joints_fall_back_to_the_generic_kernel():
    for name in ("floating.urdf", "planar_joint.urdf"):
        model = RobotModel.from_urdf_file(os.path.join(HERE, "..", "..", "fixtures", name))
        assert generate_link_poses_source(model) is None
        assert compiled_frames(model, (model.link_names[-1],)) is None
        q = model.random_configuration(3, rng=0)
        np.testing.assert_array_equal(forward_kinematics(model, q), forward_kinematics_generic(model, q))


def test_constant_entries_are_folded_out_of_the_generated_code():
    # planar_2link: both joints rotate about z, so every pose's z row and z column are constant.
    model = RobotModel.from_urdf_file(FIXTURES[0])
    generated = generate_link_poses_source(model)
    n_entries = model.n_links * 16
    assert sum(isinstance(v, str) for v in generated.values) < n_entries // 2
    np.testing.assert_array_equal(generated.template[:, 2, :3], np.tile([0.0, 0.0, 1.0], (model.n_links, 1)))
    body = "\n".join(generated.body)
    assert body.count("cos(") == 2 and body.count("sin(") == 2
    assert "1.0 - " not in body  # z-axis rotations need no (1 - cos) term


def test_several_frames_in_one_kernel_equal_one_kernel_each():
    model = RobotModel.from_urdf_file([p for p in BUNDLED if p.endswith("twin_arm_torso.urdf")][0])
    frames = ("left_tool0", "right_tool0", "camera_optical_frame")
    q = model.random_configuration(5, rng=2)
    both = np.array([run_generated(compiled_frames(model, frames).generated, x) for x in q])
    assert both.shape == (5, 3, 10, max(4, model.n_v))
    for i, frame in enumerate(frames):
        one = np.array([run_generated(compiled_frames(model, (frame,)).generated, x)[0] for x in q])
        np.testing.assert_allclose(both[:, i], one, atol=1e-15, rtol=0)
        T, J = frame_pose_and_jacobian(model, q, frame)
        np.testing.assert_allclose(both[:, i, :4, :4], T, atol=1e-12, rtol=0)
        np.testing.assert_allclose(both[:, i, 4:, :model.n_v], J, atol=1e-12, rtol=0)


@pytest.mark.parametrize("which", list(_models()) + [pytest.param(os.path.join(HERE, "..", "..", "fixtures", "floating.urdf"), id="floating")])
def test_joint_poses_are_the_child_in_parent_transforms_of_forward_kinematics(which, kernel):
    """Both kernels of joint_poses (the /tf path honours the kernel switch too)."""
    from robokin_ros import joint_poses
    from robokin_ros.spatial import inverse_transform, quat_xyzw_to_matrix

    model = _load(which)
    joints = model.scalar_joint_indices
    q = model.random_configuration(6, rng=4).reshape(2, 3, model.n_q)
    T = forward_kinematics_generic(model, q)
    expected = inverse_transform(T[..., model.link_parents[joints + 1], :, :]) @ T[..., joints + 1, :, :]
    poses = joint_poses(model, q)
    assert poses.shape == (2, 3, joints.size, 7)
    np.testing.assert_allclose(poses[..., :3], expected[..., :3, 3], atol=1e-12, rtol=0)
    np.testing.assert_allclose(quat_xyzw_to_matrix(poses[..., 3:]), expected[..., :3, :3], atol=1e-12, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(poses[..., 3:], axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(joint_poses(model, q[1, 2]), poses[1, 2], atol=1e-15, rtol=0)
    generated = run_generated(compiled_joint_poses(model).generated, q[1, 2])   # the emitted code
    np.testing.assert_allclose(generated[:, :3], expected[1, 2, :, :3, 3], atol=1e-12, rtol=0)
    np.testing.assert_allclose(quat_xyzw_to_matrix(generated[:, 3:]), expected[1, 2, :, :3, :3], atol=1e-12, rtol=0)
