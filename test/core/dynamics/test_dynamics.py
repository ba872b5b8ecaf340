"""Tree dynamics: identities, a Lagrangian oracle, hand derivations and Pinocchio as a peer."""

from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pytest
from peers import ERD_ROBOTS, erd_urdf, pin_configuration, pin_model
from reference import perturb, random_tree, reference_fk

from robokin_ros import WORLD, JointType, KernelCheckError, ModelError, NonFiniteError, RobotModel, ShapeError, dynamics
from robokin_ros.dynamics import (
    aba,
    center_of_mass,
    center_of_mass_jacobian,
    coriolis_torques,
    crba,
    gravity_torques,
    kinetic_energy,
    nonlinear_effects,
    recursions,
    rnea,
    total_mass,
)
from robokin_ros.kernels import accel, dynamics_source, selection
from robokin_ros.kernels import dynamics_codegen as codegen_dynamics
from robokin_ros.kernels.emitter import Emitter
from robokin_ros.kernels.plan import dynamics_tree
from robokin_ros.kernels.selection import use
from robokin_ros.kinematics import jacobians

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
G = np.array([0.0, 0.0, -9.81])


def fixture(name: str) -> RobotModel:
    return RobotModel.from_urdf_file(os.path.join(FIXTURES, name + ".urdf"))


def bundled(name: str) -> RobotModel:
    return RobotModel.from_urdf_file(os.path.join(ROBOTS, name + ".urdf"))


def with_inertials(model: RobotModel, rng) -> RobotModel:
    """The model with random, physically valid inertials on every link."""
    n = model.n_links
    inertias = []
    for _ in range(n):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        a, b, c = rng.uniform(0.05, 0.5, 3)
        inertias.append(Q @ np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) @ Q.T / 12.0)
    return dataclasses.replace(model, link_masses=rng.uniform(0.2, 3.0, n), link_coms=rng.uniform(-0.2, 0.2, (n, 3)),
                               link_inertias=np.array(inertias), link_has_inertial=np.ones(n, bool))


def random_state(model: RobotModel, rng, n=None):
    shape = () if n is None else (n,)
    return (model.random_configuration(n, rng), rng.normal(size=shape + (model.n_v,)),
            rng.normal(size=shape + (model.n_v,)))


def random_robot(seed: int, types=None) -> RobotModel:
    rng = np.random.default_rng(seed)
    return with_inertials(random_tree(rng, 9, types=types, mimic=True), rng)


NO_FLOATING = [t for t in JointType if t != JointType.FLOATING]
MODELS = {
    "double_pendulum": lambda: fixture("double_pendulum"),
    "planar_2link": lambda: fixture("planar_2link"),
    "floating": lambda: fixture("floating"),
    "planar_joint": lambda: fixture("planar_joint"),
    "branched": lambda: fixture("branched"),
    "prismatic_continuous_mimic": lambda: fixture("prismatic_continuous_mimic"),
    "panda": lambda: bundled("panda"),
    "twin_arm_torso": lambda: bundled("twin_arm_torso"),
    "random_all_types": lambda: random_robot(1),
    "random_no_floating": lambda: random_robot(2, NO_FLOATING),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request) -> RobotModel:
    return MODELS[request.param]()


# ------------------------------------------------------------------------------------ identities
def test_mass_matrix_symmetric_positive_definite(model):
    q = model.random_configuration(5, np.random.default_rng(0))
    M = crba(model, q)
    assert M.shape == (5, model.n_v, model.n_v)
    np.testing.assert_allclose(M, np.swapaxes(M, -1, -2), rtol=0, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_rnea_is_mass_matrix_times_a_plus_nonlinear_effects(model):
    q, v, a = random_state(model, np.random.default_rng(1), 4)
    expected = np.einsum("bij,bj->bi", crba(model, q), a) + nonlinear_effects(model, q, v)
    np.testing.assert_allclose(rnea(model, q, v, a), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(nonlinear_effects(model, q, v), coriolis_torques(model, q, v) + gravity_torques(model, q),
                               rtol=1e-10, atol=1e-10)


def test_aba_inverts_rnea(model):
    q, v, a = random_state(model, np.random.default_rng(2), 4)
    np.testing.assert_allclose(aba(model, q, v, rnea(model, q, v, a)), a, rtol=1e-8, atol=1e-8)


def test_gravity_torques_are_rnea_at_rest(model):
    q = model.random_configuration(3, np.random.default_rng(3))
    zero = np.zeros((3, model.n_v))
    g = (0.3, -1.0, -9.0)
    np.testing.assert_allclose(gravity_torques(model, q, gravity=g), rnea(model, q, zero, zero, gravity=g), atol=1e-12)


def test_external_wrenches_enter_as_jacobian_transpose(model):
    rng = np.random.default_rng(4)
    q, v, a = random_state(model, rng)
    f = rng.normal(size=(model.n_links, 6))
    J = jacobians(model, q, WORLD)                                  # spatial, about the world origin
    expected = rnea(model, q, v, a) - np.einsum("lij,li->j", J, f)
    np.testing.assert_allclose(rnea(model, q, v, a, f_ext=f), expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(aba(model, q, v, expected, f_ext=f), a, rtol=1e-8, atol=1e-8)


def test_batched_equals_looped(model, monkeypatch):
    monkeypatch.setattr(recursions, "CHUNK", 4)   # 6 configurations: two kernel calls
    q, v, a = random_state(model, np.random.default_rng(5), 6)
    qb, vb, ab = q.reshape(2, 3, -1), v.reshape(2, 3, -1), a.reshape(2, 3, -1)
    tau, M, acc = rnea(model, qb, vb, ab), crba(model, qb), aba(model, qb, vb, ab)
    com, Jc, T = center_of_mass(model, qb), center_of_mass_jacobian(model, qb), kinetic_energy(model, qb, vb)
    assert tau.shape == (2, 3, model.n_v) and M.shape == (2, 3, model.n_v, model.n_v) and T.shape == (2, 3)
    for k in range(6):
        i, j = divmod(k, 3)
        np.testing.assert_allclose(tau[i, j], rnea(model, q[k], v[k], a[k]), atol=1e-12)
        np.testing.assert_allclose(M[i, j], crba(model, q[k]), atol=1e-12)
        np.testing.assert_allclose(acc[i, j], aba(model, q[k], v[k], a[k]), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(com[i, j], center_of_mass(model, q[k]), atol=1e-12)
        np.testing.assert_allclose(Jc[i, j], center_of_mass_jacobian(model, q[k]), atol=1e-12)
        np.testing.assert_allclose(T[i, j], kinetic_energy(model, q[k], v[k]), atol=1e-12)


def test_one_configuration_broadcasts_against_many_velocities(model):
    q, v, a = random_state(model, np.random.default_rng(6), 3)
    tau = rnea(model, q[0], v, a)
    np.testing.assert_allclose(tau[2], rnea(model, q[0], v[2], a[2]), atol=1e-12)


def test_center_of_mass_jacobian_matches_finite_differences(model):
    rng = np.random.default_rng(7)
    q, h = model.random_configuration(None, rng), 1e-6
    J = center_of_mass_jacobian(model, q)
    fd = np.stack([(center_of_mass(model, perturb(model, q, k, h)) - center_of_mass(model, perturb(model, q, k, -h))) / (2 * h)
                   for k in range(model.n_v)], axis=-1)
    np.testing.assert_allclose(J, fd, atol=1e-7)


def test_center_of_mass_is_mass_weighted_mean_of_link_coms(model):
    q = model.random_configuration(None, np.random.default_rng(8))
    T = reference_fk(model, q)
    coms = np.einsum("lij,lj->li", T[:, :3, :3], model.link_coms) + T[:, :3, 3]
    expected = model.link_masses @ coms / model.link_masses.sum()
    np.testing.assert_allclose(center_of_mass(model, q), expected, atol=1e-12)
    assert total_mass(model) == pytest.approx(model.link_masses.sum())


def link_velocity_energies(model: RobotModel, q, v) -> float:
    """Σ over links of ½ (m |v_com|² + ωᵀ I ω), velocities from the (world) Jacobians."""
    J = jacobians(model, q, WORLD)
    T = reference_fk(model, q)
    energy = 0.0
    for i in range(model.n_links):
        twist = J[i] @ v
        omega = twist[3:]
        com = T[i, :3, :3] @ model.link_coms[i] + T[i, :3, 3]
        v_com = twist[:3] + np.cross(omega, com)
        I_world = T[i, :3, :3] @ model.link_inertias[i] @ T[i, :3, :3].T
        energy += 0.5 * (model.link_masses[i] * v_com @ v_com + omega @ I_world @ omega)
    return energy


def test_kinetic_energy_three_ways(model):
    rng = np.random.default_rng(9)
    q, v, _ = random_state(model, rng)
    quadratic = 0.5 * v @ crba(model, q) @ v
    assert kinetic_energy(model, q, v) == pytest.approx(quadratic, rel=1e-10, abs=1e-12)
    assert quadratic == pytest.approx(link_velocity_energies(model, q, v), rel=1e-10, abs=1e-12)


# ------------------------------------------------------------------------------------ Lagrangian oracle
def jacobian_mass_matrix(model: RobotModel, q) -> np.ndarray:
    """M = Σ_links J_linkᵀ I_link J_link with body Jacobians and link-frame spatial inertias."""
    from robokin_ros import LOCAL

    J = jacobians(model, q, LOCAL)
    M = np.zeros((model.n_v, model.n_v))
    for i in range(model.n_links):
        m, c, Ic = model.link_masses[i], model.link_coms[i], model.link_inertias[i]
        C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        I6 = np.block([[m * np.eye(3), -m * C], [m * C, Ic - m * C @ C]])
        M += J[i].T @ I6 @ J[i]
    return M


def potential_energy(model: RobotModel, q) -> float:
    T = reference_fk(model, q)
    coms = np.einsum("lij,lj->li", T[:, :3, :3], model.link_coms) + T[:, :3, 3]
    return -float(model.link_masses @ coms @ G)


@pytest.mark.parametrize("name", ["twin_arm_torso", "panda", "prismatic_continuous_mimic", "planar_joint",
                                  "random_no_floating"])
def test_rnea_matches_lagrange_equations(name):
    """τ = M a + Ṁ v − ½ ∂(vᵀMv)/∂q + ∂V/∂q, with M from Jacobians and derivatives by differences.

    Independent of the dynamics code; covers mimic joints (a mimic joint's Jacobian column adds into
    its source's), prismatic, continuous and planar joints (for these models q̇ = v).
    """
    model = MODELS[name]()
    rng = np.random.default_rng(10)
    q, v, a = random_state(model, rng)
    h = 1e-6
    dM = [(jacobian_mass_matrix(model, perturb(model, q, k, h)) - jacobian_mass_matrix(model, perturb(model, q, k, -h))) / (2 * h)
          for k in range(model.n_v)]
    dV = [(potential_energy(model, perturb(model, q, k, h)) - potential_energy(model, perturb(model, q, k, -h))) / (2 * h)
          for k in range(model.n_v)]
    M = jacobian_mass_matrix(model, q)
    tau = M @ a + sum(v[k] * dM[k] for k in range(model.n_v)) @ v - 0.5 * np.array([v @ d @ v for d in dM]) + np.array(dV)
    np.testing.assert_allclose(crba(model, q), M, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rnea(model, q, v, a), tau, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------------ hand-derived
def test_double_pendulum_by_hand():
    model = fixture("double_pendulum")
    m1, m2, l1, l2, I, g = 1.0, 0.5, 1.0, 0.8, 1e-6, 9.81
    rng = np.random.default_rng(11)
    for _ in range(5):
        (q1, q2), (v1, v2), a = rng.uniform(-3, 3, 2), rng.normal(size=2), rng.normal(size=2)
        M = np.array([[m1 * l1**2 + m2 * (l1**2 + l2**2 + 2 * l1 * l2 * np.cos(q2)) + 2 * I, m2 * (l2**2 + l1 * l2 * np.cos(q2)) + I],
                      [m2 * (l2**2 + l1 * l2 * np.cos(q2)) + I, m2 * l2**2 + I]])
        hc = m2 * l1 * l2 * np.sin(q2)
        Cv = np.array([-hc * (2 * v1 * v2 + v2**2), hc * v1**2])
        grav = g * np.array([(m1 + m2) * l1 * np.sin(q1) + m2 * l2 * np.sin(q1 + q2), m2 * l2 * np.sin(q1 + q2)])
        q, v = np.array([q1, q2]), np.array([v1, v2])
        np.testing.assert_allclose(crba(model, q), M, atol=1e-12)
        np.testing.assert_allclose(coriolis_torques(model, q, v), Cv, atol=1e-12)
        np.testing.assert_allclose(gravity_torques(model, q), grav, atol=1e-12)
        np.testing.assert_allclose(rnea(model, q, v, a), M @ a + Cv + grav, atol=1e-12)
        np.testing.assert_allclose(aba(model, q, v, M @ a + Cv + grav), a, atol=1e-9)
        com = (m1 * np.array([-l1 * np.sin(q1), 0, -l1 * np.cos(q1)])
               + m2 * np.array([-l1 * np.sin(q1) - l2 * np.sin(q1 + q2), 0, -l1 * np.cos(q1) - l2 * np.cos(q1 + q2)])) / (m1 + m2)
        np.testing.assert_allclose(center_of_mass(model, q), com, atol=1e-12)


def test_planar_2link_by_hand():
    model = fixture("planar_2link")
    m1, m2, L1, c1, c2, I = 1.0, 2.0, 1.0, 0.5, 0.25, 1e-3
    for q2 in (-2.0, 0.0, 0.7):
        q = np.array([0.3, q2])
        M11 = I + m1 * c1**2 + I + m2 * (L1**2 + c2**2 + 2 * L1 * c2 * np.cos(q2))
        M12 = I + m2 * (c2**2 + L1 * c2 * np.cos(q2))
        np.testing.assert_allclose(crba(model, q), [[M11, M12], [M12, I + m2 * c2**2]], atol=1e-12)
        np.testing.assert_allclose(gravity_torques(model, q), 0.0, atol=1e-12)


# ------------------------------------------------------------------------------------ Pinocchio
def velocity_map(model: RobotModel, pmodel) -> np.ndarray:
    """``P (pin n_v, n_v)``: Pinocchio's velocity of ours (a mimic joint moves with its source)."""
    P = np.zeros((pmodel.nv, model.n_v))
    for jid in range(1, pmodel.njoints):
        joint = pmodel.joints[jid]
        j = model.joint_index(pmodel.names[jid])
        s = model.velocity_source_joints[j]
        scale = model.mimic_multiplier[j] if model.is_mimic[j] else 1.0
        for k in range(joint.nv):
            P[joint.idx_v + k, model.joint_v_index[s] + k] = scale
    return P


def floating_urdf(path: str, root: str) -> str:
    """The URDF at ``path`` with a ``world`` link and a floating ``root_joint`` above ``root``."""
    with open(path) as f:
        text = f.read()
    extra = (f'<link name="world"/><joint name="root_joint" type="floating"><parent link="world"/>'
             f'<child link="{root}"/></joint>')
    return re.sub(r"(<robot\b[^>]*>)", lambda m: m.group(1) + extra, text, count=1)


def assert_close(ours, theirs, rtol=1e-9):
    scale = max(1.0, float(np.abs(theirs).max()))
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * scale)


PIN_CASES = [(name, False) for name in ("ur5", "panda", "xarm7", "talos", "solo12", "anymal_c", "go1", "kinova",
                                        "baxter", "tiago", "z1", "romeo")] + [("talos", True), ("solo12", True)]


@pytest.mark.parametrize("name,floating", PIN_CASES, ids=[f"{n}{'-floating' if f else ''}" for n, f in PIN_CASES])
def test_agrees_with_pinocchio(name, floating):
    pin = pytest.importorskip("pinocchio")
    path = erd_urdf(ERD_ROBOTS[name])
    model = RobotModel.from_urdf_file(path)
    if floating:
        model = RobotModel.from_urdf(floating_urdf(path, model.root_link))
    pm, pd = pin_model(path, floating=floating)
    P = velocity_map(model, pm)
    rng = np.random.default_rng(12)
    for _ in range(2):
        q, v, a = random_state(model, rng)
        pq = pin_configuration(model, pm, q)
        assert_close(rnea(model, q, v, a), P.T @ pin.rnea(pm, pd, pq, P @ v, P @ a))
        Mp = pin.crba(pm, pd, pq)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert_close(crba(model, q), P.T @ Mp @ P)
        assert_close(gravity_torques(model, q), P.T @ pin.computeGeneralizedGravity(pm, pd, pq))
        assert_close(nonlinear_effects(model, q, v), P.T @ pin.nonLinearEffects(pm, pd, pq, P @ v))
        assert_close(kinetic_energy(model, q, v), pin.computeKineticEnergy(pm, pd, pq, P @ v))
        if not model.is_mimic.any():   # then P is a permutation
            tau = rng.normal(size=model.n_v)
            assert_close(aba(model, q, v, tau), P.T @ pin.aba(pm, pd, pq, P @ v, P @ tau))
        # Pinocchio leaves out what is welded to the universe (a fixed base); we count every link.
        m0, c0 = pm.inertias[0].mass, pm.inertias[0].lever
        m_pin = pin.computeTotalMass(pm)
        assert total_mass(model) == pytest.approx(m_pin + m0, rel=1e-12)
        com_pin = pin.centerOfMass(pm, pd, pq)
        assert_close(center_of_mass(model, q), (m_pin * com_pin + m0 * c0) / (m_pin + m0))
        Jc = pin.jacobianCenterOfMass(pm, pd, pq) @ P
        assert_close(center_of_mass_jacobian(model, q) * total_mass(model), Jc * m_pin)


def test_external_wrenches_agree_with_pinocchio():
    pin = pytest.importorskip("pinocchio")
    path = erd_urdf(ERD_ROBOTS["solo12"])
    model = RobotModel.from_urdf_file(path)
    pm, pd = pin_model(path)
    rng = np.random.default_rng(13)
    q, v, a = random_state(model, rng)
    pq = pin_configuration(model, pm, q)
    pin.forwardKinematics(pm, pd, pq)
    f_world = np.zeros((model.n_links, 6))
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for jid in range(1, pm.njoints):   # a wrench on each joint's child link, given to Pinocchio in its frame
        link = model.joint_index(pm.names[jid]) + 1
        f_world[link] = rng.normal(size=6)
        R, p = pd.oMi[jid].rotation, pd.oMi[jid].translation
        force, torque = f_world[link, :3], f_world[link, 3:]
        fext[jid] = pin.Force(np.concatenate([R.T @ force, R.T @ (torque - np.cross(p, force))]))
    assert_close(rnea(model, q, v, a, f_ext=f_world), pin.rnea(pm, pd, pq, v, a, fext))


# ------------------------------------------------------------------------------------ errors
def test_model_without_inertials_raises_from_dynamics_only():
    model = random_tree(np.random.default_rng(14), 4, types=[JointType.REVOLUTE], mimic=False)
    q = model.home_configuration()
    z = np.zeros(model.n_v)
    from robokin_ros import forward_kinematics

    assert forward_kinematics(model, q).shape == (4, 4, 4)
    for call in (lambda: rnea(model, q, z, z), lambda: crba(model, q), lambda: aba(model, q, z, z),
                 lambda: gravity_torques(model, q), lambda: nonlinear_effects(model, q, z),
                 lambda: kinetic_energy(model, q, z)):
        with pytest.raises(ModelError, match="no <inertial> on any link"):
            call()
    with pytest.raises(ModelError, match="has no mass: its centre of mass is undefined"):
        center_of_mass(model, q)


def test_aba_names_coordinates_that_move_no_mass():
    model = fixture("double_pendulum")
    masses = model.link_masses.copy()
    masses[2] = 0.0
    light = dataclasses.replace(model, link_masses=masses, link_inertias=np.zeros_like(model.link_inertias))
    assert crba(light, np.zeros(2))[1, 1] == 0.0
    with pytest.raises(ModelError, match=r"coordinates \['joint2'\] move no mass"):
        aba(light, np.zeros(2), np.zeros(2), np.zeros(2))


def test_bad_shapes_and_values_raise():
    model = fixture("double_pendulum")
    q, z = np.zeros(2), np.zeros(2)
    with pytest.raises(ShapeError, match=r"q must have shape \(\.\.\., 2\), got \(3,\)"):
        rnea(model, np.zeros(3), z, z)
    with pytest.raises(ShapeError, match=r"v must have shape \(\.\.\., 2\), got \(1,\)"):
        rnea(model, q, np.zeros(1), z)
    with pytest.raises(ShapeError, match=r"a must have shape \(\.\.\., 2\), got \(\)"):
        rnea(model, q, z, 0.0)
    with pytest.raises(ShapeError, match=r"tau must have shape \(\.\.\., 2\), got \(2, 3\)"):
        aba(model, q, z, np.zeros((2, 3)))
    with pytest.raises(ShapeError, match=r"f_ext must have shape \(\.\.\., 4, 6\), got \(3, 6\)"):
        rnea(model, q, z, z, f_ext=np.zeros((3, 6)))
    with pytest.raises(ShapeError, match=r"gravity must have shape \(3,\), got \(2,\)"):
        gravity_torques(model, q, gravity=(0.0, 1.0))
    with pytest.raises(ShapeError, match="q, v, a must have shape batch dimensions that broadcast together"):
        rnea(model, np.zeros((2, 2)), np.zeros((3, 2)), z)
    with pytest.raises(NonFiniteError, match=r"v has non-finite entries at \['joint2'\]"):
        nonlinear_effects(model, q, [0.0, np.nan])
    with pytest.raises(NonFiniteError, match=r"q has non-finite entries at \['joint2'\]"):
        gravity_torques(model, np.array([0.0, np.inf]))     # a 1-D float64 q: the generated fast path
    with pytest.raises(NonFiniteError, match=r"tau has non-finite entries at \['joint1'\]"):
        aba(model, q, z, np.array([np.nan, 0.0]))
    with pytest.raises(NonFiniteError, match=r"f_ext has non-finite entries at \['tip'\]"):
        rnea(model, q, z, z, f_ext=np.where(np.arange(4)[:, None] == 3, np.inf, np.zeros((4, 6))))
    with pytest.raises(NonFiniteError, match=r"gravity has non-finite entries at \[2\]"):
        gravity_torques(model, q, gravity=(0.0, 0.0, np.nan))


# ------------------------------------------------------------------------------------ generated kernels
def load(name: str) -> RobotModel:
    if name in MODELS:
        return MODELS[name]()
    if os.path.exists(os.path.join(ROBOTS, name + ".urdf")):
        return bundled(name)
    if name in ERD_ROBOTS:
        return RobotModel.from_urdf_file(erd_urdf(ERD_ROBOTS[name]))
    return random_robot(int(name.split("_")[-1]), [JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC,
                                                 JointType.FIXED])


GENERATED_CASES = ["panda", "twin_arm_torso", "ur5e", "double_pendulum", "planar_2link", "branched",
                   "prismatic_continuous_mimic", "random_mimic_3", "ur5", "xarm7", "talos", "solo12", "anymal_c",
                   "go1", "kinova", "baxter", "z1"]


def generic(call, *args, **kwargs):
    """``call`` with the generated kernels switched off."""
    with selection.use("generic"):
        return call(*args, **kwargs)


@pytest.mark.parametrize("name", GENERATED_CASES)
def test_generated_kernels_equal_generic_kernels(name):
    model = load(name)
    assert codegen_dynamics.compiled_crba(model) is not None
    rng = np.random.default_rng(20)
    q, v, a = random_state(model, rng, 5)
    tau = rng.normal(size=(5, model.n_v))
    cases = [(rnea, (q, v, a), {}), (rnea, (q, v, a), {"gravity": (0.3, -1.0, -9.0)}), (crba, (q,), {}),
             (gravity_torques, (q,), {}), (gravity_torques, (q,), {"gravity": (0.0, 2.0, 0.0)}),
             (nonlinear_effects, (q, v), {}), (coriolis_torques, (q, v), {}), (center_of_mass, (q,), {})]
    for call, args, kwargs in cases:
        expected = generic(call, model, *args, **kwargs)
        assert_close(call(model, *args, **kwargs), expected, rtol=1e-12)                    # batch
        assert_close(call(model, *(x[3] for x in args), **kwargs), expected[3], rtol=1e-12)  # one configuration
    if not dynamics_tree(model).massless_coordinates:
        # a different algorithm (Lᵀ D L solve against ABA): agreement limited by the conditioning of M
        expected = generic(aba, model, q, v, tau)
        assert_close(aba(model, q, v, tau), expected, rtol=1e-9)
        assert_close(aba(model, q[1], v[1], tau[1], gravity=(1.0, 0.0, -3.0)),
                     generic(aba, model, q[1], v[1], tau[1], gravity=(1.0, 0.0, -3.0)), rtol=1e-9)


def test_generated_kernels_take_any_array_like_and_batch_shape():
    model = bundled("twin_arm_torso")
    q, v, a = random_state(model, np.random.default_rng(21), 6)
    expected = generic(rnea, model, q, v, a)
    np.testing.assert_allclose(rnea(model, q[2].tolist(), list(v[2]), a[2].astype(np.float32)),
                               generic(rnea, model, q[2].tolist(), list(v[2]), a[2].astype(np.float32)),
                               rtol=0, atol=1e-12)
    tau = rnea(model, q.reshape(2, 3, -1), v.reshape(2, 3, -1), a.reshape(2, 3, -1))
    assert tau.shape == (2, 3, model.n_v)
    np.testing.assert_allclose(tau.reshape(6, -1), expected, rtol=0, atol=1e-12)
    M = crba(model, q.reshape(3, 2, -1))
    assert M.shape == (3, 2, model.n_v, model.n_v) and M.flags.c_contiguous
    np.testing.assert_allclose(M.reshape(6, model.n_v, model.n_v), generic(crba, model, q), rtol=0, atol=1e-12)
    assert crba(model, q[:0]).shape == (0, model.n_v, model.n_v)


def test_public_functions_dispatch_to_generated_kernels_unless_f_ext(monkeypatch):
    model = bundled("panda")
    used = []

    def spy(factory):
        def wrapped(*args):
            kernel = factory(*args)
            used.append(factory.__name__)
            return kernel
        return wrapped

    for name in ("compiled_rnea", "compiled_crba", "compiled_forward_dynamics"):
        monkeypatch.setattr(dynamics, name, spy(getattr(codegen_dynamics, name)))
    q, v, a = random_state(model, np.random.default_rng(22))
    rnea(model, q, v, a)
    crba(model, q)
    aba(model, q, v, a)
    assert used == ["compiled_rnea", "compiled_crba", "compiled_forward_dynamics"]
    rnea(model, q, v, a, f_ext=np.zeros((model.n_links, 6)))
    aba(model, q, v, a, f_ext=np.zeros((model.n_links, 6)))
    generic(gravity_torques, model, q)
    assert len(used) == 3


def test_models_with_floating_or_planar_joints_have_no_generated_kernel():
    for model in (fixture("floating"), fixture("planar_joint")):
        assert codegen_dynamics.compiled_crba(model) is None
        assert codegen_dynamics.compiled_rnea(model, True, True, G) is None
        assert codegen_dynamics.compiled_forward_dynamics(model, G) is None


def test_generated_code_folds_constants_and_reuses_registers():
    # planar_2link turns about z with gravity along -z: its gravity torques are constant zeros.
    model = fixture("planar_2link")
    kernel = codegen_dynamics.compiled_rnea(model, False, False, G)
    assert not any(isinstance(value, str) for value in kernel.generated.values)
    np.testing.assert_array_equal(gravity_torques(model, np.array([0.3, -1.2])), 0.0)
    # only the inputs a kernel takes are read; no line of the code is a bare negation
    body = codegen_dynamics.compiled_rnea(bundled("panda"), True, False, G).generated.body
    source = "\n".join(body)
    n_q, n_v = bundled("panda").n_q, bundled("panda").n_v
    assert f"q[{n_q + n_v - 1}]" in source and f"q[{n_q + n_v}]" not in source
    assert not re.search(r"= -r\d+$", source, re.MULTILINE)
    assert len(set(re.findall(r"\br\d+\b", source))) < len(body) / 5


@pytest.mark.parametrize("seed", [0, 1])
def test_generated_symmetric_solve_on_dense_and_sparse_matrices(seed):
    """The symbolic Lᵀ D L solve, on symbols (dense, fill-in everywhere) and with structural zeros."""
    rng = np.random.default_rng(seed)
    n = 6
    A = rng.normal(size=(n, n))
    M = A @ A.T + n * np.eye(n)
    if seed:
        M[4, 1] = M[1, 4] = M[5, 0] = M[0, 5] = 0.0      # zeros that are constants in the generated code
    b = rng.normal(size=n)
    e = Emitter()
    symbols = [0.0 if M.flat[k] == 0.0 else e.assign(f"q[{k}]") for k in range(n * n)]
    x = dynamics_source.solve_values(e, symbols, [e.assign(f"q[{n * n + k}]") for k in range(n)])
    results = ", ".join(e.plain(xi) if isinstance(xi, str) else repr(xi) for xi in x)
    source = "def f(q):\n" + "\n".join(e.lines) + f"\n    return [{results}]"
    namespace = {"recip": lambda value: 1.0 / value}
    exec(source, namespace)  # noqa: S102 (generated code under test)
    np.testing.assert_allclose(namespace["f"](list(M.flat) + list(b)), np.linalg.solve(M, b), rtol=1e-12)


# ------------------------------------------------------------------------------------ numba single calls
needs_numba = pytest.mark.skipif(not accel.available(), reason="numba is not installed (optional accelerator)")
ALL_CALLS = ("rnea", "gravity_torques", "nonlinear_effects", "coriolis_torques", "crba", "aba", "center_of_mass")
ACCEL_CASES = ["double_pendulum", "branched", "prismatic_continuous_mimic", "random_mimic_3", "panda"]


def single_calls(model, q, v, a):
    """Every public call that has a compiled single entry, on one configuration."""
    return {"rnea": lambda: rnea(model, q, v, a), "gravity_torques": lambda: gravity_torques(model, q),
            "nonlinear_effects": lambda: nonlinear_effects(model, q, v),
            "coriolis_torques": lambda: coriolis_torques(model, q, v), "crba": lambda: crba(model, q),
            "aba": lambda: aba(model, q, v, a), "center_of_mass": lambda: center_of_mass(model, q)}


@pytest.fixture
def numba_on(run_with, monkeypatch):
    run_with(accelerated=True)


def no_full_path(monkeypatch):
    """Make the checked (non-compiled) paths fail, so a result proves the compiled entry ran."""
    def fail(*args, **kwargs):
        raise AssertionError("the full path ran")

    monkeypatch.setattr(dynamics, "_generated", fail)
    monkeypatch.setattr(dynamics, "check_inputs", fail)


@pytest.mark.slow   # compiles every dynamics entry into an empty cache
@needs_numba
@pytest.mark.parametrize("name", ACCEL_CASES)
def test_compiled_single_calls_equal_generic_and_numpy_kernels(name, numba_on, monkeypatch):
    model = load(name)
    assert dynamics.prepare(model, ALL_CALLS)
    rng = np.random.default_rng(30)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        expected_generic = {call: generic(f) for call, f in single_calls(model, q, v, a).items()}
        with use(accelerated=False):
            expected_numpy = {call: f() for call, f in single_calls(model, q, v, a).items()}
        with monkeypatch.context() as m:
            no_full_path(m)
            ours = {call: f() for call, f in single_calls(model, q, v, a).items()}
        for call in ALL_CALLS:
            assert ours[call].shape == expected_generic[call].shape and ours[call].flags.c_contiguous
            assert_close(ours[call], expected_numpy[call], rtol=1e-12)
            assert_close(ours[call], expected_generic[call], rtol=1e-12 if call != "aba" else 1e-9)


@needs_numba
@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_compiled_single_calls_agree_with_pinocchio(name, numba_on, monkeypatch):
    pin = pytest.importorskip("pinocchio")
    path = erd_urdf(ERD_ROBOTS[name])
    model = RobotModel.from_urdf_file(path)
    assert dynamics.prepare(model, ("rnea", "gravity_torques", "crba", "aba", "center_of_mass"))
    pm, pd = pin_model(path)
    P = velocity_map(model, pm)
    rng = np.random.default_rng(31)
    no_full_path(monkeypatch)
    for _ in range(3):
        q, v, a = random_state(model, rng)
        pq = pin_configuration(model, pm, q)
        assert_close(rnea(model, q, v, a), P.T @ pin.rnea(pm, pd, pq, P @ v, P @ a), rtol=1e-12)
        Mp = pin.crba(pm, pd, pq)
        assert_close(crba(model, q), P.T @ (np.triu(Mp) + np.triu(Mp, 1).T) @ P, rtol=1e-12)
        assert_close(gravity_torques(model, q), P.T @ pin.computeGeneralizedGravity(pm, pd, pq), rtol=1e-12)
        m_pin, m0, c0 = pin.computeTotalMass(pm), pm.inertias[0].mass, pm.inertias[0].lever   # + what is welded
        assert_close(center_of_mass(model, q), (m_pin * pin.centerOfMass(pm, pd, pq) + m0 * c0) / (m_pin + m0),
                     rtol=1e-12)
        if not model.is_mimic.any():
            # ABA against a Lᵀ D L solve of M a = tau - h: agreement limited by the conditioning of M
            assert_close(aba(model, q, v, a), P.T @ pin.aba(pm, pd, pq, P @ v, P @ a), rtol=1e-10)


@needs_numba
def test_compiled_single_calls_keep_every_check(numba_on):
    model = fixture("double_pendulum")
    assert dynamics.prepare(model, ALL_CALLS)
    q, z = np.array([0.3, -0.4]), np.zeros(2)
    with pytest.raises(NonFiniteError, match=r"q has non-finite entries at \['joint2'\]"):
        gravity_torques(model, np.array([0.0, np.inf]))
    with pytest.raises(NonFiniteError, match=r"q has non-finite entries at \['joint1'\]"):
        crba(model, np.array([np.nan, 0.0]))
    with pytest.raises(NonFiniteError, match=r"a has non-finite entries at \['joint2'\]"):
        rnea(model, q, z, np.array([0.0, np.nan]))
    with pytest.raises(NonFiniteError, match=r"tau has non-finite entries at \['joint1'\]"):
        aba(model, q, z, np.array([np.nan, 0.0]))
    with pytest.raises(NonFiniteError, match=r"v has non-finite entries at \['joint2'\]"):
        coriolis_torques(model, q, np.array([0.0, -np.inf]))
    with pytest.raises(ShapeError, match=r"q must have shape \(\.\.\., 2\), got \(3,\)"):
        rnea(model, np.zeros(3), z, z)
    with pytest.raises(ShapeError, match=r"v must have shape \(\.\.\., 2\), got \(1,\)"):
        nonlinear_effects(model, q, np.zeros(1))
    with pytest.raises(ShapeError, match=r"tau must have shape \(\.\.\., 2\), got \(0,\)"):
        aba(model, q, z, np.zeros(0))
    # inputs the compiled entry does not take go the full way, with the same answer
    expected = generic(rnea, model, q, z + 0.5, z - 0.25)
    read_only = q.copy()
    read_only.flags.writeable = False
    for args in ((q.tolist(), [0.5, 0.5], (-0.25, -0.25)), (np.array([q[0], 9.0, q[1]])[::2], z + 0.5, z - 0.25),
                 (read_only, z + 0.5, z - 0.25), (q[None], z + 0.5, z - 0.25)):
        assert_close(rnea(model, *args).reshape(-1), expected, rtol=1e-12)
    assert_close(rnea(model, q.astype(np.float32), z + 0.5, z - 0.25),
                 generic(rnea, model, q.astype(np.float32), z + 0.5, z - 0.25), rtol=1e-12)
    # other gravity vectors, external wrenches and batches still work (through the full path)
    assert_close(gravity_torques(model, q, gravity=(0.0, 1.0, -3.0)),
                 generic(gravity_torques, model, q, gravity=(0.0, 1.0, -3.0)), rtol=1e-12)
    f_ext = np.ones((model.n_links, 6))
    assert_close(rnea(model, q, z, z, f_ext=f_ext), generic(rnea, model, q, z, z, f_ext=f_ext), rtol=1e-12)
    qb = np.stack([q, -q, 2 * q])
    assert_close(crba(model, qb), generic(crba, model, qb), rtol=1e-12)


@needs_numba
def test_disabling_generated_kernels_or_numba_bypasses_the_compiled_entry(run_with, numba_on, monkeypatch):
    model = fixture("branched")
    assert dynamics.prepare(model, ["rnea"])
    q, v, a = random_state(model, np.random.default_rng(32))
    used = []
    real = dynamics._generated

    def spy(*args):
        result = real(*args)
        if result is not None:   # the generated kernel ran
            used.append(1)
        return result

    monkeypatch.setattr(dynamics, "_generated", spy)
    rnea(model, q, v, a)
    assert used == []   # the compiled single entry answered
    run_with(accelerated=False)
    tau = rnea(model, q, v, a)
    assert used == []   # no compiled tier runs: the numpy recursion (the oracle) answered
    np.testing.assert_array_equal(tau, generic(rnea, model, q, v, a))
    run_with(accelerated=True)
    rnea(model, q[None], v[None], a[None])   # a batch of one: the general path's compiled kernel
    assert used == [1]
    generic(rnea, model, q, v, a)   # the generic kernel: no generated kernel at all
    assert used == [1]


@needs_numba
def test_many_single_calls_load_the_compiled_kernel_in_the_background(run_with, numba_on, monkeypatch):
    model = fixture("planar_2link")
    run_with(compile_after=5)
    q = np.array([0.2, -0.7])
    kernel = codegen_dynamics.compiled_crba(model)
    for _ in range(5):
        crba(model, q)
    kernel._compiling.join(timeout=120)
    assert kernel._accelerated is not None
    expected = generic(crba, model, q)
    no_full_path(monkeypatch)
    assert_close(crba(model, q), expected, rtol=1e-12)   # the next single call takes the compiled entry


@needs_numba
def test_a_compiled_single_entry_that_disagrees_is_not_used(numba_on, monkeypatch):
    model = fixture("double_pendulum")
    kernel = codegen_dynamics.compiled_crba(model)
    assert kernel.accelerate()
    kernel._check_single(kernel.accelerated_single)            # the real entry passes its check

    class Compiled:
        """A compiled entry computing ``call`` from the real entry's source (its ``py_func``)."""

        def __init__(self, call):
            self.call, self.py_func = call, kernel.accelerated_single.py_func

        def __call__(self, q, out):
            return self.call(q, out)

    def zeros(q, out):
        out[:] = 0.0
        return 0

    for fake in (Compiled(lambda q, out: 1), Compiled(zeros)):
        with pytest.raises(KernelCheckError, match="single entry disagrees"):
            kernel._check_single(fake)
    fresh = fixture("double_pendulum")                          # a new model: its kernel is not loaded yet
    def failing_check(self, single):
        raise KernelCheckError("the compiled single entry disagrees with its Python source")

    monkeypatch.setattr(codegen_dynamics.CompiledDynamics, "_check_single", failing_check)
    with pytest.warns(RuntimeWarning, match="numba dynamics kernel unavailable"):
        assert dynamics.prepare(fresh, ["crba"]) is False
    assert codegen_dynamics.compiled_crba(fresh).accelerated_single is None   # no compiled entry to use
    assert_close(crba(fresh, np.array([0.4, 0.1])), generic(crba, fresh, np.array([0.4, 0.1])), rtol=1e-12)


def test_without_numba_single_calls_run_on_numpy(monkeypatch):
    monkeypatch.setattr(accel, "available", lambda: False)   # numba not installed
    model = fixture("double_pendulum")
    assert dynamics.prepare(model) is False
    assert all(codegen_dynamics.PREPARABLE[call](model).accelerated_single is None for call in ALL_CALLS)
    q, v, a = random_state(model, np.random.default_rng(33))
    for call, f in single_calls(model, q, v, a).items():
        assert_close(f(), generic(f), rtol=1e-12 if call != "aba" else 1e-9)
    with pytest.raises(NonFiniteError, match=r"q has non-finite entries at \['joint1'\]"):
        gravity_torques(model, np.array([np.nan, 0.0]))


def test_prepare_names_unknown_calls_and_models_without_inertials():
    with pytest.raises(ValueError, match=r"unknown calls \['rnae'\]"):
        dynamics.prepare(fixture("double_pendulum"), ["rnae"])
    model = random_tree(np.random.default_rng(14), 4, types=[JointType.REVOLUTE], mimic=False)
    with pytest.raises(ModelError, match="no <inertial> on any link"):
        dynamics.prepare(model)
