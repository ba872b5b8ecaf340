"""The orientations of a map: rotations, spread over SO(3) as the Haar measure, or over a cone."""

from __future__ import annotations

import numpy as np
import pytest

from robokin_ros.reach import cone_orientations, uniform_orientations


def is_rotation(R) -> bool:
    return np.allclose(R @ np.swapaxes(R, -1, -2), np.eye(3), atol=1e-12) and np.allclose(np.linalg.det(R), 1.0)


@pytest.mark.parametrize("n", [1, 7, 50, 2000])
def test_uniform_orientations_are_distinct_rotations(n):
    R = uniform_orientations(n)
    assert R.shape == (n, 3, 3) and is_rotation(R)
    assert len(np.unique(np.round(R.reshape(n, 9), 9), axis=0)) == n


def test_uniform_orientations_follow_the_haar_measure():
    # Under the Haar measure E[R] = 0 and the rotation angle has the CDF (t - sin t) / pi.
    n = 2000
    R = uniform_orientations(n)
    assert np.abs(R.mean(axis=0)).max() < 0.01
    angles = np.sort(np.arccos(np.clip((np.trace(R, axis1=1, axis2=2) - 1) / 2, -1, 1)))
    cdf = (angles - np.sin(angles)) / np.pi
    ks = np.max(np.abs(cdf - (np.arange(n) + 0.5) / n))
    assert ks < 0.02   # a Kolmogorov-Smirnov distance well inside 1.36 / sqrt(n) = 0.03


def test_uniform_orientations_are_the_same_every_call():
    assert np.array_equal(uniform_orientations(50), uniform_orientations(50))


@pytest.mark.parametrize("axis, degrees", [((0, 0, -1), 30), ((1, 2, 3), 90), ((1, 0, 0), 180), ((0, 1, 0), 0)])
def test_cone_orientations_keep_the_tool_axis_in_the_cone_and_fill_it(axis, degrees):
    n = 400
    R = cone_orientations(n, axis, np.radians(degrees))
    assert R.shape == (n, 3, 3) and is_rotation(R)
    unit = np.asarray(axis, float) / np.linalg.norm(axis)
    cos_angle = R[:, :, 2] @ unit
    half = np.radians(degrees)
    assert cos_angle.min() >= np.cos(half) - 1e-9
    # Uniform on the cap (area 2 pi (1 - cos half)): the mean of cos(angle) is the middle of
    # [cos(half), 1], and the widest point is within one sample's share of area of the rim.
    assert cos_angle.mean() == pytest.approx((1 + np.cos(half)) / 2, abs=0.01)
    assert 1 - cos_angle.min() >= (1 - np.cos(half)) * (1 - 1 / n) - 1e-12
