"""Where things go in the web view, computed without a browser: the robot's bounding box, the camera
that frames it, the floor grid under it, the joint sliders grouped by limb.

The camera frames the robot only (never a reachability layer around it): it looks at the centre
of the robot's box from a fixed diagonal direction, far enough that the box's bounding sphere
fits the camera's field of view with a margin.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..model import SCALAR_TYPES, JointType, RobotModel
from ..model.tree_roles import TreeRoles

#: Direction the camera looks from (towards the robot's centre), before normalising.
VIEW_DIRECTION = np.array([1.0, 0.85, 0.6])
#: Smallest radius [m] framed (a robot of a few points still gets a sensible view).
MIN_RADIUS = 0.15
#: Bounding sphere radius over the distance to it, in fractions of the field of view's half angle.
FIT_MARGIN = 1.15
#: Default vertical field of view [rad] of viser's camera.
DEFAULT_FOV = 75.0 * math.pi / 180.0
#: Folder of the joints that belong to no limb.
OTHER_JOINTS = "Other joints"


def robot_bounds(link_poses: np.ndarray, pieces=()) -> tuple[np.ndarray, np.ndarray]:
    """``(lo (3,), hi (3,))``: the box holding every link origin and every piece of geometry.

    Args:
        link_poses: ``(n_links, 4, 4)`` the links' poses.
        pieces: :class:`~.scene.LinkMesh` records (their vertices' boxes, posed on their links).
    """
    lo, hi = link_poses[:, :3, 3].min(axis=0), link_poses[:, :3, 3].max(axis=0)
    for piece in pieces:
        if not len(piece.vertices):
            continue
        v_lo, v_hi = piece.vertices.min(axis=0), piece.vertices.max(axis=0)
        corners = np.array([[x, y, z] for x in (v_lo[0], v_hi[0]) for y in (v_lo[1], v_hi[1])
                            for z in (v_lo[2], v_hi[2])], float)
        T = link_poses[piece.link] @ piece.T_link_mesh
        placed = corners @ T[:3, :3].T + T[:3, 3]
        lo, hi = np.minimum(lo, placed.min(axis=0)), np.maximum(hi, placed.max(axis=0))
    return lo, hi


@dataclasses.dataclass(frozen=True)
class CameraFit:
    """A camera framing a box.

    Attributes:
        look_at: ``(3,)`` the box's centre. position: ``(3,)`` where the camera sits.
        radius: [m] the box's bounding sphere radius (at least :data:`MIN_RADIUS`).
        distance: [m] from ``position`` to ``look_at``.
    """

    look_at: np.ndarray
    position: np.ndarray
    radius: float
    distance: float


def fit_camera(lo: np.ndarray, hi: np.ndarray, fov: float = DEFAULT_FOV) -> CameraFit:
    """The camera that shows the box ``[lo, hi]`` whole: at the distance where its bounding
    sphere spans the field of view ``fov`` [rad] (times :data:`FIT_MARGIN`), along
    :data:`VIEW_DIRECTION` from its centre."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    centre = 0.5 * (lo + hi)
    radius = max(0.5 * float(np.linalg.norm(hi - lo)), MIN_RADIUS)
    distance = FIT_MARGIN * radius / math.sin(0.5 * fov)
    position = centre + distance * VIEW_DIRECTION / np.linalg.norm(VIEW_DIRECTION)
    return CameraFit(centre, position, radius, distance)


@dataclasses.dataclass(frozen=True)
class GridPlacement:
    """A floor grid under a box: ``centre (3,)`` on the box's bottom, ``size`` [m] a side, ``cell`` [m]."""

    centre: np.ndarray
    size: float
    cell: float


def floor_grid(lo: np.ndarray, hi: np.ndarray) -> GridPlacement:
    """The grid under the box ``[lo, hi]``: at its lowest z, twice its width, cells of a round
    length (0.05, 0.1, 0.25, 0.5 or 1 m) giving about 20 a side."""
    extent = max(float(np.max((hi - lo)[:2])), 2 * MIN_RADIUS)
    size = 2.0 * extent
    cell = next((c for c in (0.05, 0.1, 0.25, 0.5) if size / c <= 30), 1.0)
    size = math.ceil(size / cell) * cell
    return GridPlacement(np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), float(lo[2])]), size, cell)


def slider_joints(model: RobotModel) -> list[int]:
    """Joints with a slider: independent 1-DOF joints (joint indices, model order)."""
    return [int(j) for j in model.active_joints if JointType(model.joint_types[j]) in SCALAR_TYPES]


def limb_folders(model: RobotModel) -> dict[str, list[int]]:
    """Folder label -> joints (of :func:`slider_joints`, model order) for the sliders: one folder
    per limb (:class:`~robokin_ros.model.tree_roles.TreeRoles`: a serial run between splits),
    named after its end link, then :data:`OTHER_JOINTS`; a robot of one limb gets one folder."""
    joints = slider_joints(model)
    owner: dict[int, str] = {}
    for limb in TreeRoles(model).limbs:
        label = f"{model.link_names[limb.end]}"
        link = limb.end
        while link > 0 and link != limb.start:     # iterative: a chain of 1,000 links is fine
            owner.setdefault(link - 1, label)
            link = int(model.link_parents[link])
    folders: dict[str, list[int]] = {}
    for j in joints:
        folders.setdefault(owner.get(j, OTHER_JOINTS), []).append(j)
    if OTHER_JOINTS in folders:   # last
        folders[OTHER_JOINTS] = folders.pop(OTHER_JOINTS)
    return folders


def matches(name: str, text: str) -> bool:
    """The slider filter: every word of ``text`` is in ``name`` (case-insensitive); empty text matches all."""
    name = name.lower()
    return all(word in name for word in text.lower().split())
