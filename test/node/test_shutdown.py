"""Ctrl-C the way a terminal running ``ros2 launch`` delivers it: SIGINT (or launch's SIGTERM) to
the node's whole process group, twice in a row, while an IK call is running.

Before the fix 10 of 10 such trials printed a KeyboardInterrupt traceback (in ``destroy_node()``
or the thread-pool join at exit) or ended with -2 (the second signal after Python had reset its
handlers) or -11.
"""

import itertools
import os
import signal
import subprocess
import sys
import time

import pytest
from builtin_interfaces.msg import Duration
from moveit_msgs.srv import GetPositionIK
from node_harness import NODE_NAME, PANDA_UNREACHABLE_XYZ, ROOT, robot_xml, write_params

pytestmark = pytest.mark.slow   # starts node processes

TRIALS = 20
IK_TIMEOUT = 0.6   # [s] each trial's IK call runs this long unless the signals cut it short
SIGNAL_PAIRS = [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM, signal.SIGTERM),
                (signal.SIGINT, signal.SIGTERM)]
GAPS = [0.0, 0.02, 0.1]  # [s] between the two signals


def unreachable_ik_request():
    """An IK request the solver keeps working on for ``IK_TIMEOUT`` seconds."""
    req = GetPositionIK.Request()
    req.ik_request.ik_link_name = 'panda_hand_tcp'
    position = req.ik_request.pose_stamped.pose.position   # out of reach, within the chain's length
    position.x, position.y, position.z = PANDA_UNREACHABLE_XYZ
    req.ik_request.pose_stamped.pose.orientation.w = 1.0
    req.ik_request.timeout = Duration(sec=0, nanosec=int(IK_TIMEOUT * 1e9))
    return req


def start_node_in_own_group(directory, log):
    params = write_params(directory / 'params.yaml', robot_description=robot_xml('panda'),
                          ik_max_iterations=100_000_000)
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    return subprocess.Popen(
        [sys.executable, '-m', 'robokin_ros.node.main', '--ros-args', '--params-file', str(params)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=str(ROOT),
        start_new_session=True)  # its own process group, as under a terminal


def test_two_signals_to_the_process_group_during_ik_exit_cleanly(ros, tmp_path):
    client = ros.node.create_client(GetPositionIK, '/compute_ik')
    failures = []
    try:
        schedule = itertools.cycle(itertools.product(SIGNAL_PAIRS, GAPS))
        for trial, (pair, gap) in zip(range(TRIALS), schedule):
            log_path = tmp_path / f'trial{trial}.log'
            with open(log_path, 'wb') as log:
                proc = start_node_in_own_group(tmp_path, log)
                try:
                    ros.spin_until(lambda: client.service_is_ready() or proc.poll() is not None,
                                   f'/compute_ik of trial {trial}')
                    future = client.call_async(unreachable_ik_request())
                    deadline = time.monotonic() + IK_TIMEOUT / 3
                    while time.monotonic() < deadline:
                        ros.executor.spin_once(timeout_sec=0.01)
                    busy = not future.done()
                    os.killpg(proc.pid, pair[0])
                    time.sleep(gap)
                    os.killpg(proc.pid, pair[1])
                    returncode = proc.wait(timeout=15)
                finally:
                    if proc.poll() is None:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
            output = log_path.read_text(errors='replace')
            names = '+'.join(signal.Signals(s).name for s in pair)
            if not busy:
                failures.append(f'trial {trial}: the IK call had ended before the signals; '
                                f'the trial tests nothing:\n{output}')
            elif returncode != 0 or 'Traceback' in output or NODE_NAME not in output:
                failures.append(f'trial {trial} ({names}, gap {gap} s): exit code {returncode}; '
                                f'output:\n{output}')
    finally:
        ros.node.destroy_client(client)
    assert not failures, f'{len(failures)} of {TRIALS} trials failed:\n' + '\n'.join(failures)
