"""Twist sliders that jog the view's robot through :class:`robokin_ros.Servo` (``robokin view``).

Six sliders (linear x, y, z and angular x, y, z of the tip, in the root frame, unitless: -1..1
times ``scale.linear`` / ``scale.rotational``) and a Stop button. While a slider is off zero a
background thread steps the servo every :data:`PERIOD` and shows the result; at zero the servo
brakes to rest at the joints' acceleration limits, then the thread idles. The status line shows
the servo's status (singularity and limit slow-downs included).
"""

from __future__ import annotations

import threading

from ..errors import RobokinError
from ..model import RobotModel
from ..servo import Servo, StatusCode, TwistCommand

#: [s] one jog step.
PERIOD = 0.02
#: The sliders: label -> index in the twist [linear; angular].
AXES = ("linear x", "linear y", "linear z", "angular x", "angular y", "angular z")


def twist_jog(server, model: RobotModel, tip: str, view) -> TwistJog | None:
    """A :class:`TwistJog` of ``tip``, or None where the servo cannot move it (a floating or
    planar joint between the root and the tip: a humanoid's hand)."""
    try:
        return TwistJog(server, model, tip, view)
    except RobokinError:
        return None


class TwistJog:
    """The "Servo" folder of a view.

    Args:
        server: the viser server. model: the robot. tip: the link to jog.
        view: what shows a configuration: ``view.scene.q`` (the one shown),
            ``view.set_configuration(q)``, ``view.lock`` and ``view.removed``.

    Attributes:
        servo: the :class:`~robokin_ros.Servo` (its ``joint_names`` are the jogged joints).
        sliders: the six twist sliders, :data:`AXES` order.
        status: the status line (viser markdown).
    """

    def __init__(self, server, model: RobotModel, tip: str, view):
        self.view = view
        self.servo = Servo(model, tip)
        gui = server.gui
        self.folder = gui.add_folder("Servo (twist)", expand_by_default=False)
        with self.folder:
            self.sliders = [gui.add_slider(label, min=-1.0, max=1.0, step=0.01, initial_value=0.0) for label in AXES]
            stop = gui.add_button("Stop", hint="every slider back to zero: the arm brakes to rest")
            self.status = gui.add_markdown(f"Jogs `{tip}` (root-frame axes).")
        stop.on_click(lambda _: self.zero())
        self.handles = [*self.sliders, stop, self.status, self.folder]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="web-view-servo", daemon=True)
        self._thread.start()

    def zero(self) -> None:
        """Every slider to zero (the arm brakes to rest)."""
        for slider in self.sliders:
            slider.value = 0.0

    def command(self) -> TwistCommand | None:
        """The sliders' twist, or None when all are at zero."""
        values = [float(slider.value) for slider in self.sliders]
        return TwistCommand(linear=tuple(values[:3]), angular=tuple(values[3:])) if any(values) else None

    def tick(self, dt: float = PERIOD) -> bool:
        """One jog step (when a slider is off zero or the arm still brakes); whether it moved."""
        view = self.view
        with view.lock:
            if view.removed:
                return False
            command = self.command()
            if command is None and not self.servo.velocity.any():
                return False
            q, velocity, status = self.servo.step(view.scene.q, command, dt)
            view.set_configuration(q)
            if status.code != StatusCode.NO_WARNING or status.message:
                self.status.content = f"{status.code.name}: {status.message}"
            else:
                self.status.content = "NO_WARNING"
            return bool(velocity.any())

    def _run(self) -> None:
        while not self._stopping.wait(PERIOD):
            self.tick(PERIOD)

    def remove(self) -> None:
        """Stop the thread and take the controls out of the server. (Called under the view's
        lock, so the thread is not joined: a step it has started finds the view removed.)"""
        self._stopping.set()
        for handle in self.handles:
            handle.remove()
