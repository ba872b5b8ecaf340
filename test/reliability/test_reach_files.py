"""Issue 33, items 8-10: ``robokin reach``'s files are trusted no more than the kernel cache.

Planted chunks (the old format, a forged plain sha256, another secret's digest) never change
the map; a chunk folder of another user or writable by others is refused with a warning and
never written; links are not followed, a FIFO does not hang, a zip bomb is refused before it is
inflated (chunks, and the maps ``robokin view --reach`` loads); truncated or corrupt chunks are
solved again with a warning; temporaries are never opened by a predictable name (a planted link
at ``chunk-*.npz.<pid>.tmp`` or ``OUT.<pid>.tmp`` writes nothing through it); the total number
of poses is bounded; a lost worker, an unreachable Ray address and Ctrl-C each end in one line
saying what was kept and how to resume.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import multiprocessing
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from robokin_ros.cli import main
from robokin_ros.errors import ArgumentError
from robokin_ros.reach import ReachParameters, load_reach_map, reachability_map
from robokin_ros.reach.chunk_files import CHUNK_FORMAT, ChunkFolder, chunk_secret
from robokin_ros.reach.chunks import ChunkResult, PreparedMap, ReachJob

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_output import without_compile_notices  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PLANAR_FILE = ROOT / "test" / "fixtures" / "planar_2link.urdf"
PLANAR = PLANAR_FILE.read_text()
UR5E = ROOT / "robokin_ros" / "robots" / "ur5e.urdf"
#: A tiny map of the planar arm (about 200 voxels x 2 orientations, chunks of 20 voxels).
OPTIONS = dict(resolution=0.5, orientations=2, cone=(0.0, 0.0, 1.0, 0.0), chunk_poses=40)
ARGS = ["--tip", "tool", "--resolution", "0.5", "--orientations", "2", "--cone", "0", "0", "1", "0",
        "--chunk-poses", "40", "--workers", "1"]
JOB = ReachJob(PLANAR, ReachParameters("tool", **OPTIONS))


@pytest.fixture(scope="module")
def truth():
    return reachability_map(PLANAR, "tool", workers=1, **OPTIONS)


@pytest.fixture(scope="module")
def prepared_job():
    return PreparedMap(JOB)


def key_folder(out: Path) -> Path:
    """``OUT.chunks/<key>`` made as a run would (mode 0700); the key computed from the URDF and
    the parameters, as an attacker would."""
    folder = Path(f"{out}.chunks") / JOB.key
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent, 0o700)
    return folder


def run_cli(out: Path, capsys, *extra) -> tuple[int, str, str]:
    code = main(["reach", str(PLANAR_FILE), *ARGS, "--out", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured.out, without_compile_notices(captured.err)


def mean_line(reach) -> str:
    return f"mean index {reach.reachability.mean():.3f}"


def all_true(prepared_job, index: int) -> tuple[np.ndarray, np.ndarray]:
    rows = prepared_job.chunk_voxels(index)
    n = rows.stop - rows.start
    return np.ones((n, len(prepared_job.rotations)), bool), np.ones(n)


# ------------------------------------------------------------------ item 8: planted chunks
def test_planted_all_true_chunks_do_not_change_the_map(tmp_path, capsys, truth, prepared_job):
    out = tmp_path / "map.npz"
    folder = key_folder(out)
    for index in range(prepared_job.n_chunks):   # the attack of the issue: every chunk all True
        solved, manipulability = all_true(prepared_job, index)
        np.savez(folder / f"chunk-{index:07d}.npz", solved=solved, manipulability=manipulability)
    code, printed, err = run_cli(out, capsys)
    assert code == 0, err
    assert mean_line(truth) in printed and "resumed" not in printed
    assert truth.reachability.mean() < 0.5
    assert load_reach_map(str(out)).equals(truth)
    assert f"{prepared_job.n_chunks} chunk file(s)" in err and "not trusted, solved again" in err


def test_forged_chunks_with_a_plain_or_foreign_digest_are_solved_again(tmp_path, capsys, truth, prepared_job):
    """The format, key and index right, the digest a plain sha256 of the arrays (all an
    attacker without this user's secret can compute) or an HMAC under another secret."""
    out = tmp_path / "map.npz"
    folder = key_folder(out)
    for index in range(prepared_job.n_chunks):
        solved, manipulability = all_true(prepared_job, index)
        if index % 2:
            ChunkFolder(str(folder), JOB.key, b"x" * 32).write(index, ChunkResult(solved, manipulability))
            continue
        digest = hashlib.sha256(solved.tobytes() + manipulability.tobytes()).hexdigest()
        np.savez(folder / f"chunk-{index:07d}.npz", format=np.array(CHUNK_FORMAT), key=np.array(JOB.key),
                 index=np.array(index), solved=solved, manipulability=manipulability, digest=np.array(digest))
    code, printed, err = run_cli(out, capsys)
    assert code == 0 and mean_line(truth) in printed and "resumed" not in printed
    assert "digest does not match" in err
    assert load_reach_map(str(out)).equals(truth)


def test_genuine_chunks_are_resumed(tmp_path, capsys, truth, prepared_job):
    out = tmp_path / "map.npz"
    folder = ChunkFolder.open(f"{out}.chunks", JOB.key)
    for index in (0, 1, 3):
        rows = prepared_job.chunk_voxels(index)
        folder.write(index, ChunkResult(truth.solved[rows], truth.manipulability[rows]))
    code, printed, err = run_cli(out, capsys)
    assert code == 0 and "3 chunks resumed" in printed and err == ""
    assert load_reach_map(str(out)).equals(truth)


def make_foreign(path: Path, monkeypatch) -> str:
    """``path`` owned by another user (chown to nobody as root; else this process pretends to be
    another uid); returns the phrase of the refusal."""
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
        return "owned by uid 65534"
    real = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real + 1)
    return f"owned by uid {real}"


@pytest.mark.parametrize("attack", ["writable by others", "another user's"])
def test_a_chunk_folder_others_can_write_is_refused_with_a_warning(attack, tmp_path, capsys, truth, prepared_job,
                                                                   monkeypatch):
    out = tmp_path / "map.npz"
    folder = key_folder(out)
    secret_folder = ChunkFolder(str(folder), JOB.key, chunk_secret())
    for index in range(prepared_job.n_chunks):   # chunks that would pass every check of a private folder
        secret_folder.write(index, ChunkResult(*all_true(prepared_job, index)))
    if attack == "writable by others":
        os.chmod(folder, 0o777)
        phrase = "writable by group or others (mode 777)"
    else:
        os.chmod(folder, 0o777)
        phrase = make_foreign(folder, monkeypatch)
    before = sorted(p.name for p in folder.iterdir())
    code, printed, err = run_cli(out, capsys)
    assert code == 0 and mean_line(truth) in printed and "resumed" not in printed
    assert f"is not used ({phrase}" in err
    assert "an interrupted run cannot resume" in err
    assert sorted(p.name for p in folder.iterdir()) == before   # nothing written or removed there
    assert load_reach_map(str(out)).equals(truth)


# ------------------------------------------------------------------ item 9: no writes through links
def planted_victim(tmp_path) -> tuple[Path, Path, Path]:
    """A file ``precious`` in a private folder (what the planted links point at), the map's
    ``--out`` path and its chunk key folder."""
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    victim = vault / "precious"
    victim.write_bytes(b"precious")
    out = tmp_path / "map.npz"
    return victim, out, key_folder(out)


def test_links_planted_at_the_old_temporary_names_are_never_written_through(tmp_path, capsys, truth, prepared_job):
    victim, out, folder = planted_victim(tmp_path)
    for index in range(prepared_job.n_chunks):
        (folder / f"chunk-{index:07d}.npz.{os.getpid()}.tmp").symlink_to(victim)
    Path(f"{out}.{os.getpid()}.tmp").symlink_to(victim)
    code, printed, err = run_cli(out, capsys)
    assert code == 0, err
    assert victim.read_bytes() == b"precious"
    assert load_reach_map(str(out)).equals(truth)
    assert Path(f"{out}.{os.getpid()}.tmp").is_symlink()   # left alone, never opened


@pytest.mark.skipif(os.geteuid() != 0, reason="the attack of the issue needs root (a folder of another user)")
def test_root_never_writes_into_another_users_chunk_folder(tmp_path, capsys, truth):
    victim, out, folder = planted_victim(tmp_path)
    os.chmod(folder, 0o777)
    os.chown(folder, 65534, 65534)
    (folder / f"chunk-0000000.npz.{os.getpid()}.tmp").symlink_to(victim)
    code, printed, err = run_cli(out, capsys)
    assert code == 0 and victim.read_bytes() == b"precious"
    assert sorted(p.name for p in folder.iterdir()) == [f"chunk-0000000.npz.{os.getpid()}.tmp"]


# ------------------------------------------------------------------ item 10: bad files
def test_links_and_a_symlinked_folder_are_not_followed(tmp_path, truth, prepared_job):
    elsewhere = ChunkFolder.open(str(tmp_path / "elsewhere"), JOB.key)
    rows = prepared_job.chunk_voxels(0)
    elsewhere.write(0, ChunkResult(truth.solved[rows], truth.manipulability[rows]))
    chunk_dir = tmp_path / "chunks"
    folder = ChunkFolder.open(str(chunk_dir), JOB.key)
    os.symlink(elsewhere.path(0), folder.path(0))
    with pytest.warns(RuntimeWarning, match=r"chunk-0000000.npz: a symbolic link"):
        reach = reachability_map(PLANAR, "tool", workers=1, chunk_dir=str(chunk_dir), **OPTIONS)
    assert reach.run.chunks_reused == 0 and reach.equals(truth)
    # The key folder itself a link to a private folder holding a genuine chunk: not used.
    linked = tmp_path / "linked"
    linked.mkdir(mode=0o700)
    (linked / JOB.key).symlink_to(elsewhere.directory, target_is_directory=True)
    with pytest.warns(RuntimeWarning, match=r"is not used \(a symbolic link\)"):
        reach = reachability_map(PLANAR, "tool", workers=1, chunk_dir=str(linked), **OPTIONS)
    assert reach.run.chunks_reused == 0 and reach.equals(truth)
    assert os.path.exists(elsewhere.path(0))


@contextlib.contextmanager
def fifo_guard(fifo: str):
    """A hang guard: a reader still blocked opening ``fifo`` after 10 s is released (a writer
    opens and closes it) and recorded in the yielded list."""
    blocked, stop = [], threading.Event()

    def unblock():
        started = time.monotonic()
        while not stop.wait(0.2):
            if time.monotonic() - started < 10:
                continue
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                blocked.append(True)
            except OSError:
                pass

    guard = threading.Thread(target=unblock, daemon=True)
    guard.start()
    try:
        yield blocked
    finally:
        stop.set()
        guard.join()


def test_a_fifo_chunk_does_not_hang_the_run(tmp_path, truth):
    chunk_dir = tmp_path / "chunks"
    folder = ChunkFolder.open(str(chunk_dir), JOB.key)
    os.mkfifo(folder.path(1))
    with fifo_guard(folder.path(1)) as blocked:
        with pytest.warns(RuntimeWarning, match=r"chunk-0000001.npz: not a regular file \(a FIFO\)"):
            reach = reachability_map(PLANAR, "tool", workers=1, chunk_dir=str(chunk_dir), **OPTIONS)
    assert not blocked, "the run blocked opening the FIFO"
    assert reach.equals(truth)


def test_truncated_and_corrupt_chunks_are_solved_again_with_a_warning(tmp_path, capsys, truth, prepared_job):
    out = tmp_path / "map.npz"
    folder = ChunkFolder.open(f"{out}.chunks", JOB.key)
    for index in range(4):
        rows = prepared_job.chunk_voxels(index)
        folder.write(index, ChunkResult(truth.solved[rows], truth.manipulability[rows]))
    data = Path(folder.path(0)).read_bytes()
    Path(folder.path(0)).write_bytes(data[:len(data) // 2])            # truncated
    corrupt = bytearray(Path(folder.path(1)).read_bytes())
    corrupt[len(corrupt) // 3] ^= 0xFF                                   # a flipped byte
    Path(folder.path(1)).write_bytes(bytes(corrupt))
    Path(folder.path(2)).write_bytes(b"PK\x03\x04" + os.urandom(300))   # garbage behind a zip magic
    code, printed, err = run_cli(out, capsys)
    assert code == 0, err
    assert "Traceback" not in err and "BadZipFile" not in err
    assert "1 chunks resumed" in printed and "3 chunk file(s)" in err
    assert err.count("\n") == 1 and err.startswith("robokin reach: warning: "), err
    assert load_reach_map(str(out)).equals(truth)


def deflate_bomb(path: Path, name: str, shape: tuple[int, ...], dtype=np.uint8, small: dict | None = None,
                 data_bytes: int | None = None) -> None:
    """An .npz whose entry ``name`` is a ``.npy`` header for ``shape`` then ``data_bytes``
    (default: the whole array) zero bytes, deflated (about 1,000 to 1); ``small`` entries as
    they are."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": np.dtype(dtype).str, "fortran_order": False,
                                                  "shape": shape})
    zeros = bytes(1 << 20)
    total = int(np.prod(shape)) * np.dtype(dtype).itemsize if data_bytes is None else data_bytes
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, value in (small or {}).items():
            buffer = io.BytesIO()
            np.save(buffer, value)
            archive.writestr(f"{key}.npy", buffer.getvalue())
        with archive.open(f"{name}.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            for start in range(0, total, len(zeros)):
                f.write(zeros[:min(len(zeros), total - start)])


def peak_bytes(call) -> int:
    """Peak memory traced (numpy's arrays included) while ``call()`` runs."""
    tracemalloc.start()
    try:
        call()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_a_zip_bomb_chunk_is_refused_before_it_is_inflated(tmp_path, truth, prepared_job):
    chunk_dir = tmp_path / "chunks"
    folder = ChunkFolder.open(str(chunk_dir), JOB.key)
    rows = prepared_job.chunk_voxels(0)
    n = rows.stop - rows.start
    deflate_bomb(Path(folder.path(0)), "solved", (n, (64 << 20) // n), np.bool_, small={"manipulability": np.zeros(n)})
    assert os.path.getsize(folder.path(0)) < 1 << 20
    found = []

    def run():
        with pytest.warns(RuntimeWarning, match="chunk-0000000.npz: larger than the limit of"):
            found.append(reachability_map(PLANAR, "tool", workers=1, chunk_dir=str(chunk_dir), **OPTIONS))

    assert peak_bytes(run) < 32 << 20   # the bomb inflates to 64 MB
    assert found[0].equals(truth)


@pytest.mark.parametrize("entry, shape, data_bytes, message", [
    ("solved", (10_000, 25_000), None, "'solved' has shape (10000, 25000), expected"),   # 250 MB of zeros
    ("voxels", (400_000_000, 3), 1 << 20, "400000000 voxels x 2 orientations: more than 1e+07 voxels"),
])
def test_a_zip_bomb_map_is_refused_before_it_is_inflated(entry, shape, data_bytes, message, tmp_path, truth):
    """What ``robokin view --reach MAP`` loads (``start_view`` -> ``load_reach_map``)."""
    good = tmp_path / "good.npz"
    truth.save(str(good))
    with np.load(good) as data:
        entries = {k: data[k] for k in data.files if k != entry}
    bomb = tmp_path / "bomb.npz"
    deflate_bomb(bomb, entry, shape, np.uint8 if entry == "solved" else np.int64, small=entries, data_bytes=data_bytes)
    assert os.path.getsize(bomb) < 1 << 20

    def load():
        with pytest.raises(ArgumentError, match=re.escape(message)):
            load_reach_map(str(bomb))

    assert peak_bytes(load) < 16 << 20


def test_robokin_view_refuses_a_zip_bomb_map_in_one_line(tmp_path, truth, capsys):
    pytest.importorskip("viser", reason="viser is not installed")
    good = tmp_path / "good.npz"
    truth.save(str(good))
    with np.load(good) as data:
        entries = {k: data[k] for k in data.files if k != "solved"}
    bomb = tmp_path / "bomb.npz"
    deflate_bomb(bomb, "solved", (10_000, 25_000), small=entries)
    code = main(["view", str(PLANAR_FILE), "--reach", str(bomb), "--port", "0"])   # the map is read before serving
    err = without_compile_notices(capsys.readouterr().err)
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(f"robokin view: map: {bomb} is not a readable reach map ('solved' has shape (10000, 25000)")


def test_a_map_whose_grid_claims_a_huge_shape_is_refused(tmp_path, truth):
    """``ReachMap.dense()`` allocates the grid: a planted ``grid_shape`` must not reach it."""
    truth.save(str(tmp_path / "good.npz"))
    with np.load(tmp_path / "good.npz") as data:
        entries = dict(data)
    entries["grid_shape"] = np.array([10**6] * 3)
    np.savez(tmp_path / "huge.npz", **entries)
    with pytest.raises(ArgumentError, match=re.escape("grid_shape (1000000, 1000000, 1000000) is not a grid")):
        load_reach_map(str(tmp_path / "huge.npz"))
    entries["grid_shape"], entries["voxels"] = np.array(truth.grid_shape), entries["voxels"] + 10**6
    np.savez(tmp_path / "outside.npz", **entries)
    with pytest.raises(ArgumentError, match="voxel indices outside the grid"):
        load_reach_map(str(tmp_path / "outside.npz"))


def test_a_map_that_is_a_fifo_or_garbage_is_one_error(tmp_path):
    fifo = tmp_path / "map.npz"
    os.mkfifo(fifo)
    with fifo_guard(str(fifo)) as blocked:
        with pytest.raises(ArgumentError, match=r"cannot be read \(not a regular file \(a FIFO\)\)"):
            load_reach_map(str(fifo))
    assert not blocked, "the loader blocked opening the FIFO"
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(ArgumentError, match="is not a readable reach map"):
        load_reach_map(str(garbage))


def test_too_many_poses_is_one_line_naming_the_size_and_the_limit(tmp_path, capsys):
    code = main(["reach", str(UR5E), "--tip", "tool0", "--resolution", "0.01", "--orientations", "10000",
                 "--out", str(tmp_path / "m.npz")])
    err = without_compile_notices(capsys.readouterr().err)
    assert code == 2 and err.count("\n") == 1
    assert re.match(r"robokin reach: --resolution: 0.01 m voxels x 10000 orientations make about [\d.]+e\+10 poses "
                    r"\([\d.]+e\+06 voxels in a reach of radius [\d.]+ m\), more than the limit of 1e\+09 poses", err)


def test_an_unreachable_ray_address_fails_at_once_in_one_line(tmp_path):
    """Ray itself retries the connection for minutes (150 s measured); the address is tried first."""
    result = subprocess.run([sys.executable, "-m", "robokin_ros", "reach", str(PLANAR_FILE), *ARGS[:-2],
                             "--ray", "127.0.0.1:1", "--out", str(tmp_path / "m.npz")],
                            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr == ("robokin reach: --ray: no Ray cluster reachable at 127.0.0.1:1 (Connection refused "
                             "within 5 s)\n")


def resume_words(line: str) -> list[str]:
    """The command after "resume with: ", run as ``python -m robokin_ros``."""
    words = shlex.split(line.split("resume with: ", 1)[1])
    assert words[:2] == ["robokin", "reach"]
    return [sys.executable, "-m", "robokin_ros", *words[1:]]


@pytest.mark.slow   # two worker processes, then a resumed run
def test_a_killed_worker_is_one_line_saying_what_was_kept(tmp_path, capsys):
    out = tmp_path / "map.npz"
    options = ["--tip", "tool0", "--resolution", "0.3", "--orientations", "8", "--chunk-poses", "40"]
    chunks = Path(f"{out}.chunks")
    killed, stop = [], threading.Event()

    def kill_a_worker():
        while not stop.wait(0.05):
            if len(list(chunks.glob("*/chunk-*.npz"))) >= 2 and multiprocessing.active_children():
                os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)
                killed.append(True)
                return

    killer = threading.Thread(target=kill_a_worker, daemon=True)
    killer.start()
    try:
        code = main(["reach", str(UR5E), *options, "--workers", "2", "--out", str(out)])
    finally:
        stop.set()
        killer.join()
    err = without_compile_notices(capsys.readouterr().err)
    assert killed, "the run ended before a worker could be killed"
    assert code == 1 and err.count("\n") == 1, err
    kept = int(re.search(r"; (\d+) of \d+ chunks kept in ", err).group(1))
    assert err.startswith("robokin reach: a worker process ended abruptly (killed, out of memory")
    assert kept == len(list(chunks.glob("*/chunk-*.npz"))) >= 2
    rerun = subprocess.run(resume_words(err.strip()), cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0 and f"{kept} chunks resumed" in rerun.stdout, rerun.stderr
    fresh = reachability_map(UR5E.read_text(), "tool0", resolution=0.3, orientations=8, chunk_poses=40, workers=1)
    assert load_reach_map(str(out)).equals(fresh)
