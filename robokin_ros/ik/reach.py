"""How far a tip can get from a base: the sum of the link offsets between them.

``p_base_tip = Σ R_i (t_i + d_i a_i)`` over the joints from the base down to the tip (``t_i`` the
joint's fixed offset, ``d_i`` a prismatic joint's travel along its axis ``a_i``), so by the triangle
inequality ``‖p_base_tip‖ <= Σ ‖t_i‖ + Σ max |d_i|``: a target farther than that is out of reach
whatever the joints do, and IK can say so at once instead of searching until its timeout.
"""

from __future__ import annotations

import math

import numpy as np

from .. import model_cache
from ..model import JointType, RobotModel

#: The registry kind of the bounds of :func:`reach_upper_bound`.
IK_REACH = "ik reach"


def reach_upper_bound(model: RobotModel, base: str, tip: str) -> float:
    """[m] upper bound of ``‖p_base_tip‖`` over every configuration; ``inf`` when the base is not
    above the tip or a joint between them is floating or planar (no bound). Kept in
    :mod:`robokin_ros.model_cache` (a /compute_ik request asks it once per tip).

    Raises:
        UnknownLinkError: an unknown base or tip (never cached).
    """
    tip_i, base_i = model.link_index(tip), model.link_index(base)
    return model_cache.cached(model, IK_REACH, (tip_i, base_i), _reach, (model, tip_i, base_i))


def _reach(model: RobotModel, tip_i: int, base_i: int) -> float:
    if not model.support_mask[tip_i][base_i]:
        return math.inf
    on_path = model.support_mask[tip_i] & ~model.support_mask[base_i]
    reach = 0.0
    for j in np.flatnonzero(on_path[1:]).tolist():
        kind = JointType(model.joint_types[j])
        if kind in (JointType.FLOATING, JointType.PLANAR):
            return math.inf
        reach += float(np.linalg.norm(model.joint_origins[j][:3, 3]))
        if kind == JointType.PRISMATIC:
            reach += max(abs(float(model.joint_lower[j])), abs(float(model.joint_upper[j])))
    return reach
