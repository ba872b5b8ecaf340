"""OffloadingExecutor (robokin_ros.node.executor) overrides private parts of rclpy 7's
MultiThreadedExecutor (review F14). These tests fail loudly, saying what changed, on an rclpy
whose MultiThreadedExecutor no longer has them or no longer routes spin_once through them."""

import concurrent.futures
import inspect
import threading
import time

import pytest
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from robokin_ros.node import executor as offloading
from robokin_ros.node.executor import OffloadingExecutor

UPDATE = ('robokin_ros.node.executor.OffloadingExecutor overrides it: update OffloadingExecutor for this rclpy '
          '(written against rclpy 7, Jazzy)')


def test_multithreaded_executor_still_has_what_offloading_executor_borrows(node_context):
    method = vars(MultiThreadedExecutor).get('_spin_once_impl')
    if method is None:
        pytest.fail(f'rclpy MultiThreadedExecutor has no _spin_once_impl any more; {UPDATE}')
    parameters = list(inspect.signature(method).parameters)
    if parameters[:3] != ['self', 'timeout_sec', 'wait_condition']:
        pytest.fail(f'rclpy MultiThreadedExecutor._spin_once_impl now takes {parameters}, not (self, timeout_sec, '
                    f'wait_condition); {UPDATE}')
    for caller in ('spin_once', 'spin_once_until_future_complete'):
        if '_spin_once_impl' not in inspect.getsource(getattr(MultiThreadedExecutor, caller)):
            pytest.fail(f'rclpy MultiThreadedExecutor.{caller} no longer calls _spin_once_impl; {UPDATE}')
    executor = MultiThreadedExecutor(num_threads=2, context=node_context)
    try:
        if not isinstance(getattr(executor, '_executor', None), concurrent.futures.Executor):
            pytest.fail(f'rclpy MultiThreadedExecutor has no thread pool in _executor any more; {UPDATE}')
        if not isinstance(getattr(executor, '_futures', None), list):
            pytest.fail(f'rclpy MultiThreadedExecutor keeps no _futures list any more; {UPDATE}')
        assert offloading.missing_internals(executor) == []
    finally:
        executor.shutdown()


def test_offloaded_groups_run_on_workers_and_the_rest_inline(node_context):
    """The behaviour the override exists for: if spin_once stopped reaching it, both callbacks would
    run on pool threads (MultiThreadedExecutor's own _spin_once_impl)."""
    node = Node('offload_check', context=node_context)
    slow_group = MutuallyExclusiveCallbackGroup()
    threads = {}
    node.create_timer(0.01, lambda: threads.setdefault('inline', threading.get_ident()))
    node.create_timer(0.01, lambda: threads.setdefault('offloaded', threading.get_ident()), callback_group=slow_group)
    executor = OffloadingExecutor([slow_group], num_threads=2, context=node_context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 10
        while len(threads) < 2 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert threads.get('inline') == threading.get_ident(), \
            f'a callback of the default group did not run inline in the spinning thread; {UPDATE}'
        assert 'offloaded' in threads and threads['offloaded'] != threading.get_ident(), \
            f'a callback of an offloaded group did not run on a worker thread; {UPDATE}'
    finally:
        executor.shutdown()
        node.destroy_node()


@pytest.mark.parametrize('remove', ['_spin_once_impl', '_executor', '_futures'])
def test_construction_fails_loudly_on_an_rclpy_without_them(node_context, monkeypatch, remove):
    if remove == '_spin_once_impl':
        monkeypatch.delattr(MultiThreadedExecutor, '_spin_once_impl')
    else:
        init = MultiThreadedExecutor.__init__

        def init_without(self, *args, **kwargs):
            init(self, *args, **kwargs)
            if remove == '_executor':
                self._executor.shutdown()
            delattr(self, remove)
        monkeypatch.setattr(MultiThreadedExecutor, '__init__', init_without)
    with pytest.raises(RuntimeError, match=rf'MultiThreadedExecutor has no {remove}.*OffloadingExecutor overrides '
                                           r'these internals of rclpy 7 \(Jazzy\) and must be updated'):
        OffloadingExecutor([], context=node_context)
