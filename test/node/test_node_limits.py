"""The node's bounds, without DDS: log and reply caps, description limits, the loader thread."""

import threading
import time

import pytest
from node_harness import FIXTURES, robot_xml, set_parameter

from robokin_ros import RobotModel
from robokin_ros.node.background import LatestJobWorker
from robokin_ros.node.descriptions import Rejected
from robokin_ros.node.limits import check_description, collision_pairs
from robokin_ros.node.log_limits import cap_lines, cap_message, cap_notes, cap_text
from robokin_ros.node.parameters import DescriptionLimits


def test_cap_text_and_lines():
    assert cap_text('abc', 10) == 'abc'
    assert cap_text('x' * 50, 10) == 'x' * 10 + '... (cut: 50 characters)'
    lines = [f'problem {i}' for i in range(100)]
    assert cap_lines(lines, 3) == ['problem 0', 'problem 1', 'problem 2', '... and 97 more']
    assert cap_lines(lines[:3], 3) == lines[:3]
    assert cap_message('\n'.join(lines), 2) == 'problem 0\nproblem 1\n... and 98 more'


def test_cap_notes_keeps_errors_and_infos_and_counts_the_warnings_left_out():
    notes = [('warning', f'w{i}') for i in range(50)] + [('error', 'e'), ('info', 'i' * 5000)]
    capped = cap_notes(notes, max_lines=5)
    assert [n for n in capped if n[0] == 'warning'][:5] == [('warning', f'w{i}') for i in range(5)]
    assert ('error', 'e') in capped
    assert [len(t) < 1100 for level, t in capped if level == 'info'] == [True]
    assert capped[-1] == ('warning', '... and 45 more warnings about this description (not logged)')


def test_check_description_limits():
    panda = robot_xml('panda')
    n_links = RobotModel.from_urdf(panda).n_links
    check_description(panda, DescriptionLimits(max_bytes=len(panda.encode()), max_links=n_links))
    with pytest.raises(Rejected, match=rf'has {n_links} links, more than max_links = {n_links - 1}'):
        check_description(panda, DescriptionLimits(max_links=n_links - 1))
    with pytest.raises(Rejected, match='more than max_description_bytes = 100'):
        check_description(panda, DescriptionLimits(max_bytes=100))
    multibyte = panda.replace('<robot ', '<!-- ' + 'é' * 60 + ' -->\n<robot ', 1)   # 2 bytes a character
    with pytest.raises(Rejected, match='max_description_bytes'):
        check_description(multibyte, DescriptionLimits(max_bytes=len(multibyte) + 30))
    with pytest.raises(Rejected, match='line 1'):   # malformed XML: the parser's reason
        check_description('<robot name="x"><link', DescriptionLimits())


def test_collision_pairs_counts_geometry_pairs_on_different_links():
    panda = RobotModel.from_urdf(robot_xml('panda'))
    counts = [len(g) for g in panda.link_collisions]
    expected = sum(a * b for i, a in enumerate(counts) for b in counts[i + 1:])
    assert collision_pairs(panda) == expected == 684
    assert collision_pairs(RobotModel.from_urdf((FIXTURES / 'branched.urdf').read_text())) >= 0


def test_latest_job_worker_runs_in_order_and_replaces_a_waiting_job():
    ran, errors = [], []
    started, release = threading.Event(), threading.Event()
    worker = LatestJobWorker('test worker', errors.append)
    worker.submit(lambda: (started.set(), release.wait(60.0), ran.append('first')))
    assert started.wait(60.0)   # the first job is running (an event: a 50 ms sleep was luck on a busy machine)
    worker.submit(lambda: ran.append('second'))   # replaced by the third before it starts
    worker.submit(lambda: ran.append('third'))
    assert not worker.idle()
    release.set()
    wait_idle(worker)
    assert ran == ['first', 'third']
    worker.submit(lambda: 1 / 0)   # a failing job is reported, the worker goes on
    wait_idle(worker)
    assert [type(e) for e in errors] == [ZeroDivisionError]
    worker.submit(lambda: ran.append('after'))
    wait_idle(worker)
    assert worker.stop(5.0)
    worker.submit(lambda: ran.append('too late'))   # ignored once stopped
    time.sleep(0.05)
    assert ran == ['first', 'third', 'after']


def wait_idle(worker, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not worker.idle():
        assert time.monotonic() < deadline, 'the worker did not finish its job'
        time.sleep(0.01)


# ---------------------------------------------------------------------------- the parameter path, in process
def test_description_parameters_over_the_limits_are_refused_with_the_reason(make_node, tmp_path):
    node = make_node(robot_description=robot_xml('ur5e'), max_links=12, max_description_bytes=200_000)
    panda = robot_xml('panda')   # 13 links
    result = set_parameter(node, 'robot_description', panda)
    assert not result.successful and result.reason == 'the description has 13 links, more than max_links = 12'
    path = tmp_path / 'panda.urdf'
    path.write_text(panda)
    result = set_parameter(node, 'description_file', str(path))   # a file: counted once parsed, before loading
    assert not result.successful and 'more than max_links = 12' in result.reason
    result = set_parameter(node, 'robot_description', panda.replace('<robot ', '<!--' + ' ' * 200_000 + '-->\n<robot '))
    assert not result.successful and 'more than max_description_bytes = 200000' in result.reason
    assert node.robot.model.name == 'ur5e'
    assert set_parameter(node, 'max_links', 13).successful
    assert set_parameter(node, 'robot_description', panda).successful
    assert node.robot.model.name == 'panda'


def test_limit_parameters_must_be_positive(make_node):
    node = make_node()
    for name in ('max_links', 'max_description_bytes', 'max_collision_pairs', 'ik_max_timeout'):
        result = set_parameter(node, name, 0 if name != 'ik_max_timeout' else 0.0)
        assert not result.successful and result.reason.startswith(f'{name} must be a finite number > 0')
