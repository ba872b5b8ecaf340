"""Loading an IK request's compiled step ahead of its first request: :func:`prepare_ik`."""

from __future__ import annotations

from ..model import RobotModel
from .call import ik_call
from .options import DEFAULT_MAX_ITERATIONS, IKOptions


def prepare_ik(model: RobotModel, tips: str, *, base: str | None = None, active_joints=None,
               position_tolerance: float = 1e-5, rotation_tolerance: float = 1e-5, axis_tolerances=None,
               max_iterations: int = DEFAULT_MAX_ITERATIONS) -> bool:
    """Load (compile, or read from the disk cache) the compiled loop of requests with these
    names and options now (e.g. at start-up), instead of in the background once the other paths
    have done :data:`robokin_ros.kernels.accel.MIN_BATCH` iterations. Compiling
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
    return call.single_lane and loop is not None and loop.accelerate()
