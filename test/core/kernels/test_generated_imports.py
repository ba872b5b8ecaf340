"""Generated numba modules reuse shared compiled code by import, never by copying its text: every
``from X import Y`` of a generated batch kernel and of a generated IK loop names a compiled
function that exists (a rename fails here, not in a compiling process)."""

from __future__ import annotations

import importlib
import os
import re

import pytest

from robokin_ros.kernels import numba_source
from robokin_ros.model import RobotModel

pytest.importorskip("numba", reason="the generated modules are numba's")

ROBOTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
                      "robokin_ros", "robots")
_IMPORT = re.compile(r"^from (robokin_ros[\w.]*) import (.+)$", re.MULTILINE)


def imported(source: str) -> list:
    """The objects a generated module's ``from robokin_ros... import`` lines bring in."""
    found = []
    for module, names in _IMPORT.findall(source):
        for name in names.split(","):
            found.append(getattr(importlib.import_module(module), name.split(" as ")[0].strip()))
    return found


def test_a_batch_kernel_imports_fetch_add_from_claims():
    source = numba_source.wrapper_source(["    r0 = cos(q[0])"], ["r0", 1.0], 1)
    from robokin_ros.kernels.claims import fetch_add
    assert imported(source) == [fetch_add]


def test_a_generated_ik_loop_imports_the_generic_loops_compiled_functions():
    from robokin_ros.ik import IKOptions, compiled_loop, generic_loop
    from robokin_ros.ik.call import ik_call

    model = RobotModel.from_urdf_file(os.path.join(ROBOTS, "ur5e.urdf"))
    source = compiled_loop.loop_source(ik_call(model, ("tool0",), IKOptions()).solver)
    assert imported(source) == [generic_loop.log_so3, generic_loop.loop, generic_loop.loop_rows,
                                generic_loop.start_rows, generic_loop.finish_rows]
    assert "def log_so3(" not in source and "def loop(" not in source   # no copy of their text
