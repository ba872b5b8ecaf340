"""Ctrl-C at any moment of start-up (issue 30 item 5): the executables' entry points
(``robokin_entry``, what the console scripts run) exit 0 without a traceback when SIGINT reaches
them, once or twice, while they import rclpy, numpy, numba and robokin_ros, sent to their process
group as a terminal running ``ros2 launch`` does.

Before: a KeyboardInterrupt traceback from inside some import and exit -2 (8 of 20 random
Ctrl-Cs in the first 1-3 s).
"""

import os
import shlex
import signal
import subprocess
import sys
import time

import pytest
from node_harness import ROOT, robot_xml, write_params

from robokin_ros.node.launch_prefix import HOLD_STOP_SIGNALS, can_hold_stop_signals, executable_prefix

pytestmark = pytest.mark.slow   # starts processes

#: [s] after the start when the signals are sent: all within the imports (~1-3 s here), or
#: just after them for the last ones.
DELAYS = (0.15, 0.3, 0.5, 0.8, 1.2)
GAPS = (None, 0.0, 0.05)   # None: one SIGINT; else a second one this much later


def start(entry, directory, log, prefix=()):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    params = write_params(directory / 'params.yaml', robot_description=robot_xml('panda'))
    code = f'import sys, robokin_entry; sys.exit(robokin_entry.{entry}())'
    return subprocess.Popen([*prefix, sys.executable, '-c', code, '--ros-args', '--params-file', str(params)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=str(ROOT),
                            start_new_session=True)   # its own process group, as under a terminal


def interrupt(entry, directory, delay, gap, prefix=()):
    """Start ``entry`` (after ``prefix``, a command's words), SIGINT its group ``delay`` s later
    (twice when ``gap`` is not None): (exit code, output)."""
    log_path = directory / f'{entry}-{delay}-{gap}-{len(prefix)}.log'
    with open(log_path, 'wb') as log:
        proc = start(entry, directory, log, prefix)
        time.sleep(delay)
        returncode = sigint_group(proc, gap)
    return returncode, log_path.read_text(errors='replace')


def sigint_group(proc, gap):
    """SIGINT to ``proc``'s process group, a second one ``gap`` seconds later (None: none), then
    its exit code (killed with the group if it has not ended within 30 s)."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        if gap is not None:
            time.sleep(gap)
            os.killpg(proc.pid, signal.SIGINT)
        return proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize('gap', GAPS, ids=['once', 'twice-at-once', 'twice-50ms'])
def test_kin_node_interrupted_during_start_up_exits_0(tmp_path, gap):
    failures = []
    for delay in DELAYS:
        returncode, output = interrupt('kin_node', tmp_path, delay, gap)
        if returncode != 0 or 'Traceback' in output:
            failures.append(f'SIGINT at {delay} s (second after {gap}): exit {returncode}\n{output}')
    assert not failures, '\n\n'.join(failures)


@pytest.mark.skipif(not can_hold_stop_signals(), reason='env --block-signal needs GNU coreutils >= 8.31')
def test_kin_node_under_the_launch_prefix_interrupted_while_python_starts_exits_0(tmp_path):
    """The first ~0.15 s: Python's own start-up (its ``site`` import and the venv's ``.pth``
    files), before any line of ours. Started as the launch files start it (their prefix holds
    SIGINT until robokin_entry's handlers are in place): exit 0, no traceback, no fatal error.
    (Without the prefix: "Fatal Python error: init_import_site" in 3 of 24 at 0.02-0.12 s.)"""
    prefix = shlex.split(executable_prefix({}, 'kin_node'))
    assert prefix == list(HOLD_STOP_SIGNALS)
    failures = []
    for delay in (0.005, 0.02, 0.035, 0.05, 0.065, 0.08, 0.1, 0.12, 0.14):
        returncode, output = interrupt('kin_node', tmp_path, delay, None, prefix)
        if returncode != 0 or 'Traceback' in output or 'Fatal Python error' in output:
            failures.append(f'SIGINT at {delay} s: exit {returncode}\n{output}')
    assert not failures, '\n\n'.join(failures)


@pytest.mark.skipif(not can_hold_stop_signals(), reason='env --block-signal needs GNU coreutils >= 8.31')
def test_the_launch_prefix_keeps_the_users_own_launch_prefix_as_launch_filters_it():
    users = {'launch-prefix': 'gdb -ex run --args', 'launch-prefix-filter': 'kin_'}
    hold = ' '.join(HOLD_STOP_SIGNALS)
    assert executable_prefix(users, 'kin_node') == f'gdb -ex run --args {hold}'
    assert executable_prefix(users, 'web_view') == hold   # the filter leaves it out
    assert executable_prefix({'launch-prefix': 'time'}, 'servo_node') == f'time {hold}'
    assert executable_prefix({}, 'kin_node') == hold


def test_the_entry_module_imports_only_the_standard_library():
    """What makes the early handling possible: nothing heavy runs before its handlers are in place."""
    code = ('import sys; before = set(sys.modules); import robokin_entry; '
            'print(sorted({m.split(".")[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names)))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, cwd=str(ROOT), check=True)
    assert out.stdout.strip() == "['robokin_entry']", out.stdout


def test_web_view_interrupted_during_start_up_exits_0(tmp_path):
    pytest.importorskip('viser')
    failures = []
    for delay, gap in ((0.3, None), (0.6, 0.0), (1.0, 0.05)):
        returncode, output = interrupt('web_view', tmp_path, delay, gap)
        if returncode != 0 or 'Traceback' in output:
            failures.append(f'SIGINT at {delay} s (second after {gap}): exit {returncode}\n{output}')
    assert not failures, '\n\n'.join(failures)


def test_web_view_running_exits_0_on_two_sigints_to_its_group(tmp_path):
    """Launch forwards Ctrl-C to the process group: web_view got a second SIGINT during its
    teardown and ended with -2 (7 of 7 under ros2 launch); its entry point now ends it with the
    stop signals ignored."""
    pytest.importorskip('viser')
    failures = []
    for gap in (0.0, 0.05):
        log_path = tmp_path / f'web_view-running-{gap}.log'
        with open(log_path, 'wb') as log:
            proc = start('web_view', tmp_path, log)
            deadline = time.monotonic() + 60
            while 'web view at' not in log_path.read_text(errors='replace'):
                if proc.poll() is not None or time.monotonic() > deadline:
                    sigint_group(proc, None)
                    pytest.fail(log_path.read_text(errors='replace'))
                time.sleep(0.05)
            returncode = sigint_group(proc, gap)
        output = log_path.read_text(errors='replace')
        if returncode != 0 or 'Traceback' in output:
            failures.append(f'two SIGINTs {gap} s apart: exit {returncode}\n{output}')
    assert not failures, '\n\n'.join(failures)
