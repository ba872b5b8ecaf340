"""The Ray engine: a local Ray cluster started in the test (2 CPUs) computes the identical map
to the local engine. Skipped where Ray is not installed (``pip install -r tools/requirements-ray.txt``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from robokin_ros.errors import ArgumentError
from robokin_ros.reach import reachability_map

ROOT = Path(__file__).resolve().parents[3]
UR5E = (ROOT / "robokin_ros" / "robots" / "ur5e.urdf").read_text()
OPTIONS = dict(resolution=0.4, orientations=8, chunk_poses=96, manipulability=True)


def test_without_ray_the_ray_engine_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)   # import ray fails
    with pytest.raises(ArgumentError, match=r"ray: Ray is not installed \(pip install -r tools/requirements-ray.txt\)"):
        reachability_map(UR5E, "tool0", ray="auto", resolution=0.5, orientations=2)


@pytest.mark.slow   # starting Ray takes 5-10 s
def test_ray_cluster_gives_the_identical_map():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -r tools/requirements-ray.txt)")
    # Workers import this checkout's robokin_ros.
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        on_ray = reachability_map(UR5E, "tool0", ray="auto", **OPTIONS)
    finally:
        ray.shutdown()
    local = reachability_map(UR5E, "tool0", workers=1, **OPTIONS)
    assert on_ray.run.chunks_computed == local.run.chunks_computed > 4
    assert on_ray.equals(local)
