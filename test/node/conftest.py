"""ROS 2 fixtures: node processes and an rclpy checker node in the test process; the tiers.

Tiers: a test that starts a process or talks DDS to one is marked ``slow`` (left out of
``make check``): every test using ``ros_context`` (the context of the probes that talk to node
processes) or ``start_process``, directly or through another fixture, and the tests a module
marks itself (``pytestmark``: launch files, shutdown scripts, README commands...). A test not
marked ``slow`` that starts a :class:`ros_harness.NodeProcess` fails. Nodes and executors run
in the test process use ``node_context`` and stay in the quick tier.

The environment (LOCALHOST discovery, per-run ROS_DOMAIN_ID, ROS_LOG_DIR, AMENT_PREFIX_PATH) is
set by test/conftest.py before this module imports rclpy.

* ``start_process(args)`` starts ``python <args>`` as a real process (output to a file) and, at
  the end of the test, stops it with SIGINT and asserts exit code 0. Call ``proc.stop()`` in the
  test to check the exit code there.
* ``ros`` is a :class:`ros_harness.RosChecker`: a node on a private context spun in the test
  thread, with waits that poll for a condition up to a timeout (never fixed sleeps) and fail
  early, with the output, if a watched process dies.
* ``make_node(**parameters)`` makes a :class:`~robokin_ros.node.kinematics_node.KinematicsNode`
  in the test process, driven through its callbacks (no DDS traffic needed).
"""

import os
import pathlib

import pytest
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from ros_harness import NodeProcess, RosChecker

from robokin_ros.node.kinematics_node import KinematicsNode

#: Fixtures of the tests that talk DDS to node processes or start processes: ``slow``.
PROCESS_FIXTURES = frozenset({'ros_context', 'start_process'})


def pytest_collection_modifyitems(config, items):
    """Mark every test under test/node with ``ros``, and those using :data:`PROCESS_FIXTURES` with ``slow``."""
    here = pathlib.Path(__file__).resolve().parent
    for item in items:
        if here in pathlib.Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.ros)
            if PROCESS_FIXTURES.intersection(getattr(item, 'fixturenames', ())):
                item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Let the test (and the fixtures set up for it) start processes only if it is ``slow``."""
    NodeProcess.may_start = item.get_closest_marker('slow') is not None


@pytest.fixture
def start_process(tmp_path):
    """Factory: ``start_process(args, env=None, cwd=None) -> NodeProcess`` (args after python).

    Processes still running at teardown are stopped with SIGINT and must exit with code 0.
    """
    procs = []

    def start(args, env=None, cwd=None):
        log_path = tmp_path / f'proc{len(procs)}-{pathlib.Path(str(args[0])).stem}.log'
        proc = NodeProcess(args, log_path, env=env, cwd=cwd)
        procs.append(proc)
        return proc

    yield start
    errors = []
    for proc in procs:
        if proc.returncode is not None:
            continue  # the test stopped it (and saw any failure) already
        try:
            proc.stop()
        except AssertionError as exc:
            errors.append(str(exc))
    if errors:
        pytest.fail('\n\n'.join(errors))


def _context():
    context = Context()
    rclpy.init(context=context)
    return context


@pytest.fixture(scope='session')
def ros_context():
    """An initialised private rclpy context for the whole session, of the probes that talk to
    node processes over DDS (its tests are ``slow``)."""
    context = _context()
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture(scope='session')
def node_context():
    """An initialised private rclpy context for the whole session, of nodes and executors run in
    the test process (quick tier)."""
    context = _context()
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture(scope='session')
def ros_node(ros_context):
    """A checker node (session scope); tests destroy what they create on it."""
    node = Node(f'pytest_checker_{os.getpid()}', context=ros_context)
    yield node
    node.destroy_node()


@pytest.fixture
def ros(ros_context, ros_node):
    """A :class:`RosChecker` on the session node, with a fresh executor per test."""
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(ros_node)
    checker = RosChecker(ros_node, executor)
    yield checker
    checker.close()
    executor.remove_node(ros_node)
    executor.shutdown()


@pytest.fixture
def make_node(node_context, request):
    """Factory: ``make_node(**parameters) -> KinematicsNode`` in the test process, in a namespace
    named after the test module (``/test_node_limits`` ...), destroyed after the test."""
    namespace = '/' + request.module.__name__.rpartition('.')[2]
    nodes = []

    def make(**parameters):
        node = KinematicsNode(context=node_context, namespace=namespace,
                              parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()])
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()
