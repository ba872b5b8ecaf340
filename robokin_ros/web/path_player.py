"""A Cartesian path in the web view: planned with :func:`robokin_ros.cartesian_path`, drawn,
played back (``robokin view``).

The "Cartesian path" folder asks for a straight move of the tip from where it is now: an offset
(metres, in the root link's axes) and a ``max_step``. "Plan" follows it from the configuration
shown and draws the points reached as a line hung from the root link (green when the whole path
was followed, orange when it stopped early), with the fraction and the reason it stopped.
"Play" shows the joint path at its time stamps (the trajectory's own timing, within the joints'
velocity and acceleration limits), in a background thread; "Stop" ends a playback.
"""

from __future__ import annotations

import threading

import numpy as np

from ..cartesian import CartesianPathResult, cartesian_path
from ..errors import RobokinError
from ..kinematics import frame_transform
from ..model import RobotModel

#: [s] Smallest interval between two frames of a playback.
FRAME_PERIOD = 0.03
#: Colours of the drawn path: followed whole, stopped early (RGB).
COMPLETE_COLOUR, PARTIAL_COLOUR = (40, 170, 80), (240, 140, 30)
#: [m] The drawn line's thickness.
THICKNESS = 0.004


class PathPlayer:
    """The "Cartesian path" folder of a view.

    Args:
        server: the viser server. model: the robot. tip: the link that follows the path.
        view: what shows a configuration: ``view.scene`` (``q``, ``frames``),
            ``view.set_configuration(q)``, ``view.lock`` and ``view.removed``.

    Attributes:
        offset, max_step: the requested move's inputs. status: the result line (markdown).
        result: the last :class:`~robokin_ros.cartesian.CartesianPathResult` (None before a plan).
        line: the drawn path (None before a plan).
    """

    def __init__(self, server, model: RobotModel, tip: str, view):
        self.server, self.model, self.tip, self.view = server, model, tip, view
        self.result: CartesianPathResult | None = None
        self.line = None
        gui = server.gui
        self.folder = gui.add_folder("Cartesian path", expand_by_default=False)
        with self.folder:
            self.offset = gui.add_vector3("Move by [m]", initial_value=(0.0, 0.0, -0.1), step=0.01,
                                          hint="a straight move of the tip, in the root link's axes")
            self.max_step = gui.add_number("max_step [m]", initial_value=0.005, min=0.0005, max=0.1, step=0.0005)
            plan, play, stop = gui.add_button("Plan"), gui.add_button("Play"), gui.add_button("Stop")
            self.status = gui.add_markdown(f"Moves `{tip}` in a straight line from the pose shown.")
        plan.on_click(lambda _: self.plan())
        play.on_click(lambda _: self.play())
        stop.on_click(lambda _: self.stop())
        self.handles = [self.offset, self.max_step, plan, play, stop, self.status, self.folder]
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def plan(self, offset=None, max_step: float | None = None) -> CartesianPathResult | None:
        """Follow the requested move (``offset``, ``max_step``: the panel's values when None) from
        the configuration shown, draw it and return the result (None: the view is removed, or
        the request was refused: the status line says why)."""
        with self.view.lock:
            if self.view.removed:
                return None
            q0 = np.array(self.view.scene.q, float)
        offset = np.asarray(self.offset.value if offset is None else offset, float)
        step = float(self.max_step.value if max_step is None else max_step)
        target = frame_transform(self.model, q0, self.model.root_link, self.tip)
        target[:3, 3] += offset
        try:
            result = cartesian_path(self.model, target, self.tip, q0, max_step=step)
        except RobokinError as error:
            self.status.content = f"Refused: {error}"
            return None
        self._draw(result)
        return result

    def _draw(self, result: CartesianPathResult) -> None:
        with self.view.lock:
            if self.view.removed:
                return
            self.result = result
            if self.line is not None:
                self.line.remove()
                self.line = None
            positions = result.poses[:, :3, 3]
            if len(positions) >= 2:
                segments = np.stack([positions[:-1], positions[1:]], axis=1).astype(np.float32)
                colour = COMPLETE_COLOUR if result.complete else PARTIAL_COLOUR
                root = self.view.scene.frames[self.model.link_index(self.model.root_link)]
                self.line = self.server.scene.add_line_segments(f"{root.name}/cartesian_path", segments, colour,
                                                                thickness=THICKNESS)
            said = f"fraction **{result.fraction:.3f}**, {len(result.q)} points, {result.times[-1]:.2f} s"
            self.status.content = said if result.complete else f"{said}; stopped: {result.message}"

    def frames(self) -> list[tuple[float, np.ndarray]]:
        """The playback's ``(time [s], q)`` frames: every point of the last plan, thinned to one
        per :data:`FRAME_PERIOD`, its last point always included ([] before a plan)."""
        result = self.result
        if result is None:
            return []
        shown, last = [], -np.inf
        for k, (t, q) in enumerate(zip(result.times, result.q)):
            if t - last >= FRAME_PERIOD or k == len(result.q) - 1:
                shown.append((float(t), q))
                last = t
        return shown

    def play(self) -> bool:
        """Play the last plan back in a background thread (from its start); False when there is
        none or a playback runs."""
        frames = self.frames()
        if not frames or (self._thread is not None and self._thread.is_alive()):
            return False
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, args=(frames,), name="web-view-path", daemon=True)
        self._thread.start()
        return True

    def show(self, q) -> bool:
        """Show one configuration of the playback; False when the view is removed."""
        with self.view.lock:
            if self.view.removed:
                return False
            self.view.set_configuration(q)
            return True

    def _run(self, frames) -> None:
        previous = frames[0][0]
        for t, q in frames:
            if self._stopping.wait(t - previous) or not self.show(q):
                return
            previous = t

    def stop(self) -> None:
        """End a playback (the robot stays where it is)."""
        self._stopping.set()

    def remove(self) -> None:
        """Stop a playback and take the controls and the line out of the server (called under
        the view's lock: the thread is not joined; its next frame finds the view removed)."""
        self._stopping.set()
        if self.line is not None:
            self.line.remove()
        for handle in self.handles:
            handle.remove()
