"""URDF 1.2 capsules in self-collision checking, against the closed-form distance of two
parallel capsules whose segments overlap along their axis: |dx| - (r1 + r2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel

pytest.importorskip("coal")
from robokin_ros.collision import collision_model, self_collisions  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "urdf12_capsule_limits.urdf"


def test_capsule_distances_match_the_closed_form():
    model = RobotModel.from_urdf_file(FIXTURE)
    cm = collision_model(model, samples=0)
    slide = np.linspace(-0.45, 0.3, 12)   # the spinner's sphere stays farther (> 0.69 m)
    q = np.zeros((len(slide), model.n_q))
    q[:, model.joint_names.index("slide")] = slide
    result = self_collisions(cm, q, distance=True)
    expected = np.abs(0.5 + slide) - 0.2          # base capsule z in [-0.2, 0.2], tip's in [0.1, 0.5]
    np.testing.assert_allclose(result.min_distance, expected, atol=1e-6)
    np.testing.assert_array_equal(result.in_collision, expected < 0)
    assert result.in_collision.any() and not result.in_collision.all()
