"""An executor that runs the hot path inline and slow callback groups on worker threads."""

from __future__ import annotations

from typing import Callable, Collection, Optional, Union

from rclpy.callback_groups import CallbackGroup
from rclpy.executors import (ConditionReachedException, ExternalShutdownException, MultiThreadedExecutor,
                             ShutdownException, TimeoutException, TimeoutObject)


class OffloadingExecutor(MultiThreadedExecutor):
    """A :class:`MultiThreadedExecutor` that hands only ``offload`` callback groups to its threads.

    Every other callback (joint states, timers, parameter services) runs inline in the spinning
    thread, as in a SingleThreadedExecutor: handing each small message to a thread pool costs
    about three times as much (ros-env.md, 6.1). A slow service call therefore runs on a worker
    while TF keeps flowing.

    Args:
        offload: callback groups whose callbacks run on the worker threads.
        num_threads: worker threads (>= 1).
    """

    def __init__(self, offload: Collection[CallbackGroup], num_threads: int = 2, *, context=None):
        super().__init__(num_threads=max(2, num_threads), context=context)
        self._offload = tuple(offload)

    # Same contract as MultiThreadedExecutor._spin_once_impl (rclpy 7), which spin_once and
    # spin_until_future_complete call.
    def _spin_once_impl(self, timeout_sec: Optional[Union[float, TimeoutObject]] = None,
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
    def shutdown(self, timeout_sec: Optional[float] = None) -> bool:
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
