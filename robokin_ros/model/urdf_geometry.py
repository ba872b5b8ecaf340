"""The URDF elements of a link that the kinematics do not use -- ``<visual>`` and ``<collision>``
geometry, materials -- read into :class:`CollisionGeometry` records. Problems in them never
reject a description: they become warnings (:class:`~robokin_ros.errors.LoadWarning`) naming the
element and its input line, and the element is ignored.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..errors import shorten
from .elements import CollisionGeometry
from .urdf_report import Report

__all__ = ["MAX_PRIMITIVE_SIZE", "check_material", "link_geometry"]

_SHAPES = ("box", "cylinder", "sphere", "mesh", "capsule")
#: [m, or a mesh scale] Largest primitive dimension or mesh scale read; a larger geometry is a unit
#: or typing error (1e200 m spheres were seen) and is ignored with a warning.
MAX_PRIMITIVE_SIZE = 1e4
_REQUIRED = {"box": ("size",), "cylinder": ("radius", "length"), "capsule": ("radius", "length"),
             "sphere": ("radius",), "mesh": ("filename",)}


def _check_geometry_holder(report: Report, holder: ET.Element, owner: str) -> CollisionGeometry | None:
    """Warnings for a ``<visual>``/``<collision>``; returns its geometry (None if unusable)."""
    geometry = holder.find("geometry")
    if geometry is None:
        report.warn(holder, f"of {owner} has no <geometry>; ignored")
        return None
    shapes = [child for child in geometry if child.tag in _SHAPES]
    if not shapes:
        report.warn(geometry, f"of {owner} has no shape ({', '.join(_SHAPES)}); ignored")
        return None
    if len(shapes) > 1:
        report.warn(geometry, f"of {owner} has {len(shapes)} shapes; the first (<{shapes[0].tag}>) is used, "
                              "as urdfdom does")
    shape = shapes[0]
    size = _shape_size(report, shape, owner)
    if size is None:
        return None
    largest = max((abs(v) for v in size), default=0.0)
    if largest > MAX_PRIMITIVE_SIZE:
        what = "a scale" if shape.tag == "mesh" else "a size"
        report.warn(shape, f"of {owner} has {what} of {largest:g}, above {MAX_PRIMITIVE_SIZE:g} "
                           "(no robot part is this large: a unit or typing error); ignored")
        return None
    o = holder.find("origin")
    origin = [0.0] * 6
    if o is not None:
        xyz = report.numbers(o, "xyz", 3, f"<{holder.tag}> origin xyz of {owner}", warn_only=True)
        rpy = report.numbers(o, "rpy", 3, f"<{holder.tag}> origin rpy of {owner}", warn_only=True)
        if xyz is None or rpy is None:
            return None
        origin = xyz + rpy
    return CollisionGeometry(shape.tag, tuple(size), tuple(origin), shape.get("filename") or "")


def _shape_size(report: Report, shape: ET.Element, owner: str) -> list[float] | None:
    """The size of a shape element (box sides, radius and length, radius, mesh scale), with
    warnings; None if it is unusable (a required attribute missing, malformed, negative)."""
    missing = [key for key in _REQUIRED[shape.tag] if shape.get(key) is None]
    for key in missing:
        report.warn(shape, f"of {owner} has no {key}")
    if shape.tag == "mesh":
        size = _mesh_scale(report, shape, owner)
        return None if missing else size
    if missing:
        return None
    if shape.tag == "box":
        size = report.numbers(shape, "size", 3, f"<box> size of {owner}", warn_only=True)
    else:
        size = []
        for key in _REQUIRED[shape.tag]:
            value = report.numbers(shape, key, 1, f"<{shape.tag}> {key} of {owner}", warn_only=True)
            if value is None:
                return None
            size += value
    if size is not None and any(v < 0 for v in size):
        report.warn(shape, f"of {owner} has a negative size {size}; ignored")
        return None
    return size


def _mesh_scale(report: Report, shape: ET.Element, owner: str) -> list[float] | None:
    """A ``<mesh>``'s scale (x, y, z; one number is read as a uniform scale, with a warning)."""
    text = shape.get("scale")
    if text is None:
        return [1.0, 1.0, 1.0]
    if len(text.split()) == 1:
        report.warn(shape, f"of {owner} has scale = {shorten(text)}, one number; read as a uniform scale")
        size = report.numbers(shape, "scale", 1, f"<mesh> scale of {owner}", warn_only=True)
        return None if size is None else size * 3
    return report.numbers(shape, "scale", 3, f"<mesh> scale of {owner}", warn_only=True)


def check_material(report: Report, material: ET.Element, owner: str) -> None:
    """Warnings for a ``<material>`` (no name, a texture without a file, a malformed colour)."""
    if not material.get("name"):
        report.warn(material, f"of {owner} has no name (urdfdom skips such a visual); ignored")
    texture = material.find("texture")
    if texture is not None and not texture.get("filename"):
        report.warn(texture, f"of {owner} has no filename; ignored")
    color = material.find("color")
    if color is not None:
        report.numbers(color, "rgba", 4, f"<color> rgba of {owner}", warn_only=True)


def link_geometry(report: Report, link_elements: dict[str, ET.Element]):
    """(first visual mesh per link, collision geometries per link, visual geometries per link),
    with warnings."""
    meshes, collisions, visuals = {}, {}, {}
    for name, link in link_elements.items():
        owner = f"link {name!r}"
        for holder in link:
            if holder.tag not in ("visual", "collision"):
                continue
            geometry = _check_geometry_holder(report, holder, owner)
            if holder.tag == "collision":
                if geometry is not None:
                    collisions.setdefault(name, []).append(geometry)
                continue
            if geometry is not None:
                visuals.setdefault(name, []).append(geometry)
                if geometry.shape == "mesh" and name not in meshes:
                    meshes[name] = geometry.filename
            material = holder.find("material")
            if material is not None:
                check_material(report, material, owner)
    return meshes, collisions, visuals
