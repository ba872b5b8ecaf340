"""Self-collision slow-down of a servo: motion that brings the robot's links closer is scaled down
linearly inside ``self_collision_proximity_threshold`` and stopped only at contact
(``HALT_FOR_COLLISION``), with the library's self-collision checker (coal's distances)."""

from __future__ import annotations

import numpy as np

from ..collision import CollisionModel, self_collisions
from ..model import RobotModel
from .parameters import ServoParameters
from .status import StatusCode


class CollisionSlowdown:
    """The slow-down factor near self-collision, checked ``collision_check_rate`` times a
    second of cycles' time (the last factor holds in between).

    Args:
        model: the robot. collision: a CollisionModel, or True (the model's default one).
        parameters: the servo's parameters.
    """

    def __init__(self, model: RobotModel, collision, parameters: ServoParameters):
        self.collision = CollisionModel.build(model) if collision is True else collision
        self.threshold = parameters.self_collision_proximity_threshold
        self.period = 1.0 / parameters.collision_check_rate
        self._since = np.inf
        self._distance = np.inf
        self._factor, self._notes = 1.0, []

    def scale(self, q: np.ndarray, dt: float) -> tuple[float, list]:
        """The factor for this cycle and its reports ``[(code, message)]``."""
        self._since += dt
        if self._since < self.period:
            return self._factor, self._notes
        self._since = 0.0
        result = self_collisions(self.collision, q, distance=True)
        distance = float(result.min_distance)
        approaching = distance < self._distance
        self._distance = distance
        self._factor, self._notes = 1.0, []
        if approaching and distance <= 0.0:
            self._factor = 0.0
            self._notes = [(StatusCode.HALT_FOR_COLLISION, f"in contact (distance {distance:.3g} m)")]
        elif approaching and distance < self.threshold:
            self._factor = distance / self.threshold
            self._notes = [(StatusCode.DECELERATE_FOR_COLLISION,
                            f"close to self-collision ({distance * 1000:.1f} mm): slowed to {self._factor:.0%}")]
        return self._factor, self._notes
