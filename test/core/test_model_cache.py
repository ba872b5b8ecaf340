"""The registry of per-model state (robokin_ros.model_cache): one eviction rule, bounded under
request-keyed churn, freed with the model."""

from __future__ import annotations

import gc
import itertools
import tracemalloc
import weakref

import numpy as np
import pytest
from reference import random_tree

import robokin_ros as rk
from robokin_ros import model_cache
from robokin_ros.model import JointType


def tree(n_links: int = 24, seed: int = 5) -> rk.RobotModel:
    return random_tree(np.random.default_rng(seed), n_links, types=[JointType.REVOLUTE], mimic=False)


def test_entries_are_built_once_and_the_least_recently_used_is_dropped_beyond_the_bound(monkeypatch):
    monkeypatch.setattr(model_cache, "MAX_ENTRIES", 3)
    model = tree(3)
    built = []

    def build(k):
        return lambda: built.append(k) or f"value {k}"

    for k in (1, 2, 3):
        assert model_cache.cached(model, "test kind", k, build(k)) == f"value {k}"
    assert model_cache.cached(model, "test kind", 1, build(1)) == "value 1"   # a hit: no build, now the newest
    assert built == [1, 2, 3]
    model_cache.cached(model, "test kind", 4, build(4))                        # evicts 2, the least recently used
    assert model_cache.sizes(model)["test kind"] == 3
    assert model_cache.peek(model, "test kind", 2) is None
    assert model_cache.peek(model, "test kind", 1) == "value 1"
    model_cache.cached(model, "test kind", 2, build(2))
    assert built == [1, 2, 3, 4, 2]


def test_a_failed_build_stores_nothing():
    model = tree(3)

    def fail():
        raise KeyError("no such link")

    with pytest.raises(KeyError):
        model_cache.cached(model, "test kind", "bad", fail)
    assert model_cache.peek(model, "test kind", "bad", "absent") == "absent"


def test_state_goes_with_its_model():
    model = tree(6)
    rk.forward_kinematics(model, model.home_configuration())
    rk.solve_ik(model, np.eye(4), "l5", max_iterations=2)
    assert model_cache.sizes(model)["fk plan"] == 1
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None, "a cache entry holds its model alive"


@pytest.mark.slow
def test_ten_thousand_distinct_ik_requests_keep_per_model_state_bounded():
    """/compute_ik-shaped calls (one target set, changing tip sets and allowed joints) leave at
    most MAX_ENTRIES entries of each kind, and memory after 10,000 distinct requests is what it
    was after 2,000. The tip sets span the whole tree (every leaf, plus one or two inner links),
    so the problems are solved on the whole robot, where generated kernels are keyed by tips."""
    model = tree()
    leaves = list(model.leaf_links)
    inner = [n for n in model.link_names[1:] if n not in leaves]
    tip_sets = [tuple(leaves) + extra for k in (1, 2, 3) for extra in itertools.combinations(inner, k)][:100]
    joint_sets = [tuple(name for k, name in enumerate(model.joint_names) if mask >> k & 1)
                  for mask in range(1, 101)]
    assert len(tip_sets) == 100 and len(set(joint_sets)) == 100
    home = model.home_configuration()
    poses = rk.forward_kinematics(model, home)
    distinct = set()
    tracemalloc.start()
    try:
        for count, (tips, joints) in enumerate(itertools.product(tip_sets, joint_sets), 1):
            targets = poses[[model.link_index(t) for t in tips]]
            result = rk.solve_ik(model, targets, list(tips), seed=home, active_joints=joints, max_iterations=1)
            assert result.success, (tips, joints)          # the seed solves it: every call a real solve
            distinct.add((tips, joints))
            if count == 2000:
                gc.collect()
                after_2k = tracemalloc.get_traced_memory()[0]
        gc.collect()
        after_10k = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(distinct) == 10_000
    sizes = model_cache.sizes(model)
    for kind in ("ik requests", "ik problems", "ik solvers", "fk kernels"):
        assert 0 < sizes[kind] <= model_cache.MAX_ENTRIES, sizes
    assert after_10k - after_2k < 4 << 20, f"memory grew by {(after_10k - after_2k) / 2**20:.1f} MiB"


def test_problems_on_part_of_the_robot_keep_a_bounded_number_of_chain_models():
    """Two-tip requests on part of a tree are solved on a chain model of their own: at most
    MAX_ENTRIES of them are kept, and an evicted one takes its own kernels with it."""
    model = tree()
    pairs = list(itertools.combinations(model.link_names[1:], 2))[:150]
    home = model.home_configuration()
    poses = rk.forward_kinematics(model, home)
    chains = []
    for tips in pairs:
        rk.solve_ik(model, poses[[model.link_index(t) for t in tips]], list(tips), seed=home, max_iterations=1)
        chain = model_cache.peek(model, "ik chains", (tips, None))
        if chain is not None:
            chains.append(weakref.ref(chain.chain))
    assert len(chains) > model_cache.MAX_ENTRIES
    assert model_cache.sizes(model)["ik chains"] <= model_cache.MAX_ENTRIES
    gc.collect()
    assert sum(ref() is None for ref in chains) >= len(chains) - model_cache.MAX_ENTRIES
