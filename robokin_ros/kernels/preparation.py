"""Compile (or load from the disk cache) a model's numba kernels now, instead of on first use."""

from __future__ import annotations

from ..errors import ArgumentError
from ..model import RobotModel
from .dynamics_codegen import PREPARABLE
from .fk_codegen import compiled_fk, compiled_frames, compiled_jacobian, compiled_link_poses
from .plan import dynamics_tree_with_inertia

#: The dynamics calls prepared by ``robokin_ros.dynamics.prepare`` when none are named.
DEFAULT_DYNAMICS = ("rnea", "gravity_torques", "crba", "aba")


def prepare(model: RobotModel, frames=(), *, fk: bool = True, fk_variants=(), dynamics=()) -> bool:
    """Compile (or load from the disk cache) the accelerated kernels of ``model`` now, so that
    even single calls use them (e.g. at a node's or a controller's start-up).

    Without it a kernel is loaded in a background thread once
    :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations have gone through it. Compiling takes
    seconds per kernel for an arm and up to minutes for a humanoid's forward dynamics, once per
    machine (then read from the disk cache).

    Args:
        model: the robot.
        frames: tuples of link names: for each, the poses + Jacobians kernel (as IK and
            :func:`robokin_ros.jacobian` of a batch use); for a tuple of one frame also its
            Jacobian-only kernel (:func:`robokin_ros.jacobian` of one configuration).
        fk: the FK of every link (what :func:`robokin_ros.forward_kinematics` uses).
        fk_variants: ``(layout, frames)`` pairs of the other output options of
            :func:`robokin_ros.forward_kinematics`: layout ``"4x4"``, ``"3x4"`` or ``"position"``
            (:func:`robokin_ros.link_positions`), frames None (every link) or link names / indices.
        dynamics: names among ``rnea``, ``gravity_torques``, ``nonlinear_effects``,
            ``coriolis_torques``, ``crba``, ``aba``, ``center_of_mass`` (default gravity).

    Returns:
        True when every kernel asked for is accelerated; False when the accelerator is not
        active (:func:`robokin_ros.kernels.accel.active`) or the model has no generated kernel
        (floating or planar joints).

    Raises:
        ArgumentError: an unknown name in ``dynamics``.
        ModelError: ``dynamics`` asked for a model without any inertial.
        UnknownLinkError: an unknown frame.
    """
    dynamics = tuple(dynamics)
    unknown = [c for c in dynamics if c not in PREPARABLE]
    if unknown:
        raise ArgumentError("dynamics", f"unknown calls {unknown}; choose among {sorted(PREPARABLE)}")
    frames = [tuple(f) for f in frames]
    kernels = ([compiled_fk(model)] if fk else []) + [compiled_frames(model, f) for f in frames]
    kernels += [compiled_jacobian(model, f[0]) for f in frames if len(f) == 1]
    kernels += [compiled_link_poses(model, model.link_indices(f), layout) for layout, f in fk_variants]
    ready = all(k is not None and k.accelerate() for k in kernels)
    if dynamics:
        tree = dynamics_tree_with_inertia(model)
        for call in dynamics:
            if call == "aba" and tree.massless_coordinates:   # aba of a singular M must raise: never loaded
                continue
            kernel = PREPARABLE[call](model)
            if kernel is None or not kernel.accelerate():
                ready = False
    return ready
