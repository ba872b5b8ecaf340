"""SO(3)/SE(3) helpers: identities and round trips, including the numerically delicate regions
(angles near 0 and π, pitch near ±π/2), on batches."""

from __future__ import annotations

import numpy as np
import pytest
from reference import exp_rotation, quaternion_matrix, rodrigues

from robokin_ros.spatial import (
    exp_so3,
    inverse_transform,
    log_se3_error,
    log_so3,
    matrix_to_quat_xyzw,
    matrix_to_rpy,
    quat_xyzw_to_matrix,
    rotation_about_axis,
    rpy_to_matrix,
    skew,
    transform,
)

RNG = np.random.default_rng(7)


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def random_rotations(n):
    return np.array([quaternion_matrix(*q) for q in RNG.normal(size=(n, 4))])


def assert_rotation(R, atol=1e-14):
    np.testing.assert_allclose(R @ np.swapaxes(R, -1, -2), np.broadcast_to(np.eye(3), R.shape), atol=atol)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=atol)


def test_skew_is_the_cross_product():
    w, x = RNG.normal(size=(2, 3, 5, 3))
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", skew(w), x), np.cross(w, x), atol=1e-15)
    np.testing.assert_array_equal(skew(w), -np.swapaxes(skew(w), -1, -2))


def test_exp_so3_matches_rodrigues():
    v = RNG.normal(size=(20, 3)) * 2.0
    expected = np.array([exp_rotation(x) for x in v])
    np.testing.assert_allclose(exp_so3(v), expected, atol=1e-14)
    axis, angle = unit(v), np.linalg.norm(v, axis=-1)
    np.testing.assert_allclose(rotation_about_axis(axis, angle), expected, atol=1e-14)
    np.testing.assert_array_equal(exp_so3(np.zeros(3)), np.eye(3))


ANGLES = [0.0, 1e-12, 1e-9, 1e-7, 1e-5, 1e-3, 0.5, 1.0, 2.0, 3.0, np.pi - 1e-2, np.pi - 1e-4, np.pi - 1e-6,
          np.pi - 1e-9, np.pi - 1e-12]


@pytest.mark.parametrize("angle", ANGLES)
def test_exp_log_round_trip(angle):
    axes = unit(RNG.normal(size=(50, 3)))
    v = axes * angle
    out = log_so3(exp_so3(v))
    # Compare rotation vectors where they are unique (angle < π) ...
    np.testing.assert_allclose(out, v, atol=1e-12, rtol=1e-12)
    # ... and always the rotations themselves.
    np.testing.assert_allclose(exp_so3(out), exp_so3(v), atol=1e-13)


def test_log_at_pi_gives_angle_pi():
    axes = unit(RNG.normal(size=(30, 3)))
    R = np.array([rodrigues(a, np.pi) for a in axes])
    out = log_so3(R)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.pi, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(unit(out) * axes, axis=-1)), 1.0, atol=1e-12)  # ±axis
    np.testing.assert_allclose(exp_so3(out), R, atol=1e-14)


def test_log_angle_is_in_zero_pi_and_batched():
    R = random_rotations(60).reshape(3, 4, 5, 3, 3)
    out = log_so3(R)
    assert out.shape == (3, 4, 5, 3)
    assert (np.linalg.norm(out, axis=-1) <= np.pi + 1e-15).all()
    np.testing.assert_allclose(exp_so3(out), R, atol=1e-13)


def test_quaternion_matrix_round_trip():
    q = unit(RNG.normal(size=(200, 4)))
    R = quat_xyzw_to_matrix(q)
    assert_rotation(R)
    np.testing.assert_allclose(R, [quaternion_matrix(*x) for x in q], atol=1e-15)
    back = matrix_to_quat_xyzw(R)
    assert (back[:, 3] >= 0).all()
    np.testing.assert_allclose(back, np.where(q[:, 3:] < 0, -q, q), atol=1e-14)
    np.testing.assert_allclose(quat_xyzw_to_matrix(-q), R, atol=1e-15)  # q and -q: same rotation


@pytest.mark.parametrize("axis", range(3))
def test_quaternion_of_half_turns(axis):
    # trace = -1: the w-first formula divides by ~0; every other branch must be used
    R = rodrigues(np.eye(3)[axis], np.pi)
    q = matrix_to_quat_xyzw(R)
    np.testing.assert_allclose(np.abs(q), np.eye(4)[axis], atol=1e-15)
    np.testing.assert_allclose(quat_xyzw_to_matrix(q), R, atol=1e-15)


def test_quaternion_normalises_input():
    q = np.array([0.0, 0.0, np.sin(0.3), np.cos(0.3)])
    np.testing.assert_allclose(quat_xyzw_to_matrix(5.0 * q), rodrigues([0, 0, 1], 0.6), atol=1e-15)


def test_rpy_is_fixed_axes_x_then_y_then_z():
    r, p, y = 0.3, -0.7, 1.9
    expected = rodrigues([0, 0, 1], y) @ rodrigues([0, 1, 0], p) @ rodrigues([1, 0, 0], r)
    np.testing.assert_allclose(rpy_to_matrix([r, p, y]), expected, atol=1e-15)


def test_rpy_round_trip():
    rpy = np.column_stack([RNG.uniform(-np.pi, np.pi, 500), RNG.uniform(-np.pi / 2, np.pi / 2, 500),
                           RNG.uniform(-np.pi, np.pi, 500)])
    np.testing.assert_allclose(matrix_to_rpy(rpy_to_matrix(rpy)), rpy, atol=1e-12)


@pytest.mark.parametrize("delta", [0.0, 1e-15, 1e-13, 1e-11, 1e-9, 1e-7, 1e-5])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_rpy_round_trip_near_gimbal_lock(delta, sign):
    """Pitch near ±π/2 (URDFs write 1.5707963 for a quarter turn): the rotation must survive."""
    rpy = np.column_stack([RNG.uniform(-3, 3, 20), np.full(20, sign * (np.pi / 2 - delta)), RNG.uniform(-3, 3, 20)])
    R = rpy_to_matrix(rpy)
    np.testing.assert_allclose(rpy_to_matrix(matrix_to_rpy(R)), R, atol=1e-14)


def test_transform_and_inverse():
    R, p = random_rotations(10).reshape(2, 5, 3, 3), RNG.normal(size=(2, 5, 3))
    T = transform(R, p)
    assert T.shape == (2, 5, 4, 4)
    np.testing.assert_array_equal(T[..., 3, :], np.broadcast_to([0, 0, 0, 1.0], (2, 5, 4)))
    np.testing.assert_allclose(inverse_transform(T) @ T, np.broadcast_to(np.eye(4), T.shape), atol=1e-14)
    np.testing.assert_allclose(inverse_transform(T), np.linalg.inv(T), atol=1e-14)
    np.testing.assert_array_equal(transform(), np.eye(4))
    np.testing.assert_array_equal(transform(p=[1, 2, 3])[:3, 3], [1, 2, 3])


def test_log_se3_error_is_what_moves_current_onto_target():
    R0, R1 = random_rotations(2 * 20).reshape(2, 20, 3, 3)
    Tc, Tt = transform(R0, RNG.normal(size=(20, 3))), transform(R1, RNG.normal(size=(20, 3)))
    e = log_se3_error(Tc, Tt)
    assert e.shape == (20, 6)
    np.testing.assert_allclose(Tc[:, :3, 3] + e[:, :3], Tt[:, :3, 3], atol=1e-14)
    np.testing.assert_allclose(exp_so3(e[:, 3:]) @ R0, R1, atol=1e-12)  # world-axes rotation
    np.testing.assert_allclose(log_se3_error(Tc, Tc), 0.0, atol=1e-15)
