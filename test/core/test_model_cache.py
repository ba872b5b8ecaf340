"""The registry of per-model state (robokin_ros.model_cache): one eviction rule, bounded under
request-keyed churn, freed with the model."""

from __future__ import annotations

import ctypes
import gc
import itertools
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
from reference import random_tree

import robokin_ros as rk
from robokin_ros import model_cache
from robokin_ros.model import JointType, ModelFields

HERE = Path(__file__).resolve().parent


def resident_bytes() -> int:
    """Resident set size of this process [bytes] after a garbage collection and, with glibc,
    ``malloc_trim`` (free heap returned to the system: RSS then follows what is live, not what
    the allocator keeps for later); 0 where /proc is absent."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


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


def test_a_heavy_kind_keeps_its_own_smaller_bound():
    model = tree(3)
    for k in range(5):
        model_cache.cached(model, "heavy kind", k, lambda k=k: k, bound=2)
        model_cache.cached(model, "light kind", k, lambda k=k: k)
    assert model_cache.sizes(model) == {"heavy kind": 2, "light kind": 5}
    assert [model_cache.peek(model, "heavy kind", k) for k in range(5)] == [None, None, None, 3, 4]


def test_collision_models_are_bounded_per_robot():
    from robokin_ros.collision.checker import COLLISION_MODELS, MAX_COLLISION_MODELS
    model = rk.RobotModel.from_urdf_file(Path(rk.__file__).parent / "robots" / "panda.urdf")
    models = [rk.collision_model(model, samples=10, rng=k) for k in range(MAX_COLLISION_MODELS + 3)]
    assert len({id(m) for m in models}) == MAX_COLLISION_MODELS + 3   # each its own entry
    assert model_cache.sizes(model)[COLLISION_MODELS] == MAX_COLLISION_MODELS
    assert rk.collision_model(model, samples=10, rng=MAX_COLLISION_MODELS + 2) is models[-1]   # kept: a hit


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


def two_arms() -> rk.RobotModel:
    """A Y-shaped tree: two 5-link chains of revolute joints on one root (leaves l5 and l10)."""
    rng = np.random.default_rng(7)
    parents = [0, 1, 2, 3, 4, 0, 6, 7, 8, 9]
    origins = np.tile(np.eye(4), (10, 1, 1))
    origins[:, :3, 3] = rng.uniform(-0.3, 0.3, (10, 3))
    axes = rng.normal(size=(10, 3))
    return rk.RobotModel.create(ModelFields(name="two_arms", link_names=[f"l{i}" for i in range(11)],
                                joint_names=[f"j{j}" for j in range(10)], joint_parents=parents,
                                joint_types=[JointType.REVOLUTE] * 10, joint_axes=axes / np.linalg.norm(axes, axis=1)[:, None],
                                joint_origins=origins, joint_lower=[-3.0] * 10, joint_upper=[3.0] * 10))


def drive_ten_thousand_requests() -> dict:
    """10,024 distinct /compute_ik-shaped calls on :func:`two_arms`; what the registry holds after
    them, and live objects and resident memory after the first 2,148 and after all. Run in a
    fresh interpreter by the test below: its memory figures are then its own, and its
    ``malloc_trim`` calls do not move the resident-memory baselines of later tests."""
    model = two_arms()
    inner = ["l1", "l2", "l3", "l4", "l6", "l7", "l8", "l9"]
    tip_sets = [("l5", "l10") + pair for pair in itertools.combinations(inner, 2)]          # 28, all of one size
    joint_sets = [tuple(name for k, name in enumerate(model.joint_names) if mask >> k & 1) for mask in range(1, 359)]
    home = model.home_configuration()
    poses = rk.forward_kinematics(model, home)
    distinct = set()
    for count, (tips, joints) in enumerate(itertools.product(tip_sets, joint_sets), 1):
        targets = poses[[model.link_index(t) for t in tips]]
        result = rk.solve_ik(model, targets, list(tips), seed=home, active_joints=joints, max_iterations=1)
        assert result.success, (tips, joints)          # the seed solves it: every call a real solve
        distinct.add((tips, joints))
        if count == 6 * len(joint_sets):   # six tip sets in: every kind is full
            rss_2k, objects_2k = resident_bytes(), len(gc.get_objects())
    rss_10k, objects_10k = resident_bytes(), len(gc.get_objects())
    return {"tip_sets": len(set(tip_sets)), "joint_sets": len(set(joint_sets)), "distinct": len(distinct),
            "sizes": model_cache.sizes(model),
            "chain_of_first": model_cache.peek(model, "ik chains", (tip_sets[0], None)) is not None,
            "objects_2k": objects_2k, "objects_10k": objects_10k, "rss_2k": rss_2k, "rss_10k": rss_10k}


@pytest.mark.slow
def test_ten_thousand_distinct_ik_requests_keep_per_model_state_bounded():
    """/compute_ik-shaped calls (one target set, changing tip sets and allowed joints) leave at
    most MAX_ENTRIES entries of each kind, and memory after 10,024 distinct requests is what it
    was after the first 2,148. The tip sets span the whole tree (both leaves, plus two inner
    links), so the problems are solved on the whole robot, where generated kernels and solvers
    are keyed by tips and joints; they are all of one size, so memory measured after each block
    of the same requests compares like with like."""
    code = "import json, test_model_cache as t; print(json.dumps(t.drive_ten_thousand_requests()))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=HERE.parents[1],
                         timeout=900)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["tip_sets"] * out["joint_sets"] == out["distinct"] == 10_024
    sizes = out["sizes"]
    assert not out["chain_of_first"]
    for kind in ("ik calls", "fk kernels"):
        assert 0 < sizes[kind] <= model_cache.MAX_ENTRIES, sizes
    # (tracemalloc would make the 10,000 solves 18x slower: objects and resident memory instead)
    assert out["objects_10k"] - out["objects_2k"] < 2000, f"{out['objects_10k'] - out['objects_2k']} more live objects"
    growth = out["rss_10k"] - out["rss_2k"]
    assert growth < 16 << 20, f"resident memory grew by {growth / 2**20:.1f} MiB"


@pytest.mark.slow
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
