"""Problems on a part of the robot: the links from a base to the tips as a model of its own."""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..errors import ModelError
from ..model import RobotModel
from ..model.builder import submodel

Array = NDArray[np.float64]

#: The registry kind of :class:`Chain` s (see :func:`chain_of`): chains are models, with kernels
#: of their own, shared by every call on the same tips and base.
IK_CHAINS = "ik chains"


class Chain:
    """The links from a base to the tips of a problem as a model of their own (the base its root),
    when the robot has more: the problem's kernel then computes only those links and columns
    (a humanoid arm: 7 of 30-40 coordinates), and targets ``T_base_tip`` are world poses of
    the chain. Coordinates outside the chain keep their (clamped) seed values.

    Attributes:
        chain: the chain's model. q_index: ``(chain.n_q,)`` the robot's q index of each chain
            coordinate. joint_names: the chain's joints (fixed and mimic included).
    """

    def __init__(self, model: RobotModel, chain: RobotModel, q_index: Array):
        self.model, self.chain, self.q_index = weakref.ref(model), chain, q_index
        self.joint_names = frozenset(chain.all_joint_names)


def chain_of(model: RobotModel, tips: tuple, base: str | None) -> Chain | None:
    """The :class:`Chain` of ``tips`` below ``base`` (kept in :mod:`robokin_ros.model_cache`), or
    None: the robot is that chain already, the base is not an ancestor of every tip, or a chain
    joint mimics one outside it.

    Raises:
        UnknownLinkError: an unknown tip or base (never cached).
    """
    return model_cache.cached(model, IK_CHAINS, (tips, base), _extract, (model, tips, base))


def _extract(model: RobotModel, tips: tuple, base: str | None) -> Chain | None:
    base_idx = 0 if base is None else model.link_index(base)
    tip_idx = [model.link_index(t) for t in tips]
    keep = {base_idx}
    for i in tip_idx:
        while i not in keep and i != 0:
            keep.add(i)
            i = int(model.link_parents[i])
        if i not in keep:  # reached the root without meeting the base
            return None
    if len(keep) == model.n_links:
        return None
    try:
        sub = submodel(model, [model.link_names[i] for i in keep])
    except ModelError:   # a chain joint mimics one outside the chain: solved on the whole robot
        return None
    index = np.zeros(sub.n_q, np.int64)  # chain q coordinate -> the robot's
    for j, name in enumerate(sub.all_joint_names):
        k, n = int(sub.joint_q_index[j]), int(sub.joint_nq[j])
        if n:
            start = int(model.joint_q_index[model.joint_index(name)])
            index[k:k + n] = np.arange(start, start + n)
    return Chain(model, sub, index)
