"""A reachability map (:mod:`robokin_ros.reach`) as a layer of the web view: the voxels the tip
reaches, as points coloured by their reachability index (red: few orientations, green: all),
hung from the map's base link so they move with it; a checkbox and a minimum index in the panel.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import ArgumentError
from ..reach import ReachMap
from .panel import RobotView

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
    """

    def __init__(self, view: RobotView, reach: ReachMap, robot_text: str | None = None, minimum: float = 0.0):
        """Raises:
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
            np.zeros((1, 3), np.uint8), point_size=0.6 * reach.resolution, point_shape="rounded")
        # (no view._add for the cloud: it goes with its base link's node when the view is removed)
        with view._add(server.gui.add_folder("Reachability map")):
            view._add(server.gui.add_markdown(summary))
            self.visible = view._add(server.gui.add_checkbox("Show", initial_value=True))
            self.visible.on_update(lambda _: self.show(self.minimum))
            self.minimum_slider = view._add(server.gui.add_slider(
                "Minimum index", min=0.0, max=1.0, step=0.05, initial_value=float(minimum)))
            self.minimum_slider.on_update(lambda _: self.show(self.minimum_slider.value))
        self.show(minimum)

    def show(self, minimum: float) -> int:
        """Draw the voxels whose index is above 0 and at least ``minimum``; returns how many."""
        if not 0.0 <= minimum <= 1.0:
            raise ArgumentError("minimum", f"must be in [0, 1], got {minimum!r}")
        self.minimum = float(minimum)
        keep = (self.reach.reachability > 0) & (self.reach.reachability >= minimum)
        points = self.reach.centres[keep].astype(np.float32)
        colours = index_colours(self.reach.reachability[keep])
        if not len(points):   # viser wants at least one point: the cloud is hidden then
            points, colours = np.zeros((1, 3), np.float32), np.zeros((1, 3), np.uint8)
        with self.view.server.atomic():
            self.cloud.points = points
            self.cloud.colors = colours
            self.cloud.visible = bool(self.visible.value and keep.any())
        return int(keep.sum())
