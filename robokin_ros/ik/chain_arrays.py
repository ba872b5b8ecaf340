"""The chain of an IK problem as arrays, the data of the compiled chain step
(:mod:`robokin_ros.ik.generic_loop`): what that step reads instead of constants folded into
generated code.

``data`` (:func:`chain_data`, unpacked by :func:`robokin_ros.ik.generic_loop.unpack`):
``origins (n_path, 4, 4)``, ``kinds (n_path,)`` (0 fixed, 1 revolute or continuous, 3
prismatic), ``axes (n_path, 3)``, ``source (n_path,)`` (the q index a joint's value follows, -1
fixed), ``multiplier, offset (n_path,)``, ``column (n_q,)`` (the free column of a q coordinate,
-1 held), ``free_q (n,)``, ``lower, upper (n,)``, ``wrap (n,)`` (bool), ``restart_q (r,)``,
``restart_lo, restart_width, restart_step (r,)``, ``weights (6,)``, ``tolerances (2,)`` (squared
position and rotation tolerances).
"""

from __future__ import annotations

import numpy as np

# (absolute imports: the generic loop's compiling process imports this module from its text)
from robokin_ros.model import JointType


def chain_data(solver) -> tuple | None:
    """The chain of ``solver`` (a :class:`~robokin_ros.ik.solver.Solver`) packed as ``(fdata
    (float64), idata (int64))`` for the chain step of :mod:`~robokin_ros.ik.generic_loop` (the arrays of the module
    docstring, see :func:`~robokin_ros.ik.generic_loop.unpack`), or None when they do not cover its problem."""
    s, model = solver, solver.model
    if s.n_tips != 1 or not s.tol.world or len(s.lm_rows) != 6 or not s.free or model.n_q != model.n_v:
        return None
    path, link = [], int(s.problem.tips[0])
    while link > 0:
        path.append(link - 1)
        link = int(model.link_parents[link])
    path.reverse()
    kinds, source, multiplier, offset = [], [], [], []
    for j in path:
        kind = JointType(model.joint_types[j])
        if kind not in (JointType.FIXED, JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC):
            return None
        src = int(model.mimic_source[j]) if model.is_mimic[j] else j
        if kind != JointType.FIXED and JointType(model.joint_types[src]) != kind:
            return None
        kinds.append(0 if kind == JointType.FIXED else 3 if kind == JointType.PRISMATIC else 1)
        source.append(-1 if kind == JointType.FIXED else int(model.joint_q_index[src]))
        multiplier.append(float(model.mimic_multiplier[j]) if model.is_mimic[j] else 1.0)
        offset.append(float(model.mimic_offset[j]) if model.is_mimic[j] else 0.0)
    free_q = np.array([i for _, (i, _, _) in s.free], np.int64)
    column = np.full(model.n_q, -1, np.int64)
    column[free_q] = np.arange(len(free_q))
    wrap = np.zeros(len(free_q), bool)
    wrap[s.wrap] = True
    restarts = s.restart_floats
    return pack({"origins": model.joint_origins[path], "kinds": kinds, "axes": model.joint_axes[path],
                 "source": source, "multiplier": multiplier, "offset": offset, "column": column, "free_q": free_q,
                 "lower": [lo for _, (_, lo, _) in s.free], "upper": [hi for _, (_, _, hi) in s.free], "wrap": wrap,
                 "restart_q": [r[0] for r in restarts], "restart_lo": [r[1] for r in restarts],
                 "restart_width": [r[2] for r in restarts], "restart_step": [r[3] for r in restarts],
                 "weights": s.weights, "tolerances": [s.tol.position ** 2, s.tol.rotation ** 2]})


def pack(chain: dict) -> tuple:
    """``(fdata, idata)`` of the chain's arrays, by name (the module docstring's)."""
    c = chain
    head = [len(c["kinds"]), len(c["free_q"]), len(c["restart_q"]), len(c["column"])]
    idata = np.concatenate([head, c["kinds"], c["source"], c["column"], c["free_q"], np.asarray(c["wrap"], np.int64),
                            c["restart_q"]]).astype(np.int64)
    fdata = np.concatenate([np.ravel(c["origins"]), np.ravel(c["axes"]), c["multiplier"], c["offset"], c["lower"],
                            c["upper"], c["restart_lo"], c["restart_width"], c["restart_step"], c["weights"],
                            c["tolerances"]]).astype(np.float64)
    return fdata, idata
