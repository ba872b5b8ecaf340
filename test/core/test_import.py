"""The core never imports rclpy (or any ROS message package): checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
    expected = {"robokin_ros.errors", "robokin_ros.model", "robokin_ros.urdf", "robokin_ros.spatial",
                "robokin_ros.kinematics", "robokin_ros.jacobians"}
    assert expected <= set(result["core"])
    assert not any(name.startswith("robokin_ros.node") for name in result["core"])
