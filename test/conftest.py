"""Test-wide setup: isolate ROS 2 traffic before anything can import rclpy.

Kept free of ROS imports: test/core/ must run where rclpy is not installed. ROS fixtures live
in test/node/conftest.py.
"""

import contextlib
import importlib.util
import os
import pathlib
import signal
import sys
import tempfile

import pytest

# The processes the tests start must get SIGINT's default action: a run started as a background
# job of a non-interactive shell (or by a runner that ignores SIGINT) has SIGINT ignored, which
# its children inherit, and the tests that press Ctrl-C on a child (robokin view, reach, the
# nodes) would wait for an exit that never comes. A handled signal is reset to its default in a
# child; an ignored one is not.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Never multicast off loopback; no other run may see our topics. tools/run_in_env.sh sets the
# same; a value already in the environment (e.g. a per-worker domain) is respected except for
# the discovery range, which is forced, and except the checkout's own domain that
# tools/run_in_env.sh gives the user's terminals (ROBOKIN_CHECKOUT_DOMAIN_ID): a run moves to
# 1..101, off the user's node.
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.pop('ROS_LOCALHOST_ONLY', None)
if os.environ.get('ROS_DOMAIN_ID', '') in ('', os.environ.get('ROBOKIN_CHECKOUT_DOMAIN_ID')):
    os.environ['ROS_DOMAIN_ID'] = str(1 + os.getpid() % 101)
if not os.environ.get('ROS_LOG_DIR'):
    _log_root = ROOT / '.build' / 'ros-log'
    _log_root.mkdir(parents=True, exist_ok=True)
    os.environ['ROS_LOG_DIR'] = tempfile.mkdtemp(prefix='pytest.', dir=_log_root)
if not os.environ.get('AMENT_PREFIX_PATH'):
    os.environ['AMENT_PREFIX_PATH'] = sys.prefix
# Compiled numba kernels (robokin_ros.accel) go inside the project, not into ~/.cache.
os.environ.setdefault('ROBOKIN_CACHE_DIR', str(ROOT / '.build' / 'robokin-cache'))
# The suite loads a few hundred kernels: under the default bound (128 modules) each run would evict
# and recompile what the previous one compiled.
os.environ.setdefault('ROBOKIN_CACHE_MAX_ENTRIES', '2048')
# ... and loads them in one process: no bound on loaded kernel modules (test_kernel_memory sets its own).
os.environ.setdefault('ROBOKIN_MAX_KERNELS', '100000')
# The generic IK loop serves a robot whose own loop is not compiled yet; its answers equal the
# generated step's to rounding, not bit for bit, so a test comparing two solves bit for bit would see
# the switch when a robot's loop finishes compiling mid-test (CI starts on an empty cache). Its own
# tests (test/core/ik/test_generic_loop.py) turn it on.
os.environ.setdefault('ROBOKIN_GENERIC_IK', '0')
_profile = ROOT / 'tools' / 'fastdds_fast_discovery.xml'
if _profile.is_file():
    os.environ.setdefault('FASTRTPS_DEFAULT_PROFILES_FILE', str(_profile))

_HAVE_RCLPY = importlib.util.find_spec('rclpy') is not None
collect_ignore = [] if _HAVE_RCLPY else ['node']


def pytest_report_header(config):
    lines = ['ros: ROS_DOMAIN_ID={ROS_DOMAIN_ID} '
             'ROS_AUTOMATIC_DISCOVERY_RANGE={ROS_AUTOMATIC_DISCOVERY_RANGE} '
             'ROS_LOG_DIR={ROS_LOG_DIR}'.format(**os.environ)]
    if not _HAVE_RCLPY:
        lines.append('ros: rclpy is not importable, test/node is NOT collected '
                     '(run "make test" for the full suite)')
    return lines


@pytest.fixture
def run_with():
    """``run_with(**settings)``: the rest of the test runs with the current robokin_ros runtime
    changed by ``settings`` (``Runtime.use``: kind, accelerated, threads, compile_after,
    background_compiles), restored afterwards. Tests pass a runtime; they never set the
    library's switches."""
    stack = contextlib.ExitStack()

    def enter(**settings):
        from robokin_ros.runtime import current_runtime

        return stack.enter_context(current_runtime().use(**settings))

    yield enter
    stack.close()
