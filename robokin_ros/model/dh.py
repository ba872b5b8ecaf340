"""Denavit–Hartenberg tables -> the fields of a RobotModel (a serial chain with a tool frame).

Columns of a table row, in this order: ``(a, alpha, d, theta_offset)`` [m, rad, m, rad].

* ``convention="standard"`` (distal DH): row ``i`` holds ``a_i, α_i, d_i, θ_i`` and
  ``T_{i-1,i} = Rz(θ_i) · Tz(d_i) · Tx(a_i) · Rx(α_i)``.
* ``convention="modified"`` (proximal, Craig): row ``i`` holds ``a_{i-1}, α_{i-1}, d_i, θ_i`` and
  ``T_{i-1,i} = Rx(α_{i-1}) · Tx(a_{i-1}) · Rz(θ_i) · Tz(d_i)``.

Joint ``i`` moves along / about z of its DH frame: a revolute row has ``θ_i = theta_offset + q_i``,
a prismatic row ``d_i = d + q_i`` (the table's ``d`` is its value at ``q_i = 0``).

The model has links ``base, link1 … link_n, tool``: the base link is DH frame 0 placed by ``base``;
link ``i`` is the child of joint ``i``. Because a URDF child frame coincides with its joint frame,
link ``i`` is, in the modified convention, DH frame ``i`` itself; in the standard convention it is
DH frame ``i - 1`` moved by joint ``i`` (``Rz(θ_i)`` or ``Rz(θ_offset) Tz(q_i)``), and DH frame ``i``
is ``link_i · Tz(d_i) Tx(a_i) Rx(α_i)`` (the table's ``d_i``, without ``q_i``).
The tool link hangs from link ``n`` by a fixed joint and equals ``DH frame n · tool``. So in both
conventions ``T_base_tool(q) = base · Π_i T_{i-1,i}(q_i) · tool``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..checks import numbers, rigid_transform, sequence
from ..errors import ModelError, NonFiniteError, ShapeError
from .elements import JointType
from .fields import ModelFields

_CONVENTIONS = ("standard", "modified")
_COLUMNS = ("a", "alpha", "d", "theta_offset")
_ROW_TYPES = {"revolute": JointType.REVOLUTE, "prismatic": JointType.PRISMATIC}


def _rz(t: float) -> np.ndarray:
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _rx(t: float) -> np.ndarray:
    c, s = np.cos(t), np.sin(t)
    return np.array([[1.0, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]])


def _translation(x=0.0, z=0.0) -> np.ndarray:
    T = np.eye(4)
    T[0, 3], T[2, 3] = x, z
    return T


def _names(given, default: list[str], what: str) -> list[str]:
    if given is None:
        return default
    names = [str(n) for n in sequence(given, what)]
    if len(names) != len(default):
        raise ModelError(f"{what} must have {len(default)} names, got {len(names)}")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ModelError(f"{what} has duplicate names {dupes}")
    return names


def _limits(limits, types: list[JointType], names: list[str]) -> tuple[np.ndarray, np.ndarray, list[JointType]]:
    n = len(types)
    if limits is None:
        missing = [names[i] for i, t in enumerate(types) if t == JointType.PRISMATIC]
        if missing:
            raise ModelError(f"prismatic joints {missing} need limits (pass limits=[(lower, upper), ...])")
        return np.full(n, -np.inf), np.full(n, np.inf), [JointType.CONTINUOUS] * n
    lim = numbers(limits, "limits")
    if lim.shape != (n, 2):
        raise ShapeError("limits", f"({n}, 2)", lim.shape)
    if np.any(np.isnan(lim)):
        raise NonFiniteError("limits", np.flatnonzero(np.isnan(lim).any(axis=1)).tolist())
    out = list(types)
    for i in range(n):
        lo, hi = lim[i]
        unbounded = np.isinf(lo) and np.isinf(hi) and lo < 0 < hi
        if unbounded and types[i] == JointType.REVOLUTE:
            out[i] = JointType.CONTINUOUS
        elif not (np.isfinite(lo) and np.isfinite(hi)):
            raise ModelError(f"joint {names[i]!r} has non-finite limits ({lo:g}, {hi:g}); only a revolute "
                             "joint may be unbounded, with (-inf, inf)")
        elif lo > hi:
            raise ModelError(f"joint {names[i]!r} has lower limit {lo:g} > upper limit {hi:g}")
    return lim[:, 0].copy(), lim[:, 1].copy(), out


def dh_fields(table, convention: str = "standard", joint_types: Sequence[str] | None = None,
              limits=None, tool=None, base=None, name: str = "dh_robot",
              link_names: Sequence[str] | None = None,
              joint_names: Sequence[str] | None = None) -> ModelFields:
    """The fields of the model of a serial robot given by a DH table (:meth:`RobotModel.from_dh`
    makes the model of them with :meth:`RobotModel.create`).

    Args:
        table: ``(n, 4)`` rows ``(a, alpha, d, theta_offset)`` [m, rad, m, rad]; in the modified
            convention ``a`` and ``alpha`` are ``a_{i-1}``, ``α_{i-1}`` (Craig's table layout).
        convention: ``"standard"`` (distal) or ``"modified"`` (proximal, Craig).
        joint_types: ``"revolute"`` or ``"prismatic"`` per row (default: all revolute).
        limits: ``(n, 2)`` lower/upper per joint [rad or m]. ``None``: every revolute joint is
            continuous (unbounded) and prismatic joints are an error; a revolute row of
            ``(-inf, inf)`` makes that joint continuous.
        tool: ``(4, 4)`` pose of the tool link in DH frame n (default identity).
        base: ``(4, 4)`` pose of DH frame 0 in the base link (default identity).
        name: the model's name.
        link_names: ``n + 2`` names (base, one per joint, tool); default
            ``base_link, link1 … link_n, tool``.
        joint_names: ``n`` names of the moving joints; default ``joint1 … joint_n``. The fixed
            tool joint is named ``<tool link>_joint``.

    Returns:
        The fields of a model with ``n_q = n_v = n`` (massless links).

    Raises:
        ShapeError: ``table`` is not ``(n, 4)`` with ``n >= 1``, or ``limits`` / ``tool`` /
            ``base`` have the wrong shape.
        NonFiniteError: NaN or inf in the table (rows named).
        ModelError: unknown convention or joint type, wrong number of names, duplicate names,
            bad limits, or a non-rigid ``tool`` / ``base``.
    """
    rows = numbers(table, "table")
    if rows.ndim != 2 or rows.shape[1] != 4 or rows.shape[0] < 1:
        raise ShapeError("table", "(n, 4) with rows (a, alpha, d, theta_offset), n >= 1", rows.shape)
    bad = ~np.isfinite(rows)
    if bad.any():
        where = [f"row {i} {_COLUMNS[c]}" for i, c in zip(*np.nonzero(bad))]
        raise NonFiniteError("table", np.flatnonzero(bad.any(axis=1)).tolist(), where)
    if convention not in _CONVENTIONS:
        raise ModelError(f"unknown DH convention {convention!r}; expected one of {', '.join(_CONVENTIONS)}")
    n = rows.shape[0]
    if joint_types is None:
        types = [JointType.REVOLUTE] * n
    else:
        given = list(sequence(joint_types, "joint_types"))
        if len(given) != n:
            raise ModelError(f"joint_types must have {n} entries (one per row), got {len(given)}")
        unknown = [t for t in given if str(t).lower() not in _ROW_TYPES]
        if unknown:
            raise ModelError(f"unknown DH joint types {unknown}; expected 'revolute' or 'prismatic'")
        types = [_ROW_TYPES[str(t).lower()] for t in given]
    links = _names(link_names, ["base_link"] + [f"link{i + 1}" for i in range(n)] + ["tool"], "link_names")
    joints = _names(joint_names, [f"joint{i + 1}" for i in range(n)], "joint_names") + [f"{links[-1]}_joint"]
    if len(set(joints)) != len(joints):
        raise ModelError(f"joint_names clashes with the tool joint name {joints[-1]!r}")
    lower, upper, types = _limits(limits, types, joints)
    tool_T = np.eye(4) if tool is None else rigid_transform(tool, "tool")
    previous = np.eye(4) if base is None else rigid_transform(base, "base")  # fixed part after the last joint
    origins = []
    for (a, alpha, d, theta), _t in zip(rows, types):
        if convention == "standard":
            origins.append(previous @ _rz(theta))
            previous = _translation(z=d) @ _translation(x=a) @ _rx(alpha)
        else:
            origins.append(previous @ _rx(alpha) @ _translation(x=a) @ _rz(theta) @ _translation(z=d))
            previous = np.eye(4)
    origins.append(previous @ tool_T)
    return ModelFields(
        name=name, link_names=links, joint_names=joints, joint_parents=list(range(n + 1)),
        joint_types=list(types) + [JointType.FIXED], joint_axes=np.tile([0.0, 0.0, 1.0], (n + 1, 1)),
        joint_origins=np.array(origins), joint_lower=np.append(lower, -np.inf),
        joint_upper=np.append(upper, np.inf))
