"""The generic compiled tier's dynamics: the kernels of
:mod:`robokin_ros.kernels.generic_dynamics_numba` bound to one model's arrays.

They are loaded with the generic FK kernels, once per process, by the one loader of
:mod:`robokin_ros.kernels.generic_tier` (:func:`~robokin_ros.kernels.generic_tier.generic_kernels`:
numba's cache of the installation, or a compile in a separate process in the background).
:func:`dynamics_arrays` lays a model out as they read it (per model, cached); :func:`bound` gives
the :class:`~robokin_ros.kernels.generic_tier.Bound` pair of one call: ``single(q, ..., out) ->
status`` with the inputs of the generated kernel's single entry, and the ``batch(qb, ..., out,
claims)`` that :func:`robokin_ros.kernels.parallel.run_rows` runs on threads.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import model_cache
from ..model import JointType, RobotModel
from . import generic_tier
from .plan import dynamics_tree

#: The calls of the tier: the generated kernel each stands in for (``rnea``: ``with_v`` and
#: ``with_a``; ``nonlinear``: ``with_v`` only; ``gravity``: neither; ``crba``; ``aba``: forward dynamics).
CALLS = ("rnea", "nonlinear", "gravity", "crba", "aba")
#: Entries per body of ``fdata`` (:data:`robokin_ros.kernels.generic_dynamics_numba.FLOATS`).
FLOATS = 63


def _skew(u) -> np.ndarray:
    return np.array([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])


class DynamicsArrays:
    """A model's dynamics tree as the generic kernels read it (see
    :mod:`robokin_ros.kernels.generic_dynamics_numba`); :attr:`covered` is False for a model with
    a floating or planar joint (or without any inertial)."""

    def __init__(self, model: RobotModel):
        tree = dynamics_tree(model)
        self.covered = tree.has_inertial and \
            not np.any(np.isin(model.joint_types, (JointType.FLOATING, JointType.PLANAR)))
        nb = tree.n_bodies
        self.fdata, self.idata = np.zeros((nb, FLOATS)), np.zeros((nb, 4), np.int64)
        self.idata[0, 2:] = model.n_v, model.n_q          # (the root's row holds n_v, n_q)
        if not self.covered:
            return
        plan = tree.plan
        scalar_pos = {int(link): k for k, link in enumerate(plan.scalar_links)}
        for b in range(1, nb):
            link = int(tree.body_links[b])
            j, k = link - 1, scalar_pos[link]
            CR, u = plan.C[link, :3, :3], model.joint_axes[j]
            K, c, m = _skew(u), tree.com[b], float(tree.mass[b])
            I_o = tree.I_com[b] + m * (float(c @ c) * np.eye(3) - np.outer(c, c))
            f = self.fdata[b]
            f[0:9], f[9:18], f[18:27] = CR.T.ravel(), (K @ CR.T).ravel(), (K @ K @ CR.T).ravel()
            f[27:30], f[30:33], f[33:36] = plan.C[link, :3, 3], CR @ u, u
            f[36], f[37], f[38] = plan.scalar_mult[k], plan.scalar_offset[k], m
            f[39:42], f[42:51], f[51:54], f[54:63] = c, tree.I_com[b].ravel(), m * c, I_o.ravel()
            revolute = JointType(model.joint_types[j]) != JointType.PRISMATIC
            column = int(model.joint_v_index[int(model.velocity_source_joints[j])])
            self.idata[b] = tree.parent[b], 1 if revolute else 2, plan.scalar_q[k], column


#: The registry kind (:mod:`robokin_ros.model_cache`) of :func:`dynamics_arrays`.
GENERIC_DYNAMICS_ARRAYS = "generic dynamics arrays"


def dynamics_arrays(model: RobotModel) -> DynamicsArrays:
    """The model's :class:`DynamicsArrays` (built on first use, kept per model)."""
    return model_cache.cached(model, GENERIC_DYNAMICS_ARRAYS, None, DynamicsArrays, (model,))


def bound(arrays: DynamicsArrays, call: str, gravity) -> generic_tier.Bound | None:
    """The generic tier's kernel of ``call`` (one of :data:`CALLS`) on a model's ``arrays``
    under the constant ``gravity`` (3 floats; unused by ``crba``); None while the tier is not
    loaded (loading starts here) or turned off; :data:`~robokin_ros.kernels.generic_tier.NOT_COVERED`
    for a model with a floating or planar joint."""
    functions = generic_tier.generic_kernels().functions()
    if functions is None:
        return None
    if not arrays.covered:
        return generic_tier.NOT_COVERED
    head = (arrays.fdata, arrays.idata) if call == "crba" else \
        (arrays.fdata, arrays.idata, np.array(gravity, np.float64))
    return generic_tier.Bound(functools.partial(functions[f"{call}_single"], *head),
                              functools.partial(functions[f"{call}_batch"], *head))
