"""Pair sampling on robots with thousands of link pairs: memory bounded by the chunk size, the
grouping of geometry pairs into link pairs linear in the pairs, the verdicts those of a direct
count (issue 33 item 12: 200 collision spheres took 76 s and 1.77 GB)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from robokin_ros import RobotModel
from robokin_ros.collision import collision_model, pairs
from robokin_ros.collision.checker import CollisionModel

pytest.importorskip("coal")


def _sphere_chain(n: int, two_per_link: bool = False) -> RobotModel:
    """A chain of ``n`` links 5 cm apart, each with a 4 cm sphere (and a second one beside it)."""
    second = '<collision><origin xyz="0.03 0 0"/><geometry><sphere radius="0.02"/></geometry></collision>'
    parts = ['<robot name="spheres">', '<link name="l0"/>']
    for i in range(1, n):
        parts.append(f'<link name="l{i}"><collision><geometry><sphere radius="0.04"/></geometry></collision>'
                     f'{second if two_per_link else ""}</link>')
        parts.append(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                     '<origin xyz="0 0 0.05"/><axis xyz="1 0 0"/><limit lower="-1.2" upper="1.2"/></joint>')
    return RobotModel.from_urdf("\n".join(parts + ["</robot>"]))


def _direct_count(model: RobotModel, cm: CollisionModel, samples: int, rng: int) -> tuple:
    """The sampling's verdicts counted pair by pair from per-configuration checks (no chunks,
    no grouping arrays): the reference."""
    candidates = cm.with_disabled(())
    g, names = candidates.geometry_links, model.link_names
    generator = np.random.default_rng(rng)
    q = np.atleast_2d(model.random_configuration(samples, generator))
    hits = candidates.colliding(candidates.geometry_poses(q), candidates.pairs)
    home = candidates.colliding(candidates.geometry_poses(model.home_configuration()[None]), candidates.pairs)[0]
    by_link: dict = {}
    for k, (a, b) in enumerate(candidates.pairs):
        key = (int(g[a]), int(g[b]))
        old = by_link.get(key, (False, np.zeros(samples, bool)))
        by_link[key] = (old[0] or bool(home[k]), old[1] | hits[:, k])
    out = []
    for (a, b), (default, hit) in sorted(by_link.items()):
        count = int(hit.sum())
        reason = ("Default" if default else "Always" if count >= pairs.ALWAYS_FRACTION * samples
                  else "Never" if count == 0 else None)
        if reason:
            out.append((names[a], names[b], reason))
    return tuple(out)


@pytest.mark.parametrize("two_per_link", [False, True])
def test_chunked_sampling_gives_the_direct_counts_verdicts(monkeypatch, two_per_link):
    model = _sphere_chain(14, two_per_link)
    cm = collision_model(model, samples=1)
    checked = []
    colliding = CollisionModel.colliding

    def spy(self, Tg, pair_list, first=False):
        checked.append(Tg.shape[0] * len(pair_list))
        return colliding(self, Tg, pair_list, first)

    monkeypatch.setattr(pairs, "MAX_PAIR_CHECKS_PER_CHUNK", 2000)
    monkeypatch.setattr(CollisionModel, "colliding", spy)
    found = pairs.sample_disabled_pairs(model, cm, samples=300, rng=3, cache=False)
    assert max(checked) <= 2000 and len(checked) > 3   # chunked by the pair count
    monkeypatch.setattr(CollisionModel, "colliding", colliding)
    assert found == _direct_count(model, cm, 300, 3)
    assert 0 < sum(r == "Never" for *_, r in found) < len(found) + len(cm.with_disabled(()).pairs)   # not vacuous
    assert len(found) < len(cm.with_disabled(()).pairs)   # some pairs collide in some samples only


@pytest.mark.slow
def test_a_robot_with_thousands_of_pairs_samples_in_chunks_of_bounded_size(monkeypatch):
    model = _sphere_chain(120)   # 119 spheres, ~7,000 non-adjacent pairs
    cm = collision_model(model, samples=1)
    sizes = []
    colliding = CollisionModel.colliding
    monkeypatch.setattr(CollisionModel, "colliding",
                        lambda self, Tg, p, first=False: sizes.append((Tg.shape[0], len(p))) or colliding(self, Tg, p, first))
    pairs.sample_disabled_pairs(model, cm, samples=400, rng=0, cache=False)
    n_pairs = max(p for _, p in sizes)
    assert n_pairs > 6000
    assert all(b * p <= pairs.MAX_PAIR_CHECKS_PER_CHUNK for b, p in sizes)
    assert sum(b for b, _ in sizes) == 400 + 1   # every sample once, plus the home configuration
    assert list(itertools.islice((b for b, _ in sizes[1:]), 1)) == [min(400, pairs.MAX_PAIR_CHECKS_PER_CHUNK // n_pairs)]
