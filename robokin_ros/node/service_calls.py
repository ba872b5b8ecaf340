"""The node's service callbacks: each call of /compute_ik, ~/compute_ik_solutions, /compute_fk,
/check_state_validity, /check_state_validity_multiple and /compute_cartesian_path handed to its handler module with what
it reads from the node.

:class:`ServiceCalls` gives every call a snapshot of the live robot, the settings in force, the
node's clock, and the node's logger for what went wrong; it clamps a request's IK timeout to
``ik_max_timeout``, gives every IK solve the node's cancel token (ended on shutdown) and cuts a
reply's ``error_code.message`` to :data:`~robokin_ros.node.log_limits.MAX_REPLY_CHARS`. The
handlers (one module per service, over :mod:`~robokin_ros.node.requests`) know no rclpy.
"""

from __future__ import annotations

import traceback

from builtin_interfaces.msg import Duration
from rclpy.node import Node

from .. import ik
from . import (
    cartesian_path_service,
    fk_service,
    ik_service,
    ik_solutions_service,
    multi_validity_service,
    validity_service,
)
from .conversions import duration_to_seconds
from .log_limits import MAX_REPLY_CHARS, cap_message, cap_text
from .requests import RobotSnapshot


class ServiceCalls:
    """The service callbacks of ``node`` (its ``robot`` and ``settings`` are read at each call).

    Attributes:
        solves: given to every IK solve of this node's services; cancelled on shutdown (:meth:`cancel_solves`).
    """

    def __init__(self, node: Node):
        self._node = node
        self.solves = ik.CancelToken()
        self._clamped_timeouts: set[float] = set()   # request timeouts already logged as clamped

    def cancel_solves(self) -> None:
        """End the IK solves of these services in progress at their next iteration, and every
        later one at once (shutdown)."""
        self.solves.cancel()

    def crash(self, error: BaseException) -> None:
        """Log an exception a handler (or the description loader) did not expect, with its traceback."""
        self._node.get_logger().error(cap_message('service handler failed:\n' + ''.join(
            traceback.format_exception(type(error), error, error.__traceback__)), max_lines=60))

    def problem(self, text: str) -> None:
        """Log why a validity request was answered ``valid=false`` (or was not fully checked)."""
        self._node.get_logger().warning(cap_text(text))

    def snapshot(self) -> RobotSnapshot | None:
        """The live robot as a service call reads it (None: no robot yet)."""
        robot = self._node.robot
        return None if robot is None else robot.snapshot()

    # ------------------------------------------------------------------------- the callbacks
    def compute_ik(self, request, response):
        return self._solve_call(ik_service.compute_ik, request, response)

    def compute_ik_solutions(self, request, response):
        return self._solve_call(ik_solutions_service.compute_ik_solutions, request, response)

    def compute_fk(self, request, response):
        return _capped_reply(fk_service.compute_fk(request, response, self.snapshot(), self._stamp(), self.crash))

    def check_state_validity(self, request, response):
        settings = self._node.settings
        policy, caps = settings.ik.avoid_collisions_policy, settings.validity_caps
        return validity_service.check_state_validity(request, response, self.snapshot(), self._stamp(), self.problem,
                                                     self.crash, policy=policy, caps=caps)

    def check_multi_state_validity(self, request, response):
        settings = self._node.settings
        return multi_validity_service.check_multi_state_validity(
            request, response, self.snapshot(), self._stamp(), self.problem, self.crash,
            policy=settings.ik.avoid_collisions_policy, max_states=settings.max_validity_states,
            caps=settings.validity_caps)

    def compute_cartesian_path(self, request, response):
        settings = self._node.settings
        return _capped_reply(cartesian_path_service.compute_cartesian_path(
            request, response, self.snapshot(), settings.ik, settings.cartesian_max_points,
            ik_service.Handling(self.solves, self.crash)))

    # ------------------------------------------------------------------------- IK calls
    def _solve_call(self, handler, request, response):
        """``handler`` (/compute_ik's or ~/compute_ik_solutions') with the request's timeout clamped."""
        settings = self._node.settings.ik
        clamped = self._clamp_timeout(request.ik_request, settings.max_timeout)
        handling = ik_service.Handling(self.solves, self.crash)
        response = handler(request, response, self.snapshot(), settings, handling)
        response.error_code.message += clamped
        return _capped_reply(response)

    def _clamp_timeout(self, ik_request, max_timeout: float) -> str:
        """Clamp a request's timeout above ``ik_max_timeout`` to it (logged once per value); the
        sentence to append to the reply, '' when nothing was clamped."""
        asked = duration_to_seconds(ik_request.timeout)
        if not asked > max_timeout:   # (0: ik_timeout, which is not clamped)
            return ''
        ik_request.timeout = Duration(sec=int(max_timeout), nanosec=int(round(max_timeout % 1 * 1e9)))
        note = f'the requested timeout {asked:.6g} s was clamped to ik_max_timeout = {max_timeout:g} s'
        if asked not in self._clamped_timeouts and len(self._clamped_timeouts) < 64:
            self._clamped_timeouts.add(asked)
            self._node.get_logger().warning(f'/compute_ik: {note} (said once per value)')
        return f' ({note})'

    def _stamp(self):
        """The node's time now, as a ``builtin_interfaces/Time``."""
        return self._node.get_clock().now().to_msg()


def _capped_reply(response):
    """``response`` with its ``error_code.message`` cut to :data:`~robokin_ros.node.log_limits.MAX_REPLY_CHARS`."""
    response.error_code.message = cap_text(response.error_code.message, MAX_REPLY_CHARS)
    return response
