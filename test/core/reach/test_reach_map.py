"""Reachability maps: an analytic map (the planar arm), the UR5e's indices against direct
``solve_ik`` calls and forward kinematics, engines and worker counts giving identical maps, the
``.npz`` round trip, and the parameters' checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, forward_kinematics, jacobian, solve_ik
from robokin_ros.errors import ArgumentError, UnknownLinkError
from robokin_ros.reach import ReachParameters, load_reach_map, reachability_map
from robokin_ros.reach.chunk_files import ChunkFolder
from robokin_ros.reach.chunks import ChunkResult, PreparedMap, ReachJob

ROOT = Path(__file__).resolve().parents[3]
UR5E = (ROOT / "robokin_ros" / "robots" / "ur5e.urdf").read_text()
PLANAR = (ROOT / "test" / "fixtures" / "planar_2link.urdf").read_text()
#: A small UR5e map (about 150 voxels x 10 orientations) and its chunking.
SMALL = dict(resolution=0.35, orientations=10, chunk_poses=300)


def assert_within_tolerances(pose, target, position=1e-4, rotation=1e-3):
    """Poses ``(n, 4, 4)`` within the map's default tolerances of their targets."""
    assert np.linalg.norm(pose[:, :3, 3] - target[:, :3, 3], axis=1).max(initial=0) <= position * (1 + 1e-9)
    cos = (np.einsum("nij,nij->n", pose[:, :3, :3], target[:, :3, :3]) - 1) / 2
    assert np.arccos(np.clip(cos, -1, 1)).max(initial=0) <= rotation * (1 + 1e-6)


@pytest.fixture(scope="module")
def ur5e_map():
    return reachability_map(UR5E, "tool0", workers=1, manipulability=True, **SMALL)


def test_planar_arm_map_is_the_annulus_in_its_plane():
    # Tool z along the base z, rotation about it free: reached exactly at z = 0, 0.5 <= r <= 1.5
    # (no voxel centre lies within 0.02 m of either circle at this resolution).
    reach = reachability_map(PLANAR, "tool", workers=1, resolution=0.2, orientations=2, cone=(0, 0, 1, 0.0))
    r = np.linalg.norm(reach.centres[:, :2], axis=1)
    expected = (np.abs(reach.centres[:, 2]) < 1e-9) & (r >= 0.5) & (r <= 1.5)
    assert expected.sum() > 100
    assert np.array_equal(reach.reachability, expected.astype(float))


@pytest.mark.slow   # computes a reach map
def test_indices_match_direct_solves_on_sampled_voxels(ur5e_map):
    model = RobotModel.from_urdf(UR5E)
    rng = np.random.default_rng(5)
    index = ur5e_map.reachability
    partial, full, none = (np.flatnonzero((index > 0) & (index < 1)), np.flatnonzero(index == 1),
                           np.flatnonzero(index == 0))
    assert len(partial) and len(full) and len(none)
    sample = np.concatenate([rng.choice(group, min(4, len(group)), replace=False) for group in (partial, full, none)])
    for v in sample:
        # The targets rebuilt from the file's own description of the voxel and the orientations.
        T = np.tile(np.eye(4), (len(ur5e_map.orientations), 1, 1))
        T[:, :3, :3] = ur5e_map.orientations
        T[:, :3, 3] = ur5e_map.grid_origin + ur5e_map.resolution * ur5e_map.voxels[v]
        direct = solve_ik(model, T, "tool0", model.random_configuration(len(T), rng=rng), restarts=4,
                          position_tolerance=1e-4, rotation_tolerance=1e-3, rng=int(v))
        pose = forward_kinematics(model, direct.q[direct.success])[:, model.link_index("tool0")]
        assert_within_tolerances(pose, T[direct.success])
        # A stronger solver (4 restarts, 500 iterations) finds at most one more orientation, never fewer.
        assert np.array_equal(direct.success | ur5e_map.solved[v], direct.success)
        assert direct.success.sum() - ur5e_map.solved[v].sum() <= 1


def test_every_pose_the_map_counts_is_reached_by_forward_kinematics(ur5e_map):
    prepared = PreparedMap(ReachJob(UR5E, ur5e_map.parameters))
    model = prepared.solve_model
    for chunk in (0, prepared.n_chunks // 2, prepared.n_chunks - 1):
        T, result = prepared.solve(chunk)
        rows = prepared.chunk_voxels(chunk)
        assert np.array_equal(result.success, ur5e_map.solved[rows])
        pose = forward_kinematics(model, result.q[result.success])[:, model.link_index("tool0")]
        assert_within_tolerances(pose, T[result.success])
        # Manipulability: the mean of sqrt(det(J Jᵀ)) over the voxel's solutions.
        J = jacobian(model, result.q, "tool0")
        w = np.sqrt(np.abs(np.linalg.det(J @ np.swapaxes(J, -1, -2))))
        count = result.success.sum(axis=1)
        expected = np.where(count > 0, (w * result.success).sum(axis=1) / np.maximum(count, 1), np.nan)
        assert np.allclose(ur5e_map.manipulability[rows], expected, equal_nan=True, rtol=1e-9, atol=1e-12)


def test_voxels_beyond_the_reach_are_unreachable_for_a_direct_solve(ur5e_map):
    model = RobotModel.from_urdf(UR5E)
    direction = uniform_directions(20)
    T = np.tile(np.eye(4), (20, 1, 1))
    T[:, :3, 3] = ur5e_map.reach_centre + (ur5e_map.reach_radius + 0.02) * direction
    result = solve_ik(model, T, "tool0", model.random_configuration(20, rng=1), restarts=4,
                      axis_tolerances=[1e-4] * 3 + [np.inf] * 3)   # position only
    assert not result.success.any()


def uniform_directions(n: int) -> np.ndarray:
    v = np.random.default_rng(0).normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_index_is_the_fraction_of_orientations_reached(ur5e_map):
    assert np.array_equal(ur5e_map.reachability, ur5e_map.solved.mean(axis=1))
    assert ur5e_map.solved.shape == (len(ur5e_map.voxels), 10)
    reached = ur5e_map.reachability > 0
    assert np.isnan(ur5e_map.manipulability[~reached]).all() and (ur5e_map.manipulability[reached] > 0).all()


@pytest.mark.slow   # spawns two interpreters that import numpy, scipy and numba
def test_two_processes_give_the_identical_map(ur5e_map):
    again = reachability_map(UR5E, "tool0", workers=2, manipulability=True, **SMALL)
    assert again.run.chunks_computed > 2
    assert again.equals(ur5e_map)


def test_map_saves_and_loads_back(ur5e_map, tmp_path):
    path = tmp_path / "map.npz"
    ur5e_map.save(str(path))
    loaded = load_reach_map(str(path))
    assert loaded.equals(ur5e_map) and loaded.parameters == ur5e_map.parameters
    import hashlib
    assert loaded.robot_sha256 == hashlib.sha256(UR5E.encode()).hexdigest()
    with np.load(path) as data:
        assert np.allclose(data["centres"], ur5e_map.centres)
        assert np.array_equal(np.unpackbits(data["solved"], axis=1, count=10).astype(bool), ur5e_map.solved)
    dense = loaded.dense()
    assert dense.shape == loaded.grid_shape and dense.sum() == pytest.approx(loaded.reachability.sum())
    with np.load(path) as data:
        entries = dict(data)
    entries["parameters"] = np.array('{"tip": "tool0", "speed": 3}')
    np.savez(tmp_path / "bad.npz", **entries)
    with pytest.raises(ArgumentError, match="bad.npz is not a readable reach map"):
        load_reach_map(str(tmp_path / "bad.npz"))
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ArgumentError, match="other.npz is not a 'robokin reach map 1' file"):
        load_reach_map(str(tmp_path / "other.npz"))


def test_chunk_files_are_resumed_and_removed(tmp_path):
    options = dict(resolution=0.5, orientations=6, chunk_poses=60)
    job = ReachJob(UR5E, ReachParameters("tool0", **options))
    first = reachability_map(UR5E, "tool0", workers=1, chunk_dir=str(tmp_path), **options)
    assert first.run.chunks_reused == 0 and not (tmp_path / job.key).exists()
    # Chunk files left by an interrupted run: read back, not solved again (a corrupt one is solved).
    directory = tmp_path / job.key
    folder = ChunkFolder.open(str(tmp_path), job.key)
    prepared = PreparedMap(job)
    for index in (0, 2):
        rows = prepared.chunk_voxels(index)
        folder.write(index, ChunkResult(first.solved[rows], first.manipulability[rows]))
    (directory / "chunk-0000003.npz").write_bytes(b"not a chunk")
    with pytest.warns(RuntimeWarning, match="1 chunk file.* not trusted, solved again: chunk-0000003.npz: not an .npz"):
        resumed = reachability_map(UR5E, "tool0", workers=1, chunk_dir=str(tmp_path), **options)
    assert resumed.run.chunks_reused == 2 and resumed.run.chunks_computed == prepared.n_chunks - 2
    assert resumed.equals(first)
    # Chunks written by a run with other parameters were never read: another key.
    assert ReachParameters("tool0", seed=1, **options).key(job.robot_sha256) != job.key


@pytest.mark.parametrize("options, message", [
    (dict(resolution=0), "resolution: must be a number of metres > 0, got 0"),
    (dict(resolution=float("nan")), "resolution: must be a number of metres > 0"),
    (dict(orientations=0), r"orientations: must be a whole number in \[1, 10000\], got 0"),
    (dict(orientations=2.5), "orientations: must be a whole number"),
    (dict(iterations=0), "iterations: must be a whole number"),
    (dict(seed=-1), "seed: must be a whole number >= 0"),
    (dict(cone=(0, 0, 0, 0.1)), "cone: the axis must not be zero"),
    (dict(cone=(0, 0, 1, 4.0)), r"cone: half_angle must be in \[0, pi\] rad, got 4.0"),
    (dict(cone=(0, 0, 1)), "cone: must be four numbers"),
    (dict(position_tolerance=0), r"position_tolerance: must be a number in \(0, 1\]"),
    (dict(collisions="yes"), "collisions: must be True or False"),
    (dict(resolution=0.001), "resolution: 0.001 m makes about"),
    (dict(speed=3), "speed: is not a reachability map option"),
    (dict(workers=0), "workers: must be a whole number >= 1, got 0"),
])
def test_bad_parameters_raise_naming_the_parameter(options, message):
    with pytest.raises(ArgumentError, match=message):
        reachability_map(UR5E, "tool0", **options)


def test_unknown_tip_is_an_unknown_link():
    with pytest.raises(UnknownLinkError, match="tool9"):
        reachability_map(UR5E, "tool9", resolution=0.5, orientations=1)


def test_with_collisions_every_counted_pose_is_collision_free():
    pytest.importorskip("coal", reason="coal (PyPI) is not installed")
    from robokin_ros.collision import collision_model, in_collision
    panda = (ROOT / "robokin_ros" / "robots" / "panda.urdf").read_text()
    prepared = PreparedMap(ReachJob(panda, ReachParameters("panda_hand_tcp", resolution=0.5, orientations=6,
                                                           collisions=True, chunk_poses=120)))
    checker = collision_model(prepared.solve_model)
    counted = 0
    for chunk in range(prepared.n_chunks):
        T, result = prepared.solve(chunk)
        assert not in_collision(checker, result.q[result.success]).any()
        pose = forward_kinematics(prepared.solve_model, result.q[result.success])
        assert_within_tolerances(pose[:, prepared.solve_model.link_index("panda_hand_tcp")], T[result.success])
        counted += result.success.sum()
    assert counted > 20


def test_a_model_travels_as_its_urdf_text():
    import hashlib
    model = RobotModel.from_urdf(PLANAR)
    options = dict(resolution=0.5, orientations=2, cone=(0, 0, 1, 0.0), workers=1)
    from_model = reachability_map(model, "tool", **options)
    assert from_model.robot_sha256 == hashlib.sha256(model.to_urdf().encode()).hexdigest()
    assert from_model.equals(reachability_map(model.to_urdf(), "tool", **options))
    assert from_model.reachability.sum() > 0


def test_progress_tells_the_resumed_poses_first_and_apart(tmp_path):
    """Issue 41: a resumed run's progress counted its resumed chunks as computed (the bar's rate
    overstated). Now the first call gives the resumed poses, before any chunk is computed."""
    options = dict(resolution=0.5, orientations=6, chunk_poses=60)
    job = ReachJob(UR5E, ReachParameters("tool0", **options))
    fresh_calls = []
    first = reachability_map(UR5E, "tool0", workers=1, progress=lambda *a: fresh_calls.append(a), **options)
    total = first.solved.size
    assert fresh_calls[0] == (0, total) and fresh_calls[-1] == (total, total)
    folder = ChunkFolder.open(str(tmp_path), job.key)
    prepared = PreparedMap(job)
    kept = 0
    for index in (0, 2):
        rows = prepared.chunk_voxels(index)
        folder.write(index, ChunkResult(first.solved[rows], first.manipulability[rows]))
        kept += first.solved[rows].size
    calls = []
    resumed = reachability_map(UR5E, "tool0", workers=1, chunk_dir=str(tmp_path), progress=lambda *a: calls.append(a),
                               **options)
    assert calls[0] == (kept, total) and calls[-1] == (total, total)
    assert len(calls) == 1 + resumed.run.chunks_computed   # then one call per chunk computed


def test_the_progress_bars_rate_counts_only_the_poses_computed(monkeypatch):
    tqdm = pytest.importorskip("tqdm")
    import time

    from robokin_ros.reach.reach_map import progress_bar

    bars = []

    class Recorded(tqdm.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "disable": False})
            bars.append(self)

    monkeypatch.setattr(tqdm, "tqdm", Recorded)
    update, close = progress_bar("test")
    update(100_000, 200_000)   # resumed
    for done in (100_100, 100_200):
        time.sleep(0.2)   # (a lower bound of each step's time: the rate can only come out lower)
        update(done, 200_000)
    meter = bars[0].format_dict
    close()
    assert meter["initial"] == 100_000 and meter["n"] == 100_200
    assert meter["rate"] <= 100 / 0.2 * 1.01, meter   # 100 poses a step (was 100,000 in no time)


def test_a_maps_repr_is_one_short_line():
    reach = reachability_map(PLANAR, "tool", workers=1, resolution=0.5, orientations=2)
    text = repr(reach)
    assert "\n" not in text and len(text) < 300, text
    assert text.startswith(f"ReachMap(tip='tool', base=None, {len(reach.voxels)} voxels of 0.5 m in a ")
    assert "mean reachability" in text and "array(" not in text
