"""A model -> URDF text that :meth:`RobotModel.from_urdf` loads back to an equal model."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from ..spatial import matrix_to_rpy
from .elements import JointType
from .model_data import ModelData
from .urdf import EXTENDED_LIMITS

__all__ = ["model_to_urdf"]


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _write_geometry(holder: ET.Element, g) -> None:
    """``<origin>`` and ``<geometry>`` of a ``<visual>`` or ``<collision>`` from its record."""
    ET.SubElement(holder, "origin", xyz=_fmt(g.origin[:3]), rpy=_fmt(g.origin[3:]))
    geometry = ET.SubElement(holder, "geometry")
    if g.shape == "box":
        ET.SubElement(geometry, "box", size=_fmt(g.size))
    elif g.shape == "sphere":
        ET.SubElement(geometry, "sphere", radius=repr(float(g.size[0])))
    elif g.shape == "mesh":
        ET.SubElement(geometry, "mesh", filename=g.filename, scale=_fmt(g.size))
    else:
        ET.SubElement(geometry, g.shape, radius=repr(float(g.size[0])), length=repr(float(g.size[1])))


def model_to_urdf(model: ModelData) -> str:
    """URDF text of ``model``; :meth:`RobotModel.from_urdf` of it gives an equal model.

    Mimic joints are written against their (resolved) independent source. The document says
    ``version="1.2"`` only when it uses what 1.2 adds (capsules, acceleration / deceleration / jerk
    limits), so parsers that know only 1.0 still read every other model.
    """
    root = ET.Element("robot", name=model.name)
    extended = np.isfinite(np.concatenate([model.joint_acceleration, model.joint_deceleration, model.joint_jerk]))
    capsules = any(g.shape == "capsule" for geometries in (*model.link_collisions, *model.link_visuals)
                   for g in geometries)
    if extended.any() or capsules:
        root.set("version", "1.2")
    for i, name in enumerate(model.link_names):
        link = ET.SubElement(root, "link", name=name)
        if model.link_has_inertial[i]:
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "origin", xyz=_fmt(model.link_coms[i]), rpy="0.0 0.0 0.0")
            ET.SubElement(inertial, "mass", value=repr(float(model.link_masses[i])))
            I = model.link_inertias[i]
            ET.SubElement(inertial, "inertia", ixx=repr(float(I[0, 0])), ixy=repr(float(I[0, 1])),
                          ixz=repr(float(I[0, 2])), iyy=repr(float(I[1, 1])), iyz=repr(float(I[1, 2])),
                          izz=repr(float(I[2, 2])))
        for g in model.link_visuals[i]:
            _write_geometry(ET.SubElement(link, "visual"), g)
        for g in model.link_collisions[i]:
            _write_geometry(ET.SubElement(link, "collision"), g)
    for j, name in enumerate(model.all_joint_names):
        t = JointType(model.joint_types[j])
        joint = ET.SubElement(root, "joint", name=name, type=t.name.lower())
        T = model.joint_origins[j]
        ET.SubElement(joint, "origin", xyz=_fmt(T[:3, 3]), rpy=_fmt(matrix_to_rpy(T[:3, :3])))
        ET.SubElement(joint, "parent", link=model.link_names[model.link_parents[j + 1]])
        ET.SubElement(joint, "child", link=model.link_names[j + 1])
        if t != JointType.FIXED:
            ET.SubElement(joint, "axis", xyz=_fmt(model.joint_axes[j]))
        limit = {}
        if t in (JointType.REVOLUTE, JointType.PRISMATIC):
            limit.update(lower=repr(float(model.joint_lower[j])), upper=repr(float(model.joint_upper[j])))
        velocity, effort = model.joint_velocity[j], model.joint_effort[j]
        extended = {key: float(values[j]) for key, values in zip(EXTENDED_LIMITS, (
            model.joint_acceleration, model.joint_deceleration, model.joint_jerk)) if np.isfinite(values[j])}
        if limit or extended or np.isfinite(velocity) or np.isfinite(effort):  # URDF requires both; "inf" = none
            limit.update(velocity=repr(float(velocity)), effort=repr(float(effort)))
            limit.update({key: repr(value) for key, value in extended.items()})
            ET.SubElement(joint, "limit", **limit)
        if model.mimic_source[j] >= 0:
            ET.SubElement(joint, "mimic", joint=model.all_joint_names[model.mimic_source[j]],
                          multiplier=repr(float(model.mimic_multiplier[j])), offset=repr(float(model.mimic_offset[j])))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
