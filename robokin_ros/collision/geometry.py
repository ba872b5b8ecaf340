"""Collision shapes of a model's ``<collision>`` geometry as coal objects; mesh URIs resolved.

coal (PyPI ``coal``, the collision library of the Pinocchio family) is imported on first use,
so the core imports without it; :func:`coal_module` raises :class:`CollisionUnavailableError`
when it is missing. Primitives map one to one (``box`` -> ``coal.Box``, ``cylinder`` ->
``coal.Cylinder``, ``sphere`` -> ``coal.Sphere``, ``capsule`` -> ``coal.Capsule``, all centred
on the geometry origin with the cylinder / capsule axis along z, as in URDF). Meshes load with
coal's own loader (assimp: STL, DAE, OBJ, ..., as Pinocchio's ``buildGeomFromUrdf``), else with
trimesh, into a ``BVHModelOBBRSS``. A mesh that cannot be found or read, whose URI leaves its
package, whose file is larger than :func:`~robokin_ros.collision.meshes.max_mesh_bytes` (never
read), or that holds a non-finite vertex or no triangle (it would give wrong answers) is skipped
with a warning naming it (the link keeps its other geometries), never an error. Also here: the bounding capsules
and the segment distances of :meth:`robokin_ros.collision.CollisionModel.bound_gaps` (a filter
before coal's narrow phase, never a verdict).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import CollisionUnavailableError, shorten
from ..model import CollisionGeometry
from ..spatial import matrix_to_rpy, pose_from_xyz_rpy
from .meshes import mesh_file_problem, mesh_uri_problem, resolve_mesh_uri


def coal_module():
    """The ``coal`` module. Raises :class:`CollisionUnavailableError` if it is not installed."""
    try:
        import coal
    except ImportError as e:
        raise CollisionUnavailableError(str(e)) from None
    return coal


def _mesh(coal, path: str, scale: np.ndarray):
    """BVH model of a mesh file scaled by ``scale (3,)``: coal's loader, else trimesh."""
    try:
        return coal.MeshLoader().load(path, scale)
    except Exception:  # noqa: BLE001  (assimp failed or lacks the format: try trimesh)
        pass
    import trimesh  # an optional dependency too: its ImportError is reported as unreadable

    mesh = trimesh.load(path, force="mesh")
    vertices, faces = np.asarray(mesh.vertices, float) * scale, np.asarray(mesh.faces, np.int64).reshape(-1, 3)
    if faces.size and (faces.min() < 0 or faces.max() >= len(vertices)):
        raise ValueError("a face refers to a vertex the mesh does not have")
    bvh = coal.BVHModelOBBRSS()
    bvh.beginModel(len(faces), len(vertices))
    bvh.addVertices(vertices)
    bvh.addTriangles(faces)
    bvh.endModel()
    return bvh


def mesh_problem(bvh) -> str | None:
    """Why a loaded mesh must not be used (no triangles, non-finite vertices), or None."""
    vertices = np.asarray(bvh.vertices(), float).reshape(-1, 3)
    bad = int((~np.isfinite(vertices).all(axis=1)).sum())
    if bad:
        return f"has {bad} non-finite vertices (of {len(vertices)}, after scaling)"
    if bvh.num_tris == 0:
        return "has no triangles"
    return None


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
    refused = mesh_uri_problem(geometry.filename)
    if refused is not None:
        return None, f"mesh {shorten(geometry.filename, 200)} {refused}; skipped"
    path = resolve_mesh_uri(geometry.filename, package_paths, base_dir)
    if path is None:
        return None, f"mesh {geometry.filename!r} not found (package paths, ROS_PACKAGE_PATH, ament index); skipped"
    problem = mesh_file_problem(path)
    if problem is None:
        try:
            bvh = _mesh(coal, path, np.asarray(size, float))
        except Exception as e:  # noqa: BLE001  (an unreadable mesh must not stop the robot loading)
            return None, f"mesh {path!r} could not be read ({type(e).__name__}: {e}); skipped"
        problem = mesh_problem(bvh)
        if problem is None:
            return bvh, ""
    return None, f"mesh {path!r} {problem}; skipped"


def geometry_placement(geometry: CollisionGeometry) -> np.ndarray:
    """``(4, 4)`` pose of a geometry in its link frame (its URDF ``<origin>``)."""
    return pose_from_xyz_rpy(geometry.origin[:3], geometry.origin[3:])


def bounding_capsule(shape) -> tuple[np.ndarray, float]:
    """Segment ends ``(2, 3)`` and radius of a capsule containing a coal shape (its own frame):
    a sphere or capsule is its own, a cylinder its capsule, anything else the capsule along the
    longest side of its local bounding box."""
    name = type(shape).__name__
    if name == "Sphere":
        return np.zeros((2, 3)), float(shape.radius)
    if name in ("Capsule", "Cylinder"):
        half = float(shape.halfLength)
        return np.array([[0.0, 0.0, -half], [0.0, 0.0, half]]), float(shape.radius)
    lo, hi = np.array(shape.aabb_local.min_, float), np.array(shape.aabb_local.max_, float)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    axis = int(np.argmax(half))
    ends = np.array([centre, centre])
    ends[0, axis] -= half[axis]
    ends[1, axis] += half[axis]
    return ends, float(np.hypot(*np.delete(half, axis)))


def segment_distances(p1, q1, p2, q2) -> np.ndarray:
    """``(...)`` distance between segments ``[p1, q1]`` and ``[p2, q2]`` (points ``(..., 3)``),
    by the closest points of the two segments (Ericson, Real-Time Collision Detection, 5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = (d1 * d1).sum(-1), (d2 * d2).sum(-1)
    b, c, f = (d1 * d2).sum(-1), (d1 * r).sum(-1), (d2 * r).sum(-1)
    tiny = 1e-18
    a_safe, e_safe = np.where(a > tiny, a, 1.0), np.where(e > tiny, e, 1.0)
    denom = a * e - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(denom > tiny * np.maximum(a * e, tiny),
                     np.clip((b * f - c * e) / np.where(denom > 0, denom, 1.0), 0, 1), 0.0)
    t = (b * s + f) / e_safe
    s = np.where(t < 0, np.clip(-c / a_safe, 0, 1), np.where(t > 1, np.clip((b - c) / a_safe, 0, 1), s))
    t = np.clip(t, 0, 1)
    point_a, point_b = a <= tiny, e <= tiny     # degenerate segments (spheres)
    s = np.where(point_a, 0.0, np.where(point_b, np.clip(-c / a_safe, 0, 1), s))
    t = np.where(point_b, 0.0, np.where(point_a, np.clip(f / e_safe, 0, 1), t))
    return np.linalg.norm(p1 + d1 * s[..., None] - p2 - d2 * t[..., None], axis=-1)


def bounding_box_model(model, package_paths=None, base_dir: str | None = None):
    """``model`` with every collision mesh replaced by its bounding box (the axis-aligned box of
    the scaled mesh in the mesh's frame), primitives kept; meshes that cannot be loaded are
    dropped. Primitive-only models check much faster (the benchmark's Talos is built so).

    Raises:
        CollisionUnavailableError: coal is not installed.
    """
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
