"""An executor that runs the hot path inline and slow callback groups on worker threads."""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Callable, Collection

from rclpy.callback_groups import CallbackGroup
from rclpy.executors import (
    ConditionReachedException,
    ExternalShutdownException,
    MultiThreadedExecutor,
    ShutdownException,
    TimeoutException,
    TimeoutObject,
)

#: What :class:`OffloadingExecutor` borrows from rclpy 7's (Jazzy's) MultiThreadedExecutor: the
#: method it overrides (which ``spin_once`` and ``spin_once_until_future_complete`` call), the
#: thread pool it submits to and the list of running callbacks it keeps.
BORROWED_INTERNALS = ('_spin_once_impl(timeout_sec, wait_condition)', '_executor (a thread pool)',
                      '_futures (a list)')


def missing_internals(executor: MultiThreadedExecutor) -> list[str]:
    """Which of :data:`BORROWED_INTERNALS` ``executor`` (a constructed MultiThreadedExecutor) lacks."""
    missing = []
    method = vars(MultiThreadedExecutor).get('_spin_once_impl')
    if not callable(method) or not {'timeout_sec', 'wait_condition'} <= set(inspect.signature(method).parameters):
        missing.append(BORROWED_INTERNALS[0])
    if not callable(getattr(getattr(executor, '_executor', None), 'submit', None)):
        missing.append(BORROWED_INTERNALS[1])
    if not isinstance(getattr(executor, '_futures', None), list):
        missing.append(BORROWED_INTERNALS[2])
    return missing


def _rclpy_name() -> str:
    try:
        return f"rclpy {importlib.metadata.version('rclpy')}"
    except importlib.metadata.PackageNotFoundError:
        return 'this rclpy'


class OffloadingExecutor(MultiThreadedExecutor):
    """A :class:`MultiThreadedExecutor` that hands only ``offload`` callback groups to its threads.

    Every other callback (joint states, timers, parameter services) runs inline in the spinning
    thread, as in a SingleThreadedExecutor: handing each small message to a thread pool costs
    about three times as much (ros-env.md, 6.1). A slow service call therefore runs on a worker
    while TF keeps flowing.

    It overrides private parts of rclpy 7's MultiThreadedExecutor (:data:`BORROWED_INTERNALS`);
    constructing it on an rclpy without them raises at once instead of misbehaving.

    Args:
        offload: callback groups whose callbacks run on the worker threads.
        num_threads: worker threads (>= 1).

    Raises:
        RuntimeError: this rclpy's MultiThreadedExecutor lacks what it borrows (named).
    """

    def __init__(self, offload: Collection[CallbackGroup], num_threads: int = 2, *, context=None):
        super().__init__(num_threads=max(1, num_threads), context=context)
        missing = missing_internals(self)
        if missing:
            raise RuntimeError(
                f"{_rclpy_name()}'s MultiThreadedExecutor has no {', '.join(missing)}: "
                'robokin_ros.node.executor.OffloadingExecutor overrides these internals of rclpy 7 (Jazzy) '
                'and must be updated for this rclpy')
        self._offload = tuple(offload)

    # Same contract as MultiThreadedExecutor._spin_once_impl (rclpy 7), which spin_once and
    # spin_until_future_complete call.
    def _spin_once_impl(self, timeout_sec: float | TimeoutObject | None = None,
                        wait_condition: Callable[[], bool] = lambda: False) -> None:
        try:
            handler, entity, _ = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
        except (ExternalShutdownException, ShutdownException, TimeoutException, ConditionReachedException):
            return
        if getattr(entity, 'callback_group', None) in self._offload:
            self._executor.submit(handler)
            self._futures.append(handler)
        else:
            handler()
            handler.result()  # raise what the callback raised
        for future in self._futures[:]:
            if future.done():
                self._futures.remove(future)
                future.result()

    # --- shutdown (engineer `launch`) ---------------------------------------------------------
    def shutdown(self, timeout_sec: float | None = None) -> bool:
        """Stop spinning, let the offloaded callbacks in progress finish and join the worker threads.

        rclpy 7's ``Executor.shutdown`` neither waits for running callbacks nor stops
        ``MultiThreadedExecutor``'s thread pool, so a node destroyed right after it could still be
        in use by a worker answering an IK call (a crash, or a traceback at exit). Callbacks
        queued but not started are dropped. An IK call in progress ends within its own timeout.

        Args:
            timeout_sec: passed to ``Executor.shutdown`` (the inline callbacks).

        Returns:
            What ``Executor.shutdown`` returns.
        """
        done = super().shutdown(timeout_sec)
        self._executor.shutdown(wait=True, cancel_futures=True)
        return done
