"""Models far larger than any robot: the generated kernels step aside (their source, and Python's
compile of it, grow with the links) and what decides that costs linear memory (issue 33 item 12:
a 6,400-link chain's first FK took 12.6 s and 2.1 GB building every link's ancestor set)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.kernels import emitter, fk_codegen

ROBOTS = Path(__file__).resolve().parents[2] / "robokin_ros" / "robots"


def _chain(n: int) -> RobotModel:
    parts = ['<robot name="chain">', '<link name="l0"/>']
    for i in range(1, n):
        parts.append(f'<link name="l{i}"/><joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
                     f'<child link="l{i}"/><origin xyz="0 0 0.01"/><axis xyz="0 {i % 2} {1 - i % 2}"/>'
                     '<limit lower="-1" upper="1"/></joint>')
    return RobotModel.from_urdf("\n".join(parts + ["</robot>"]))


@pytest.mark.parametrize("name", ["panda.urdf", "twin_arm_torso.urdf", "ur5e.urdf"])
def test_support_links_are_the_union_of_the_links_supports(name):
    model = RobotModel.from_urdf_file(ROBOTS / name)
    rng = np.random.default_rng(0)
    for _ in range(20):
        links = rng.choice(model.n_links, size=rng.integers(1, 4), replace=True)
        expected = sorted(set().union({0}, *[set(model.link_supports[k].tolist()) for k in links]))
        assert emitter.support_links(model, links) == expected


def test_a_model_over_the_cap_has_no_generated_kernel_and_the_generic_fk_is_right():
    model = _chain(emitter.MAX_GENERATED_LINKS + 1)
    assert fk_codegen.compiled_fk(model) is None
    assert fk_codegen.compiled_link_poses(model, (model.n_links - 1,), "4x4") is None
    q = np.random.default_rng(1).uniform(-1, 1, model.n_q)
    T = forward_kinematics(model, q)
    small = _chain(40)   # the same first 40 links, generated kernel and all
    np.testing.assert_allclose(T[:40], forward_kinematics(small, q[:39]), atol=1e-12)
    assert fk_codegen.compiled_fk(small) is not None


@pytest.mark.slow
def test_the_first_fk_of_a_6400_link_chain_stays_in_linear_memory(tmp_path):
    """In a child process, which reports how much its peak memory grew (it was 2.1 GB)."""
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        import numpy as np
        from robokin_ros import RobotModel, forward_kinematics
        parts = ['<robot name="c">', '<link name="l0"/>']
        for i in range(1, 6400):
            parts.append(f'<link name="l{{i}}"/><joint name="j{{i}}" type="revolute"><parent link="l{{i - 1}}"/>'
                         f'<child link="l{{i}}"/><origin xyz="0 0 0.01"/><axis xyz="0 0 1"/>'
                         '<limit lower="-1" upper="1"/></joint>')
        model = RobotModel.from_urdf("\\n".join(parts + ["</robot>"]))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        T = forward_kinematics(model, np.zeros(model.n_q))
        assert T.shape == (6400, 4, 4) and abs(T[-1, 2, 3] - 63.99) < 1e-9
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert int(run.stdout.split()[-1]) < 400, f"the first FK grew the peak by {run.stdout.split()[-1]} MB"
