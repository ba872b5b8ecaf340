"""The kernel switches: :func:`robokin_ros.kernels.use` sets them for a block and restores them,
:func:`robokin_ros.kernels.selected` reads them, and every combination computes the generic
kernels' numbers (the oracle)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from robokin_ros import ArgumentError, RobotModel, forward_kinematics
from robokin_ros.kernels import Selection, accel, selected, use
from robokin_ros.kinematics import forward_kinematics_generic

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")


def test_use_sets_the_kind_for_the_block_and_restores_it():
    before = selected()
    with use("generic") as inside:
        assert inside == selected() == Selection("generic", before.accelerated)
        assert selected().kind == "generic"
        with use("generated"):
            assert selected().kind == "generated"
        assert selected().kind == "generic"
    assert selected() == before


def test_use_sets_the_accelerator_for_the_block_and_restores_it():
    before = accel.active() and selected().accelerated
    with use(accelerated=not before) as inside:
        assert inside.accelerated is (not before) and accel.enabled is (not before)
        with use("generic", accelerated=before):
            assert selected() == Selection("generic", before)
        assert selected() == Selection("generated", not before)
    assert accel.enabled is before


def test_a_block_changes_this_thread_only():
    import threading

    seen = []
    with use("generic", accelerated=False):
        thread = threading.Thread(target=lambda: seen.append(selected()))
        thread.start()
        thread.join()
        assert selected() == Selection("generic", False)
    assert seen == [Selection("generated", selected().accelerated)]


def test_an_exception_in_the_block_restores_the_setting():
    before = selected()
    with pytest.raises(RuntimeError, match="inside"), use("generic", accelerated=False):
        raise RuntimeError("inside")
    assert selected() == before


@pytest.mark.parametrize("kind, accelerated", [("fast", None), ("generic", 1), (None, "no")])
def test_bad_arguments_name_the_culprit(kind, accelerated):
    before = selected()
    with pytest.raises(ArgumentError, match="kind" if accelerated is None else "accelerated"), \
            use(kind, accelerated=accelerated):
        pass
    assert selected() == before


@pytest.mark.parametrize("kind", ["generated", "generic"])
@pytest.mark.parametrize("accelerated", [True, False])
def test_every_setting_computes_the_generic_kernels_numbers(kind, accelerated):
    model = RobotModel.from_urdf_file(os.path.join(FIXTURES, "prismatic_continuous_mimic.urdf"))
    q = model.random_configuration(7, rng=4)   # below MIN_BATCH: nothing starts compiling
    with use(kind, accelerated=accelerated):
        got = forward_kinematics(model, q)
        single = forward_kinematics(model, q[2])
    np.testing.assert_allclose(got, forward_kinematics_generic(model, q), atol=1e-12, rtol=0)
    np.testing.assert_allclose(single, got[2], atol=1e-12, rtol=0)


def test_the_legacy_assignments_raise_naming_the_replacement():
    import robokin_ros.accel
    import robokin_ros.kernels
    import robokin_ros.kinematics

    before = selected()
    with pytest.raises(AttributeError, match=r"kernels\.use\('generic'\)"):
        robokin_ros.kinematics.use_generated_kernels = False
    with pytest.raises(AttributeError, match=r"kernels\.use\(accelerated=\.\.\.\)"):
        robokin_ros.accel.enabled = not before.accelerated
    assert selected() == before
    with use("generic", accelerated=not before.accelerated):   # reading them follows the runtime
        assert robokin_ros.kinematics.use_generated_kernels is False
        assert robokin_ros.accel.enabled is (not before.accelerated)
    assert robokin_ros.kernels.use is use and robokin_ros.kernels.selected is selected
