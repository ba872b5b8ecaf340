"""A reachability map (:mod:`robokin_ros.reach`) as a layer of the web view: the voxels the tip
reaches, as small points (a third of a voxel) coloured by their reachability index (red: few
orientations, green: all), hung from the map's base link so they move with it. As in the
picture of ``robokin reach --picture``, only the half y <= 0 of the base frame is drawn by
default (a cut that shows the inside); the panel has "Show" (off by default: the robot comes
first), the cut and a minimum index. viser 1.1.1's point clouds have no opacity: the points are
made small instead of translucent.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import ArgumentError
from ..reach import ReachMap
from .panel import RobotView

#: Point size, in voxel sizes.
POINT_SCALE = 0.35
#: Colours of reachability index 0, 0.5 and 1 (RGB), blended linearly in between.
INDEX_COLOURS = np.array([(215, 48, 39), (254, 224, 80), (26, 152, 80)], float)


def index_colours(index: np.ndarray) -> np.ndarray:
    """``(n, 3)`` uint8 RGB of reachability indices ``(n,)`` in [0, 1]."""
    x = np.clip(np.asarray(index, float), 0.0, 1.0) * 2.0
    low = np.minimum(x.astype(int), 1)                 # segment 0: [0, 0.5], segment 1: [0.5, 1]
    t = (x - low)[:, None]
    return np.round(INDEX_COLOURS[low] * (1 - t) + INDEX_COLOURS[low + 1] * t).astype(np.uint8)


class ReachLayer:
    """A :class:`~robokin_ros.reach.ReachMap` shown in a :class:`RobotView`.

    Attributes:
        reach: the map. base: link index its grid hangs from.
        made_for_another_robot: the map's robot hash differs from ``robot_text``'s (shown as a
            warning in the panel; the map is still drawn: the user asked for it).
        minimum: smallest reachability index drawn (voxels at 0 are never drawn).
        cloud: the viser point cloud (its ``points`` are in the base link's frame).
        visible, cut: the panel's checkboxes "Show" and "Cut at y = 0".
    """

    def __init__(self, view: RobotView, reach: ReachMap, robot_text: str | None = None, minimum: float = 0.0,
                 *, shown: bool = False, cut: bool = True):
        """``shown``: the layer is drawn at once (else when "Show" is ticked); ``cut``: only the
        voxels of the half y <= 0 of the base frame are drawn.

        Raises:
            UnknownLinkError: the map's tip or base is not a link of the view's robot.
            ArgumentError: ``minimum`` outside [0, 1].
        """
        model = view.model
        self.view, self.reach = view, reach
        model.link_index(reach.parameters.tip)                    # a map of another tip is refused
        self.base = model.link_index(reach.parameters.base or model.root_link)
        digest = None if robot_text is None else hashlib.sha256(robot_text.encode()).hexdigest()
        self.made_for_another_robot = digest is not None and digest != reach.robot_sha256
        server = view.server
        reached = reach.reachability[reach.reachability > 0]
        summary = (f"tip `{reach.parameters.tip}`, {len(reach.reachability)} voxels of {reach.resolution:g} m, "
                   f"{len(reached)} reached, mean index {reach.reachability.mean():.3f}")
        if self.made_for_another_robot:
            summary += "\n\n**Warning**: this map was made for another robot description (its sha256 differs)."
        self.cloud = server.scene.add_point_cloud(
            f"{view.scene.frames[self.base].name}/reach_map", np.zeros((1, 3), np.float32),
            np.zeros((1, 3), np.uint8), point_size=POINT_SCALE * reach.resolution, point_shape="rounded",
            point_shading="flat", visible=False)
        # (no view._add for the cloud: it goes with its base link's node when the view is removed)
        with view._add(server.gui.add_folder("Reachability map")):
            view._add(server.gui.add_markdown(summary))
            self.visible = view._add(server.gui.add_checkbox("Show", initial_value=shown))
            self.visible.on_update(lambda _: self.show(self.minimum))
            self.cut = view._add(server.gui.add_checkbox("Cut at y = 0", initial_value=cut,
                                                         hint="draw the half y <= 0 of the base frame only"))
            self.cut.on_update(lambda _: self.show(self.minimum))
            self.minimum_slider = view._add(server.gui.add_slider(
                "Minimum index", min=0.0, max=1.0, step=0.05, initial_value=float(minimum)))
            self.minimum_slider.on_update(lambda _: self.show(self.minimum_slider.value))
        self.show(minimum)

    def show(self, minimum: float) -> int:
        """Draw the voxels whose index is above 0 and at least ``minimum`` (of the half y <= 0
        when the cut is on); returns how many."""
        if not 0.0 <= minimum <= 1.0:
            raise ArgumentError("minimum", f"must be in [0, 1], got {minimum!r}")
        self.minimum = float(minimum)
        keep = (self.reach.reachability > 0) & (self.reach.reachability >= minimum)
        if self.cut.value:
            keep &= self.reach.centres[:, 1] < 0.5 * self.reach.resolution   # (a voxel row sits at y = 0)
        points = self.reach.centres[keep].astype(np.float32)
        colours = index_colours(self.reach.reachability[keep])
        if not len(points):   # viser wants at least one point: the cloud is hidden then
            points, colours = np.zeros((1, 3), np.float32), np.zeros((1, 3), np.uint8)
        with self.view.server.atomic():
            self.cloud.points = points
            self.cloud.colors = colours
            self.cloud.visible = bool(self.visible.value and keep.any())
        return int(keep.sum())
