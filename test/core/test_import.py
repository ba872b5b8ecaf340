"""The core never imports rclpy (or any ROS message package): checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import importlib, json, pkgutil, sys
import robokin_ros
after_package = sorted(m for m in sys.modules if m.split(".")[0] in ("rclpy", "rcl_interfaces"))
core = [m.name for m in pkgutil.walk_packages(robokin_ros.__path__, "robokin_ros.")
        if not (m.name == "robokin_ros.node" or m.name.startswith("robokin_ros.node."))]
for name in core:
    importlib.import_module(name)
ros = sorted(m for m in sys.modules
             if m.split(".")[0] in ("rclpy", "rcl_interfaces", "sensor_msgs", "std_msgs", "geometry_msgs",
                                    "moveit_msgs", "tf2_ros", "builtin_interfaces"))
print(json.dumps({"after_package": after_package, "core": core, "ros": ros}))
"""


def probe(tmp_path: Path) -> dict:
    """Run PROBE in a fresh interpreter where a stub ``rclpy`` is importable (so an import of it
    would show up in ``sys.modules`` even where ROS is not installed)."""
    (tmp_path / "rclpy").mkdir()
    (tmp_path / "rclpy" / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_core_does_not_import_rclpy(tmp_path):
    result = probe(tmp_path)
    assert result["after_package"] == []
    assert result["ros"] == [], f"ROS modules loaded by the core: {result['ros']}"
    expected = {"robokin_ros.errors", "robokin_ros.model", "robokin_ros.model.urdf", "robokin_ros.spatial",
                "robokin_ros.kinematics", "robokin_ros.kinematics.geometric_jacobians", "robokin_ros.ik.solver",
                "robokin_ros.kernels.accel", "robokin_ros.collision.checker", "robokin_ros.dynamics.recursions"}
    assert expected <= set(result["core"])
    assert not any(name.startswith("robokin_ros.node") for name in result["core"])


def test_documented_module_paths_reach_the_modules_that_run():
    """The paths the README documents keep working after the subpackage layout, , reading the
    switches through them follows the runtime that runs, and assigning them raises naming the
    replacement."""
    import robokin_ros
    import robokin_ros.accel
    import robokin_ros.dynamics
    import robokin_ros.kinematics
    import robokin_ros.srdf
    from robokin_ros.kernels import accel, disk_cache, selection
    from robokin_ros.model import srdf

    assert robokin_ros.srdf is srdf and robokin_ros.srdf.parse_srdf is srdf.parse_srdf
    assert robokin_ros.accel.prepare is robokin_ros.prepare and robokin_ros.dynamics.prepare is not None
    assert robokin_ros.accel.MIN_BATCH == accel.MIN_BATCH and robokin_ros.accel.cache_dir is disk_cache.cache_dir
    assert robokin_ros.accel.active is accel.active
    before = selection.selected()
    with pytest.raises(AttributeError, match=r"robokin_ros\.accel\.enabled .*kernels\.use\(accelerated="):
        robokin_ros.accel.enabled = not before.accelerated
    with pytest.raises(AttributeError, match=r"use_generated_kernels .*kernels\.use\('generic'\)"):
        robokin_ros.kinematics.use_generated_kernels = False
    assert selection.selected() == before
    with selection.use("generic", accelerated=not before.accelerated):   # reads follow the runtime that runs
        assert robokin_ros.accel.enabled is accel.enabled is (not before.accelerated)
        assert robokin_ros.kinematics.use_generated_kernels is False
    assert robokin_ros.kinematics.use_generated_kernels is True
    from robokin_ros.node import launch_arguments  # noqa: F401  (plain Python: no rclpy needed)
