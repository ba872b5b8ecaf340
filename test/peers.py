"""Peer libraries for cross-checks: Pinocchio (PyPI ``pin``) and example-robot-data URDFs.

Pinocchio counts mimic joints as independent and gives continuous joints two coordinates
(cos, sin); :func:`pin_configuration` maps our ``q`` onto its ``q``.
"""

from __future__ import annotations

import glob
import os
import site
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest


def example_robot_data_dir() -> str | None:
    """Folder of example-robot-data's robots (installed by pip under cmeel.prefix), or None."""
    roots = list(site.getsitepackages()) + [os.path.join(sys.prefix, "lib")]
    for root in roots:
        for hit in glob.glob(os.path.join(root, "**", "share", "example-robot-data", "robots"), recursive=True):
            return hit
    return None


def erd_urdf(relative: str) -> str:
    """Path of one example-robot-data URDF; skips the test if the package is missing."""
    base = example_robot_data_dir()
    if base is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    path = os.path.join(base, relative)
    if not os.path.exists(path):
        pytest.skip(f"{relative} is not in this example-robot-data")
    return path


#: example-robot-data URDFs used as peers (relative to the robots folder); all load with our loader.
ERD_ROBOTS = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "kinova": "kinova_description/robots/kinova.urdf",
    "baxter": "baxter_description/urdf/baxter.urdf",
    "tiago": "tiago_description/robots/tiago.urdf",
    "double_pendulum": "double_pendulum_description/urdf/double_pendulum.urdf",
    "z1": "z1_description/urdf/z1.urdf",
    "romeo": "romeo_description/urdf/romeo.urdf",
}


def pin_model(path: str, floating: bool = False):
    """Pinocchio model and data of a URDF file (skips if ``pin`` is missing)."""
    pin = pytest.importorskip("pinocchio")
    if floating:
        m = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    else:
        m = pin.buildModelFromUrdf(path)
    return m, m.createData()


def pin_configuration(model, pmodel, q: np.ndarray) -> np.ndarray:
    """Pinocchio's ``q`` for our configuration ``q (n_q,)`` of the same URDF."""
    values = model.all_joint_values(q)
    out = np.zeros(pmodel.nq)
    for jid in range(1, pmodel.njoints):
        name, joint = pmodel.names[jid], pmodel.joints[jid]
        i = joint.idx_q
        if joint.nq == 1:
            out[i] = values[name]
        elif joint.nq == 2:  # continuous: (cos, sin)
            out[i:i + 2] = np.cos(values[name]), np.sin(values[name])
        elif joint.nq == 4:  # planar: ours [x y theta], Pinocchio's [x y cos sin]
            j = model.joint_index(name)
            k = model.joint_q_index[j]
            x, y, theta = q[k:k + 3]
            out[i:i + 4] = x, y, np.cos(theta), np.sin(theta)
        elif joint.nq == 7:  # free flyer: ours is [x y z qx qy qz qw], same as Pinocchio's
            j = model.joint_index(name) if name in model.all_joint_names else 0
            k = model.joint_q_index[j]
            out[i:i + 7] = q[k:k + 7]
        else:
            raise NotImplementedError(f"joint {name} with nq={joint.nq}")
    return out


def column_map(model, pmodel) -> np.ndarray:
    """``P (pin nv, n_v)``: our Jacobian is Pinocchio's times P (a mimic joint, independent in
    Pinocchio, adds its column times its multiplier into its source's column)."""
    P = np.zeros((pmodel.nv, model.n_v))
    for jid in range(1, pmodel.njoints):
        name, joint = pmodel.names[jid], pmodel.joints[jid]
        j = model.joint_index(name)
        src = model.velocity_source_joints[j]
        assert src >= 0, f"{name} moves in Pinocchio but is fixed here"
        scale = model.mimic_multiplier[j] if model.is_mimic[j] else 1.0
        for k in range(joint.nv):
            P[joint.idx_v + k, model.joint_v_index[src] + k] = scale
    return P


def strip_collision_meshes(text: str) -> str:
    """The URDF without its mesh collision elements (for corpus files whose meshes are absent)."""
    root = ET.fromstring(text)
    for link in root.iter("link"):
        for c in list(link.findall("collision")):
            if c.find("geometry/mesh") is not None:
                link.remove(c)
    return ET.tostring(root, encoding="unicode")


class PinCollisions:
    """Pinocchio's self-collision pairs (link names) of a URDF text, over every geometry pair
    (``pinocchio.buildGeomFromUrdfString`` + ``addAllCollisionPairs`` + ``computeCollisions``)."""

    def __init__(self, text: str, package_dirs=()):
        pin = pytest.importorskip("pinocchio")
        self.pin = pin
        self.model = pin.buildModelFromXML(text)
        self.data = self.model.createData()
        self.geom = pin.buildGeomFromUrdfString(self.model, text, pin.GeometryType.COLLISION, package_dirs=list(package_dirs))
        self.geom.addAllCollisionPairs()
        self.gdata = pin.GeometryData(self.geom)
        link = lambda g: self.model.frames[self.geom.geometryObjects[g].parentFrame].name  # noqa: E731
        self.links = [(link(p.first), link(p.second)) for p in self.geom.collisionPairs]

    def pairs(self, model, q: np.ndarray, checked: set) -> set:
        """Link pairs ``(a, b)`` (a first in ``model``'s link order) among ``checked`` in
        collision at our configuration ``q (n_q,)``."""
        # A fresh GeometryData per configuration: reused, Pinocchio 4.1 / coal 3.0.3 missed a
        # 14 mm box-box penetration on Talos (test_talos_bounding_boxes_agree_with_pinocchio,
        # configuration 5) that a fresh one and coal.collide both find.
        pin = self.pin
        self.gdata = pin.GeometryData(self.geom)
        pin.computeCollisions(self.model, self.data, self.geom, self.gdata, pin_configuration(model, self.model, q), False)
        out = set()
        for k, (a, b) in enumerate(self.links):
            if self.gdata.collisionResults[k].isCollision():
                pair = (a, b) if model.link_index(a) < model.link_index(b) else (b, a)
                if pair in checked:
                    out.add(pair)
        return out
