"""Collision shapes of a model's ``<collision>`` geometry as coal objects; mesh URIs resolved.

coal (PyPI ``coal``, the collision library of the Pinocchio family) is imported on first use,
so the core imports without it; :func:`coal_module` raises :class:`CollisionUnavailableError`
when it is missing. Primitives map one to one (``box`` -> ``coal.Box``, ``cylinder`` ->
``coal.Cylinder``, ``sphere`` -> ``coal.Sphere``, ``capsule`` -> ``coal.Capsule``, all centred
on the geometry origin with the cylinder / capsule axis along z, as in URDF). Meshes load with
coal's own loader (assimp: STL, DAE, OBJ, ..., as Pinocchio's ``buildGeomFromUrdf``), else with
trimesh, into a ``BVHModelOBBRSS``. A mesh that cannot be found or read is skipped with a
warning (the link keeps its other geometries), never an error.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Mapping, Sequence

import numpy as np

from .errors import RobokinError
from .model import CollisionGeometry
from .spatial import rpy_to_matrix


class CollisionUnavailableError(RobokinError, ImportError):
    """Collision checking was asked for but the collision library (coal) is not installed."""

    def __init__(self, detail: str = ""):
        super().__init__("collision checking needs coal (pip install coal)" + (f": {detail}" if detail else ""))


def coal_module():
    """The ``coal`` module. Raises :class:`CollisionUnavailableError` if it is not installed."""
    try:
        import coal
    except ImportError as e:
        raise CollisionUnavailableError(str(e)) from None
    return coal


def package_directories(package_paths: Mapping[str, str] | Sequence[str] | None = None) -> list:
    """Where ``package://name/...`` may live, in search order: ``(name or None, directory)``.

    ``package_paths`` first (a mapping name -> package directory, or folders holding packages),
    then every folder of ``ROS_PACKAGE_PATH``, then ``share/`` of every ament prefix in
    ``AMENT_PREFIX_PATH`` (the ament index).
    """
    out = []
    if isinstance(package_paths, Mapping):
        out += [(name, folder) for name, folder in package_paths.items()]
    elif package_paths is not None:
        out += [(None, folder) for folder in package_paths]
    out += [(None, folder) for folder in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if folder]
    out += [(None, os.path.join(prefix, "share")) for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)
            if prefix]
    return out


def resolve_mesh_uri(uri: str, package_paths=None, base_dir: str | None = None) -> str | None:
    """File path of a URDF mesh URI, or None if no such file exists.

    ``package://name/rest`` is looked up with :func:`package_directories` (a folder ``name``
    inside a search folder, or the folder itself when its last component is ``name``);
    ``file://`` URIs are paths; anything else is a path, relative to ``base_dir`` (default: the
    working directory).
    """
    if uri.startswith("package://"):
        name, _, rest = uri[len("package://"):].partition("/")
        for known, folder in package_directories(package_paths):
            if known is not None:
                candidates = [os.path.join(folder, rest)] if known == name else []
            else:
                candidates = [os.path.join(folder, name, rest)]
                if os.path.basename(os.path.normpath(folder)) == name:
                    candidates.append(os.path.join(folder, rest))
            for path in candidates:
                if os.path.isfile(path):
                    return path
        return None
    if uri.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlparse(uri).path)
    else:
        path = uri if os.path.isabs(uri) else os.path.join(base_dir or os.getcwd(), uri)
    return path if os.path.isfile(path) else None


def _mesh(coal, path: str, scale: np.ndarray):
    """BVH model of a mesh file scaled by ``scale (3,)``: coal's loader, else trimesh."""
    try:
        return coal.MeshLoader().load(path, scale)
    except Exception:  # noqa: BLE001  (assimp failed or lacks the format: try trimesh)
        pass
    import trimesh  # an optional dependency too: its ImportError is reported as unreadable

    mesh = trimesh.load(path, force="mesh")
    bvh = coal.BVHModelOBBRSS()
    bvh.beginModel(len(mesh.faces), len(mesh.vertices))
    bvh.addSubModel(np.asarray(mesh.vertices, float) * scale, np.asarray(mesh.faces, np.int64))
    bvh.endModel()
    return bvh


def geometry_shape(geometry: CollisionGeometry, package_paths=None, base_dir: str | None = None):
    """``(coal shape or None, warning or "")`` of one collision geometry."""
    coal = coal_module()
    size = geometry.size
    if geometry.shape == "box":
        return coal.Box(*size), ""
    if geometry.shape == "cylinder":
        return coal.Cylinder(size[0], size[1]), ""
    if geometry.shape == "capsule":
        return coal.Capsule(size[0], size[1]), ""
    if geometry.shape == "sphere":
        return coal.Sphere(size[0]), ""
    path = resolve_mesh_uri(geometry.filename, package_paths, base_dir)
    if path is None:
        return None, f"mesh {geometry.filename!r} not found (package paths, ROS_PACKAGE_PATH, ament index); skipped"
    try:
        return _mesh(coal, path, np.asarray(size, float)), ""
    except Exception as e:  # noqa: BLE001  (an unreadable mesh must not stop the robot loading)
        return None, f"mesh {path!r} could not be read ({type(e).__name__}: {e}); skipped"


def geometry_placement(geometry: CollisionGeometry) -> np.ndarray:
    """``(4, 4)`` pose of a geometry in its link frame (its URDF ``<origin>``)."""
    T = np.eye(4)
    T[:3, :3] = rpy_to_matrix(np.asarray(geometry.origin[3:], float))
    T[:3, 3] = geometry.origin[:3]
    return T


def bounding_box_model(model, package_paths=None, base_dir: str | None = None):
    """``model`` with every collision mesh replaced by its bounding box (the axis-aligned box of
    the scaled mesh in the mesh's frame), primitives kept; meshes that cannot be loaded are
    dropped. Primitive-only models check much faster (the benchmark's Talos is built so).

    Raises:
        CollisionUnavailableError: coal is not installed.
    """
    import dataclasses

    from .spatial import matrix_to_rpy

    per_link = []
    for geometries in model.link_collisions:
        kept = []
        for g in geometries:
            if g.shape != "mesh":
                kept.append(g)
                continue
            shape, _ = geometry_shape(g, package_paths, base_dir)
            if shape is None:
                continue
            shape.computeLocalAABB()
            lo, hi = np.array(shape.aabb_local.min_, float), np.array(shape.aabb_local.max_, float)
            T = geometry_placement(g)
            T[:3, 3] += T[:3, :3] @ (0.5 * (lo + hi))
            origin = tuple(T[:3, 3].tolist()) + tuple(matrix_to_rpy(T[:3, :3]).tolist())
            kept.append(CollisionGeometry("box", tuple((hi - lo).tolist()), origin))
        per_link.append(tuple(kept))
    return dataclasses.replace(model, link_collisions=tuple(per_link))
