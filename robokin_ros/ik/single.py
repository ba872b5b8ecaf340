"""One IK problem (the ``/compute_ik`` case) in Python floats, and :func:`prepare_ik`.

:func:`solve_one` solves one target set from one seed on the call's solver with few numpy calls:
the seed checked and clamped in floats, the targets' components as a list, the iterations in
floats or on the compiled loop (:mod:`robokin_ros.ik.compiled_loop`: the same iterates).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..checks import finite_configuration
from ..kernels.fk_codegen import compiled_frames
from ..model import RobotModel
from .budget import Budget
from .call import IKCall, ik_call
from .collision_gate import refuse_collisions
from .options import IKOptions
from .result import IKResult

Array = NDArray[np.float64]


def solve_one(model: RobotModel, call: IKCall, targets: tuple[Array, list], seed, budget: Budget) -> IKResult:
    """One target set ``targets``: ``T (n_tips, 4, 4)`` (checked) and its entries as a list
    (see :func:`~robokin_ros.ik.poses.checked_targets`), from ``seed`` (None or ``(n_q,)``), in floats.

    Raises:
        ShapeError, NonFiniteError, ArgumentError: a bad seed (see :meth:`RobotModel.check_q`).
    """
    if seed is None:
        full = call.home
    else:
        full = finite_configuration(model, seed)
        if full is None:
            full = model.check_q(seed, "seed").tolist()   # raises the named error, or accepts a list
    full = call.clamped_seed(model, full)
    q0 = full if call.whole else [full[i] for i in call.index]
    problem, nt = call.problem, call.n_tips
    T, entries = targets
    if problem.base_moves:  # joints that move the base stay at the seed: its pose is the seed's
        solved = call.solver.model
        T_world_base = compiled_frames(solved, (solved.link_names[problem.base],)).single(np.array(q0))[0, :4, :4]
        entries = (T_world_base @ T).reshape(-1).tolist()
    elif problem.base:
        entries = (problem.T_world_base @ T).reshape(-1).tolist()
    target = [x for k in range(0, 16 * nt, 16) for x in entries[k:k + 3] + entries[k + 4:k + 7] + entries[k + 8:k + 11]
              + entries[k + 3:k + 12:4]]
    q, status, it, position, rotation, success = call.solver.solve_one(q0, target, budget)
    if not call.whole:
        q, solved_q = full[:], q
        for i, x in zip(call.index, solved_q):
            q[i] = x
    result = IKResult(np.array(q), np.array(success), np.array(position), np.array(rotation),
                      np.array(it, np.int64), np.array(status, "<U14"))
    return refuse_collisions(result, budget.accept)


def prepare_ik(model: RobotModel, tips: str, *, base: str | None = None, active_joints=None,
               position_tolerance: float = 1e-5, rotation_tolerance: float = 1e-5, axis_tolerances=None,
               max_iterations: int = 500) -> bool:
    """Load (compile, or read from the disk cache) the compiled loop of requests with these
    names and options now (e.g. at start-up), instead of in the background once the float or
    vectorised path has done :data:`robokin_ros.kernels.accel.MIN_BATCH` iterations. Compiling
    takes seconds (6-10 s for a 6-7-DOF arm), once per machine (then < 1 s per process). Single
    requests and batches (on every core) then run on it. A request with other options or bounds
    has a loop of its own (not loaded by this).

    Returns:
        True when requests of these names and options will run the compiled loop; False when
        the accelerator is not active (:func:`robokin_ros.kernels.accel.active`) or these
        requests are stacked (no generated kernel).

    Raises:
        RobokinError: what :func:`~robokin_ros.ik.solve_ik` raises for these names or options.
    """
    options = IKOptions(base=base, active_joints=active_joints, position_tolerance=position_tolerance,
                        rotation_tolerance=rotation_tolerance, axis_tolerances=axis_tolerances,
                        max_iterations=max_iterations)
    call = ik_call(model, (tips,), options)
    loop = call.solver.loop
    return call.floats and loop is not None and loop.accelerate()
