"""The cached IK call: what a call's tips, base, allowed joints, bounds and tolerances make,
built in one place and used by every route (one problem given as lists, a stacked batch, the
compiled loop, :func:`~robokin_ros.ik.preparation.prepare_ik`, objectives, distinct solutions and
constraints).

An :class:`IKCall` holds the chain the problem is solved on (the links from the base to the
tips as a model of its own, when the robot has more and collisions do not involve the whole
robot), the problem's free coordinates, and its :class:`~robokin_ros.ik.solver.Solver` within the
call's bounds. It is kept in :mod:`robokin_ros.model_cache` under :data:`IK_CALLS`, keyed by the
tip names and the validated :class:`~robokin_ros.ik.options.IKOptions` it depends on (every key a
``/compute_ik`` client can vary is bounded per model).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..errors import ShapeError
from ..kernels.fk_codegen import compiled_frames
from ..model import RobotModel
from ..runtime import current_runtime
from .chain import Chain, chain_of
from .options import IKOptions, clamped_seeds, effective_bounds, tolerances
from .problem import IKProblem
from .solver import Solver

Array = NDArray[np.float64]

#: The registry kind of :class:`IKCall` s (see :func:`ik_call`).
IK_CALLS = "ik calls"


@dataclasses.dataclass(frozen=True)
class IKCall:
    """What one (tips, options) call needs on one model.

    Attributes:
        solver: the Levenberg–Marquardt iterations on the solved model (the chain's, or the
            robot's) within the call's bounds; ``solver.problem`` its free coordinates.
        chain: the :class:`~robokin_ros.ik.chain.Chain` solved on, or None (the robot itself).
        index: ``(solved n_q,)`` list, the robot's q index of each solved coordinate.
        lower, upper: ``(n_q,)`` the robot's bounds (its limits within the overrides).
        lower_list, upper_list, home: the same bounds and the home configuration as lists.
        n_tips: number of tips. single_lane: one problem may take the lane of one target set
            given as lists (a generated kernel, no parallel restarts; :func:`~robokin_ros.ik.poses.solve_poses`).
    """

    solver: Solver
    chain: Chain | None
    index: list
    lower: Array
    upper: Array
    lower_list: list
    upper_list: list
    home: list
    n_tips: int
    single_lane: bool

    @property
    def problem(self) -> IKProblem:
        return self.solver.problem

    @property
    def whole(self) -> bool:
        """The robot itself is solved (no chain)."""
        return self.chain is None

    def clamped_seeds(self, model: RobotModel, seeds: Array) -> Array:
        """``seeds (..., n_q)`` clamped into the call's bounds (see
        :func:`~robokin_ros.ik.options.clamped_seeds`)."""
        return clamped_seeds(model, seeds, self.lower, self.upper)

    def clamped_seed(self, model: RobotModel, seed: list) -> list:
        """One seed (a list of ``n_q`` floats) as :meth:`clamped_seeds` clamps it, as a list (in
        floats when the model has no floating joint)."""
        if model.quaternion_slices:
            return self.clamped_seeds(model, np.array(seed)).tolist()
        return [lo if x < lo else hi if x > hi else x for x, lo, hi in zip(seed, self.lower_list, self.upper_list)]


def ik_call(model: RobotModel, tips: tuple[str, ...], options: IKOptions) -> IKCall:
    """The :class:`IKCall` of ``tips`` (link names) and ``options`` on ``model``, kept in
    :mod:`robokin_ros.model_cache` (:data:`IK_CALLS`).

    Raises:
        ShapeError: no tips, or ``axis_tolerances`` / ``weights`` of the wrong shape for them.
        UnknownLinkError, UnknownJointError: unknown tip, base or joint names.
        ShapeError, NonFiniteError, JointLimitError: bad bound overrides (see
            :func:`~robokin_ros.ik.options.effective_bounds`).
    """
    key = (tips, options.call_key(), current_runtime().generated)
    return model_cache.cached(model, IK_CALLS, key, _build, (model, tips, options))


def _build(model: RobotModel, tips: tuple[str, ...], options: IKOptions) -> IKCall:
    if not tips:
        raise ShapeError("tips", "one name or a non-empty sequence of names", (0,))
    # (Collisions involve the whole robot: a collision-aware problem is solved on all of it.)
    chain = None if options.collisions else chain_of(model, tips, options.base)
    active = options.active_joints
    for name in active or ():
        model.joint_index(name)   # unknown names are errors of the whole robot's
    lo, hi = effective_bounds(model, options.lower, options.upper)
    if chain is None:
        solved, base, index, solved_lo, solved_hi = model, options.base, list(range(model.n_q)), lo, hi
    else:
        solved, base, index = chain.chain, None, chain.q_index.tolist()
        solved_lo, solved_hi = lo[chain.q_index], hi[chain.q_index]
        if active is not None:
            active = tuple(name for name in active if name in chain.joint_names)
    tip_idx = tuple(solved.link_index(t) for t in tips)
    base_idx = 0 if base is None else solved.link_index(base)
    if active is None:
        active_idx = tuple(int(j) for j in solved.active_joints)
    else:
        active_idx = tuple(sorted({solved.joint_index(name) for name in active}))
    tol = tolerances(options, len(tips))
    compiled = compiled_frames(solved, tips) if current_runtime().generated else None
    solver = Solver(solved, IKProblem(solved, tip_idx, base_idx, active_idx), solved_lo, solved_hi, tol, compiled)
    return IKCall(solver=solver, chain=chain, index=index, lower=lo, upper=hi, lower_list=lo.tolist(),
                  upper_list=hi.tolist(), home=model.home_configuration().tolist(), n_tips=len(tips),
                  single_lane=compiled is not None and tol.restarts == 0)

