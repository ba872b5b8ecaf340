"""Batches through the compiled batched check (issue 32, "many states per call"): once the compiled
check of a collision model is loaded, a batch of configurations, with contacts and distances too,
is decided by it (:data:`~robokin_ros.collision.single.BATCH_CHUNK` configurations per call, over the threads)
instead of numpy's bounding volumes and coal, with the same verdicts, contacts and distances; and
calls asking for contacts (what /check_state_validity asks) count towards loading it.

Before: a batch with ``contacts=True`` or ``distance=True`` always took the numpy path, and
/check_state_validity's calls never started loading the compiled check, so a node's first large
/check_state_validity_multiple request ran on numpy while it loaded.
"""

from pathlib import Path

import numpy as np
import pytest

from robokin_ros import CollisionModel, RobotModel, self_collisions
from robokin_ros.collision import pair_collisions
from robokin_ros.collision.single import BATCH_CHUNK, SingleCheck
from robokin_ros.kernels import accel as rk_accel
from robokin_ros.kernels.selection import use

coal = pytest.importorskip("coal")

ROBOTS = Path(__file__).resolve().parents[3] / "robokin_ros" / "robots"
PANDA_XML = (ROBOTS / "panda.urdf").read_text()
PANDA_SRDF = (ROBOTS / "panda.srdf").read_text()


def fresh_panda() -> tuple[RobotModel, CollisionModel]:
    """A Panda model of its own and its collision model (the compiled check not loaded yet; the
    collision model holds the model weakly)."""
    model = RobotModel.from_urdf(PANDA_XML)
    return model, CollisionModel.build(model, srdf=PANDA_SRDF)


def requires_numba():
    if not rk_accel.active():
        pytest.skip("numba is not installed or the accelerator is off: no compiled batched path")


def test_a_loaded_check_decides_batches_with_contacts_and_distances_as_numpy_does(monkeypatch):
    requires_numba()
    model, cm = fresh_panda()
    assert cm.prepare()
    q = model.random_configuration(BATCH_CHUNK + 300, rng=5)   # two compiled calls
    near = q[:300]
    with use(accelerated=False):   # the numpy path: bounding volumes, then coal
        assert cm.single_check is None
        reference = self_collisions(cm, q)
        reference_near = self_collisions(cm, near, distance=True, contacts=True)

    def numpy_path(*args, **kwargs):
        raise AssertionError("the numpy path ran although the compiled check is loaded")
    monkeypatch.setattr(CollisionModel, "colliding", numpy_path)
    found = self_collisions(cm, q)
    assert found.in_collision.tolist() == reference.in_collision.tolist()
    assert found.pairs == reference.pairs
    assert 0 < found.in_collision.sum() < len(q)   # both verdicts exercised
    states = pair_collisions(cm, q)
    assert states.shape == (len(q), len(cm.pairs))
    assert [list(dict.fromkeys(cm.pair_names[k] for k in np.flatnonzero(row))) for row in states] == found.pairs

    found = self_collisions(cm, near, distance=True, contacts=True)
    assert found.pairs == reference_near.pairs
    np.testing.assert_allclose(found.min_distance, reference_near.min_distance, rtol=0, atol=1e-9)
    assert [[(k.link_a, k.link_b) for k in c] for c in found.contacts] == \
        [[(k.link_a, k.link_b) for k in c] for c in reference_near.contacts]
    for ours, theirs in zip(sum(found.contacts, []), sum(reference_near.contacts, [])):
        np.testing.assert_allclose(ours.position, theirs.position, rtol=0, atol=1e-6)
        np.testing.assert_allclose(ours.normal, theirs.normal, rtol=0, atol=1e-6)
        assert ours.depth == pytest.approx(theirs.depth, abs=1e-9)


def test_calls_with_contacts_count_towards_loading_the_compiled_check(monkeypatch):
    """/check_state_validity asks for contacts, one configuration per call: after
    ``MIN_BATCH`` of them the compiled check starts loading."""
    requires_numba()
    started = []
    monkeypatch.setattr(SingleCheck, "_start_loading", lambda self, runtime=None: started.append(self))   # (record only)
    model, cm = fresh_panda()
    q = model.random_configuration(rk_accel.MIN_BATCH, rng=6)
    for k in range(len(q) - 1):
        self_collisions(cm, q[k], contacts=True)
    assert not started
    self_collisions(cm, q[-1], contacts=True)
    assert started and started[0] is cm.single_check
