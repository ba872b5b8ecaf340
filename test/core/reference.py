"""Test oracles written independently of robokin_ros.kinematics / jacobians.

- :func:`reference_fk`: world pose of every link for ONE configuration, by a plain loop over
  joints with 4x4 matrices (no plan, no folding of fixed joints, no batching).
- :func:`perturb`: move a configuration along one velocity coordinate (floating joints: the
  velocity is in the child frame, so the pose is integrated on the right).
- :func:`fd_jacobians`: central finite-difference Jacobians of every link (or of a point fixed
  in it) in the three references, built from :func:`reference_fk` only.
- :func:`random_tree`: a random kinematic tree with every joint type and mimic joints.
- :func:`run_generated`: a generated kernel's straight-line code run by the interpreter (its
  arithmetic tested without compiling it; the library runs it only compiled).
"""

from __future__ import annotations

import math

import numpy as np

from robokin_ros import JointType, ModelFields, RobotModel


def rodrigues(axis, angle: float) -> np.ndarray:
    """Rotation ``(3, 3)`` of ``angle`` [rad] about the unit ``axis``."""
    x, y, z = np.asarray(axis, float) / np.linalg.norm(axis)
    c, s = np.cos(angle), np.sin(angle)
    C = 1.0 - c
    return np.array([[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
                     [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
                     [z * x * C - y * s, z * y * C + x * s, c + z * z * C]])


def quaternion_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """Rotation ``(3, 3)`` of the quaternion (x, y, z, w) (normalised first)."""
    n = np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z]])


def homogeneous(R=None, p=None) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def plane_basis(axis) -> np.ndarray:
    """The documented planar-joint convention: columns x, y span the plane, z is the axis;
    x is the world x axis (or y when the axis is within ~25° of x) projected into the plane."""
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([0.0, 1.0, 0.0]) if abs(z[0]) >= 0.9 else np.array([1.0, 0.0, 0.0])
    x = helper - z * np.dot(helper, z)
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def joint_motion(model: RobotModel, j: int, q: np.ndarray) -> np.ndarray:
    """Transform ``(4, 4)`` from joint j's frame to its child link for configuration ``q``."""
    t = JointType(int(model.joint_types[j]))
    axis = model.joint_axes[j]
    if t == JointType.FIXED:
        return np.eye(4)
    if t in (JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC):
        if model.mimic_source[j] >= 0:
            s = int(model.mimic_source[j])
            value = model.mimic_multiplier[j] * q[model.joint_q_index[s]] + model.mimic_offset[j]
        else:
            value = q[model.joint_q_index[j]]
        if t == JointType.PRISMATIC:
            return homogeneous(p=value * np.asarray(axis))
        return homogeneous(R=rodrigues(axis, value))
    i = int(model.joint_q_index[j])
    if t == JointType.FLOATING:
        return homogeneous(R=quaternion_matrix(*q[i + 3:i + 7]), p=q[i:i + 3])
    A = plane_basis(axis)  # planar: [x, y, θ] in the plane normal to the axis
    return homogeneous(R=A @ rodrigues([0, 0, 1], q[i + 2]) @ A.T, p=A[:, 0] * q[i] + A[:, 1] * q[i + 1])


def reference_fk(model: RobotModel, q) -> np.ndarray:
    """World pose of every link ``(n_links, 4, 4)`` for one configuration ``q (n_q,)``."""
    q = np.asarray(q, float)
    T = [np.eye(4)]
    for j in range(model.n_joints):
        parent = int(model.link_parents[j + 1])
        T.append(T[parent] @ model.joint_origins[j] @ joint_motion(model, j, q))
    return np.array(T)


def skew(w) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def exp_rotation(w) -> np.ndarray:
    theta = np.linalg.norm(w)
    return np.eye(3) if theta == 0.0 else rodrigues(np.asarray(w) / theta, theta)


def log_rotation(R) -> np.ndarray:
    """Rotation vector of a rotation close to the identity (angle well below π)."""
    theta = np.arccos(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0))
    vee = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return vee * (0.5 if theta < 1e-12 else theta / (2.0 * np.sin(theta)))


def perturb(model: RobotModel, q, k: int, h: float) -> np.ndarray:
    """``q`` moved by ``h`` along velocity coordinate ``k``.

    Every coordinate but a floating joint's is a plain q coordinate (mimic joints have none).
    A floating joint's v = [linear; angular] is in its child frame: T ← T · (exp(h ω), h v).
    """
    q = np.array(q, float)
    for j in model.active_joints:
        vi, nv = int(model.joint_v_index[j]), int(model.joint_nv[j])
        if not vi <= k < vi + nv:
            continue
        qi = int(model.joint_q_index[j])
        if model.joint_types[j] != JointType.FLOATING:
            q[qi + k - vi] += h
            return q
        R = quaternion_matrix(*q[qi + 3:qi + 7])
        twist = np.zeros(6)
        twist[k - vi] = h
        q[qi:qi + 3] += R @ twist[:3]
        q[qi + 3:qi + 7] = matrix_to_quaternion(R @ exp_rotation(twist[3:]))
        return q
    raise IndexError(k)


def matrix_to_quaternion(R) -> np.ndarray:
    """(x, y, z, w) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        return np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, s / 4])
    i = int(np.argmax(np.diag(R)))
    j, k = (i + 1) % 3, (i + 2) % 3
    s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
    out = np.empty(4)
    out[i] = s / 4
    out[j] = (R[j, i] + R[i, j]) / s
    out[k] = (R[k, i] + R[i, k]) / s
    out[3] = (R[k, j] - R[j, k]) / s
    return out


def fd_jacobians(model: RobotModel, q, point=None, h: float = 1e-6) -> dict[str, np.ndarray]:
    """Central finite-difference Jacobians ``(n_links, 6, n_v)`` of every link (or of ``point``,
    given in each link's frame) in the three references, from :func:`reference_fk` only.

    Returns ``{"world", "local", "local_world_aligned"}``, rows [linear; angular]:
    LWA = [ṗ; ω], LOCAL = Rᵀ LWA, WORLD = [ṗ - ω × p; ω] (ω the world angular velocity).
    """
    point = np.zeros(3) if point is None else np.asarray(point, float)
    T0 = reference_fk(model, q)
    R0, p0 = T0[:, :3, :3], T0[:, :3, :3] @ point + T0[:, :3, 3]
    lwa = np.zeros((model.n_links, 6, model.n_v))
    for k in range(model.n_v):
        Tp = reference_fk(model, perturb(model, q, k, h))
        Tm = reference_fk(model, perturb(model, q, k, -h))
        pp, pm = Tp[:, :3, :3] @ point + Tp[:, :3, 3], Tm[:, :3, :3] @ point + Tm[:, :3, 3]
        lwa[:, :3, k] = (pp - pm) / (2 * h)
        for i in range(model.n_links):
            lwa[i, 3:, k] = log_rotation(Tp[i, :3, :3] @ Tm[i, :3, :3].T) / (2 * h)
    Rt = np.swapaxes(R0, 1, 2)
    local = np.concatenate([Rt @ lwa[:, :3], Rt @ lwa[:, 3:]], axis=1)
    world = np.concatenate([lwa[:, :3] - np.cross(lwa[:, 3:], p0[:, :, None], axis=1), lwa[:, 3:]], axis=1)
    return {"world": world, "local": local, "local_world_aligned": lwa}


def random_tree(rng: np.random.Generator, n_links: int, types=None, mimic: bool = True) -> RobotModel:
    """A random tree of ``n_links`` links (each parent drawn among earlier links), random joint
    types among ``types`` (default: all), random unit axes and placements, and — when ``mimic`` —
    some 1-DOF joints mimicking an earlier independent 1-DOF joint."""
    types = list(types) if types is not None else list(JointType)
    n_j = n_links - 1
    parents = [int(rng.integers(0, j + 1)) for j in range(n_j)]
    jt = [int(rng.choice(types)) for _ in range(n_j)]
    axes = rng.normal(size=(n_j, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    origins = np.array([homogeneous(R=exp_rotation(rng.normal(size=3)), p=rng.uniform(-0.5, 0.5, 3))
                        for _ in range(n_j)])
    bounded = np.isin(jt, [int(JointType.REVOLUTE), int(JointType.PRISMATIC)])
    lower = np.where(bounded, rng.uniform(-2.0, 0.0, n_j), -np.inf)
    upper = np.where(bounded, lower + rng.uniform(0.1, 3.0, n_j), np.inf)
    src, mult, off = np.full(n_j, -1), np.ones(n_j), np.zeros(n_j)
    scalar = {int(JointType.REVOLUTE), int(JointType.CONTINUOUS), int(JointType.PRISMATIC)}
    if mimic:
        for j in range(n_j):
            candidates = [k for k in range(j) if jt[k] in scalar and src[k] < 0]
            if jt[j] in scalar and candidates and rng.random() < 0.3:
                src[j] = int(rng.choice(candidates))
                mult[j], off[j] = rng.uniform(-2, 2), rng.uniform(-0.5, 0.5)
    return RobotModel.create(ModelFields(
        name="random", link_names=[f"l{i}" for i in range(n_links)],
        joint_names=[f"j{j}" for j in range(n_j)], joint_parents=parents, joint_types=jt,
        joint_axes=axes, joint_origins=origins, joint_lower=lower, joint_upper=upper,
        mimic_source=src, mimic_multiplier=mult, mimic_offset=off))


def run_generated(generated, x) -> np.ndarray:
    """A generated kernel's body (``robokin_ros.kernels.emitter.GeneratedKernel``: lines reading
    ``q[i]``, ``cos``, ``sin``, ``recip``) run by the interpreter on one input vector ``x`` (the
    inputs side by side), with Python floats: its result, shaped like its template."""
    every = ", ".join(repr(v) if isinstance(v, float) else v for v in generated.values)
    source = "def kernel(q):\n" + "\n".join(generated.body) + f"\n    return [{every}]\n"
    namespace = {"cos": math.cos, "sin": math.sin, "inf": math.inf, "nan": math.nan,
                 "recip": lambda v: 1.0 / v if v else math.copysign(math.inf, v)}
    exec(compile(source, "<generated kernel>", "exec"), namespace)  # noqa: S102 - the library's own generated code
    return np.array(namespace["kernel"]([float(v) for v in x])).reshape(generated.template.shape)
