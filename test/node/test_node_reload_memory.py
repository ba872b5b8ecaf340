"""A node hot-reloading distinct robots stays within a bound (issue 33 item 12): 100 distinct arms,
each used as a client would (/tf's FK, Jacobians, one IK solve, gravity), end within +200 MB of
the memory after the first few. Compiled kernels, which numba never frees, are capped per process
(``ROBOKIN_MAX_KERNELS``, test/core/kernels/test_kernel_memory.py); this test covers the rest of
what a model leaves behind (registry entries, generated source, solver caches)."""

import os
import time

import numpy as np
import pytest
from std_msgs.msg import String

import robokin_ros as rk

pytestmark = pytest.mark.slow


def _arm(i: int, rng) -> str:
    """A distinct 6-joint arm named ``arm<i>`` with random link origins."""
    parts, parent = [f'<robot name="arm{i}">', '<link name="base"/>'], 'base'
    for j in range(6):
        xyz = ' '.join(f'{v:.4f}' for v in rng.uniform(-0.2, 0.2, 3))
        parts.append(f'<link name="a{j}"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" '
                     f'ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j{j}" type="revolute">'
                     f'<parent link="{parent}"/><child link="a{j}"/><origin xyz="{xyz}"/>'
                     f'<axis xyz="{j % 2} 0 {1 - j % 2}"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>')
        parent = f'a{j}'
    return '\n'.join(parts + ['</robot>'])


def _rss_mib() -> float:
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20


def test_reloading_100_distinct_robots_stays_within_200_mib(make_node):
    rng = np.random.default_rng(7)
    node = make_node(robot_description=_arm(0, rng))
    start = None
    for i in range(1, 111):
        node.robot_swap.on_description(String(data=_arm(i, rng)))
        deadline = time.monotonic() + 60
        while node.loading():
            assert time.monotonic() < deadline, f'arm{i} was not loaded'
            time.sleep(0.01)
        model = node.robot.model
        assert model.name == f'arm{i}'
        q = model.home_configuration()
        for _ in range(100):
            rk.forward_kinematics(model, q)
            rk.jacobian(model, q, 'a5')
        target = rk.frame_transform(model, q + 0.1, model.root_link, 'a5')
        assert rk.solve_ik(model, target, 'a5', q, max_iterations=2000).success
        rk.rnea(model, q, np.zeros(model.n_v), np.zeros(model.n_v))
        if i == 10:
            start = _rss_mib()   # after the first few: imports and one-off caches are in
    assert _rss_mib() - start < 200, f'{_rss_mib() - start:.0f} MiB after 100 more robots'
