"""Fixtures shared by the core tests: every bundled robot and valid fixture, and both kernels."""

from pathlib import Path

import pytest

from robokin_ros import RobotModel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROBOTS = Path(__file__).resolve().parents[2] / "robokin_ros" / "robots"
#: Bundled robots and every valid fixture (the single-link one has nothing to move).
MODEL_FILES = sorted(ROBOTS.glob("*.urdf")) + [p for p in sorted(FIXTURES.glob("*.urdf"))
                                               if not p.name.startswith("bad_") and p.stem != "good_minimal"]


@pytest.fixture(scope="module", params=MODEL_FILES, ids=[p.stem for p in MODEL_FILES])
def model(request):
    return RobotModel.from_urdf_file(request.param)


@pytest.fixture(params=["generated", "generic"])
def kernel(run_with, request, monkeypatch):
    """Run a test with the per-robot generated kernels and again with the generic kernel."""
    run_with(kind="generated" if request.param == "generated" else "generic")
    return request.param
