"""Hostile files (issue 24, cases 3, 11, 12, 13): every file robokin_ros reads on a user's behalf
is read with a cap and a file-type check; collision-pair cache entries are verified, not
trusted; the cache directory must be private; meshes are capped, checked and kept inside their
package; the XML reader bounds its tree before it is built.

Whatever would hang or exhaust memory on a regression runs in a subprocess with a timeout and
an address-space limit."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, URDFError
from robokin_ros.kernels import disk_cache
from robokin_ros.model.description import MAX_DEPTH, parse_document, read_capped, read_description

ROOT = Path(__file__).resolve().parents[2]
BOX = '<box size="0.2 0.2 0.2"/>'


def sliding_pair(shape_a: str, shape_b: str = BOX, origin_a: str = "0 0 0") -> str:
    """Links ``a`` (fixed at ``origin_a``) and ``b`` (sliding along x in [-1, 1]) under a far base."""
    return f"""<robot name="pair">
  <link name="base"><collision><origin xyz="0 0 -5"/><geometry><sphere radius="0.01"/></geometry></collision></link>
  <link name="a"><collision><origin xyz="{origin_a}"/><geometry>{shape_a}</geometry></collision></link>
  <link name="b"><collision><geometry>{shape_b}</geometry></collision></link>
  <joint name="fix" type="fixed"><parent link="base"/><child link="a"/></joint>
  <joint name="x" type="prismatic"><parent link="base"/><child link="b"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def run_python(code: str, env: dict, timeout: float = 120, address_space: int | None = None):
    """Run ``code`` in a fresh interpreter (this checkout first on sys.path); returns the
    CompletedProcess. A hang fails the test through ``subprocess.TimeoutExpired``."""
    def limit():
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit)


# ------------------------------------------------------------------ case 3: one capped reader
def test_the_reader_refuses_a_fifo_a_device_a_link_and_other_users_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match=r"not a regular file \(a FIFO\)"):
        read_capped(fifo, 100)   # opened non-blocking: no writer is waited for
    with pytest.raises(OSError, match=r"not a regular file \(a device\)"):
        read_capped("/dev/zero", 100)
    with pytest.raises(OSError, match="larger than the limit of 100 bytes"):
        read_capped("/dev/zero", 100, devices=True)
    target = tmp_path / "target"
    target.write_bytes(b"abc")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert read_capped(link, 100) == b"abc"
    with pytest.raises(OSError, match="symbolic link"):
        read_capped(link, 100, follow_symlinks=False)
    target.chmod(0o666)
    with pytest.raises(OSError, match="not private"):
        read_capped(target, 100, own=True)
    with pytest.raises(OSError, match="larger than the limit of 2 bytes"):
        read_capped(target, 2)


def test_a_xacro_fifo_is_refused_before_xacro_opens_it(tmp_path):
    """xacro reads its file with a plain open: a FIFO named ``.xacro`` would hang it."""
    fifo = tmp_path / "robot.urdf.xacro"
    os.mkfifo(fifo)
    result = run_python(f"""
        from robokin_ros.model.description import read_description
        from robokin_ros import URDFError
        try:
            read_description({str(fifo)!r})
        except URDFError as e:
            print(e)
        """, {}, timeout=60)
    assert "not a regular file (a FIFO)" in result.stdout, result.stderr


def test_a_big_xacro_file_is_refused_before_expansion(tmp_path, monkeypatch):
    path = tmp_path / "robot.xacro"
    path.write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="a"/></robot>' + " " * 200)
    monkeypatch.setenv("ROBOKIN_MAX_DESCRIPTION_BYTES", "100")
    with pytest.raises(URDFError, match="larger than the limit of 100 bytes"):
        read_description(path)


# ------------------------------------------------------------------ case 13: the XML tree is bounded
def test_too_many_elements_are_refused(monkeypatch):
    text = "<robot name='r'>" + "<a/>" * 1000 + "</robot>"
    assert len(parse_document(text).root) == 1000
    with pytest.raises(URDFError, match="line 1: more than 500 elements"):
        parse_document(text, max_elements=500)
    monkeypatch.setenv("ROBOKIN_MAX_DESCRIPTION_ELEMENTS", "1001")
    assert len(parse_document(text).root) == 1000   # 1001 elements in all
    monkeypatch.setenv("ROBOKIN_MAX_DESCRIPTION_ELEMENTS", "1000")
    with pytest.raises(URDFError, match="ROBOKIN_MAX_DESCRIPTION_ELEMENTS"):
        RobotModel.from_urdf(text)


def test_one_element_with_a_million_attributes_is_refused_before_expat_reads_them():
    """The element cap does not bound one element's attributes (issue 33 item 12: 5 M attributes
    parsed in 20 s / 1.2 GB); the tag length cap refuses them, naming the line."""
    attributes = " ".join(f'a{i}="1"' for i in range(200_000))
    with pytest.raises(URDFError, match=r"line 2: a tag longer than"):
        RobotModel.from_urdf(f'<robot name="r">\n<link name="l" {attributes}/></robot>')
    RobotModel.from_urdf('<robot name="r">\n<link name="l" a="1" b="2"/></robot>')   # a few are fine


def test_deep_nesting_is_refused():
    def nested(depth):
        return "<robot name='r'>" + "<a>" * (depth - 1) + "</a>" * (depth - 1) + "</robot>"

    parse_document(nested(MAX_DEPTH))
    with pytest.raises(URDFError, match=f"elements nested more than {MAX_DEPTH} deep"):
        parse_document(nested(MAX_DEPTH + 1))


@pytest.mark.slow   # parses 60 MiB in a subprocess
def test_sixty_mib_of_empty_elements_is_refused_in_bounded_memory():
    """60 MiB of ``<a/>`` (under the 64 MiB size cap) once built a 2.7 GB tree; now the parse
    stops at the element cap. The child may grow by 600 MiB at most (input included)."""
    result = run_python("""
        import resource
        from robokin_ros.model.description import parse_document
        from robokin_ros import URDFError
        text = "<r>" + "<a/>" * (15 * 2 ** 20) + "</r>"
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            parse_document(text)
            print("parsed")
        except URDFError as e:
            print(e)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
        """, {}, timeout=120, address_space=2 * 1024 ** 3)
    lines = result.stdout.splitlines()
    assert lines and "more than 1000000 elements" in lines[0], result.stdout + result.stderr
    assert int(lines[1]) < 600


# ------------------------------------------------------------------ case 11: the cache directory
@pytest.fixture
def fallback(tmp_path, monkeypatch):
    """Fallback directories go below a private temporary folder of this test."""
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir(mode=0o700)
    monkeypatch.setattr("tempfile.tempdir", str(private_tmp))
    monkeypatch.setattr(disk_cache.fallback_state(), "folder", None)
    monkeypatch.setattr(disk_cache.fallback_state(), "warned", set())
    return private_tmp


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o703])
def test_a_group_or_world_writable_cache_directory_is_not_used(tmp_path, monkeypatch, fallback, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(shared))
    with pytest.warns(RuntimeWarning, match=f"cache directory '{shared}' is not used .*writable by group or others"):
        used = disk_cache.cache_dir()
    assert used == str(fallback / f"robokin_ros-{os.getuid()}")
    assert disk_cache.private_directory_problem(used) is None
    assert stat.S_IMODE(os.stat(used).st_mode) == 0o700


def test_a_cache_directory_is_created_private(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path / "new" / "cache"))
    assert disk_cache.cache_dir() == str(tmp_path / "new" / "cache")
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "cache").st_mode) == 0o700


def test_a_planted_fallback_directory_is_not_used_either(tmp_path, monkeypatch, fallback):
    """Someone else's ``robokin_ros-<uid>`` in the temporary folder: a fresh private directory serves."""
    planted = fallback / f"robokin_ros-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(shared))
    with pytest.warns(RuntimeWarning, match="not used"):
        used = disk_cache.cache_dir()
    assert used not in (str(planted), str(shared)) and Path(used).parent == fallback
    assert disk_cache.private_directory_problem(used) is None


# ------------------------------------------------------------------ case 11: collision-pair entries
coal_needed = pytest.mark.skipif(__import__("importlib").util.find_spec("coal") is None, reason="coal is not installed")


def _pairs(model, **kw):
    from robokin_ros import disabled_pairs_by_sampling
    return disabled_pairs_by_sampling(model, samples=100, **kw)


def _entry(cache: Path) -> Path:
    (entry,) = (cache / "collision_pairs").glob("*.json")
    return entry


@coal_needed
def test_an_entry_made_for_another_robot_is_not_used(tmp_path, monkeypatch):
    """A collision-pair entry holding another URDF's pairs under this URDF's name (copied caches,
    an older format, a planted file) is recomputed and overwritten: its key does not match."""
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    here = RobotModel.from_urdf(sliding_pair(BOX))                      # a and b overlap at home
    far = RobotModel.from_urdf(sliding_pair(BOX, origin_a="3 0 0"))     # never in collision
    expected = _pairs(here, cache=False)
    assert expected == (("a", "b", "Default"),) and _pairs(far, cache=False) == (("a", "b", "Never"),)
    _pairs(far)
    foreign = _entry(tmp_path).read_bytes()
    _entry(tmp_path).unlink()
    _pairs(here)
    _entry(tmp_path).write_bytes(foreign)
    assert _pairs(here) == expected
    assert json.loads(_entry(tmp_path).read_text())["disabled"] == [list(p) for p in expected]


@coal_needed
def test_an_entry_whose_pairs_do_not_match_its_digest_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    model = RobotModel.from_urdf(sliding_pair(BOX))
    expected = _pairs(model)
    entry = json.loads(_entry(tmp_path).read_text())
    entry["disabled"] = [["a", "b", "Never"]]   # key kept, pairs edited
    _entry(tmp_path).write_text(json.dumps(entry))
    assert _pairs(model) == expected


@coal_needed
def test_deeply_nested_json_is_recomputed_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    model = RobotModel.from_urdf(sliding_pair(BOX))
    expected = _pairs(model)
    _entry(tmp_path).write_text("[" * 200_000)
    assert _pairs(model) == expected


@coal_needed
def test_a_directory_in_the_entrys_place_is_replaced_and_no_temporary_file_is_left(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    model = RobotModel.from_urdf(sliding_pair(BOX))
    expected = _pairs(model)
    entry = _entry(tmp_path)
    entry.unlink()
    entry.mkdir()
    (entry / "inside").write_text("x")
    assert _pairs(model) == expected
    assert entry.is_file() and sorted(p.name for p in entry.parent.iterdir()) == [entry.name]
    assert _pairs(model) == expected


@coal_needed
def test_an_entry_from_other_mesh_files_is_not_used(tmp_path, monkeypatch):
    """The same URDF text with another mesh behind its URI samples differently: the key holds
    the loaded shapes, not only the text."""
    trimesh = pytest.importorskip("trimesh")
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path / "cache"))
    mesh = tmp_path / "part.stl"
    model = RobotModel.from_urdf(sliding_pair(f'<mesh filename="{mesh}"/>', origin_a="0.6 0 0"))
    trimesh.creation.box(extents=(0.2, 0.2, 0.2)).export(mesh)     # a tenth of the stroke: kept
    assert _pairs(model) == ()
    trimesh.creation.box(extents=(4.0, 0.2, 0.2)).export(mesh)     # the whole stroke: "Default"
    assert _pairs(model) == _pairs(model, cache=False) == (("a", "b", "Default"),)


SAMPLE_PAIRS = """
    from robokin_ros import RobotModel, disabled_pairs_by_sampling
    print(disabled_pairs_by_sampling(RobotModel.from_urdf({urdf!r}), samples=100))
"""


@coal_needed
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_fifo_or_dev_zero_entry_is_recomputed_without_hanging_or_exhausting_memory(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    urdf = sliding_pair(BOX)
    model = RobotModel.from_urdf(urdf)
    expected = _pairs(model)
    entry = _entry(tmp_path)
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")
    result = run_python(SAMPLE_PAIRS.format(urdf=urdf), {"ROBOKIN_CACHE_DIR": str(tmp_path)}, timeout=90,
                        address_space=3 * 1024 ** 3)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(expected)
    assert entry.is_file() and not entry.is_symlink()


# ------------------------------------------------------------------ case 12: meshes
def _box_stl(path: Path, extent: float = 0.2) -> Path:
    trimesh = pytest.importorskip("trimesh")
    path.parent.mkdir(parents=True, exist_ok=True)
    trimesh.creation.box(extents=(extent,) * 3).export(path)
    return path


def _collision_model(uri: str, **kw):
    from robokin_ros import CollisionModel
    return CollisionModel.build(RobotModel.from_urdf(sliding_pair(f'<mesh filename="{uri}"/>')), samples=0, **kw)


@coal_needed
def test_a_mesh_over_the_size_cap_is_skipped_without_being_read(tmp_path, monkeypatch):
    path = _box_stl(tmp_path / "box.stl")
    assert _collision_model(str(path)).warnings == ()
    monkeypatch.setenv("ROBOKIN_MAX_MESH_BYTES", "100")
    cm = _collision_model(str(path))
    assert cm.n_geometries == 2
    (warning,) = cm.warnings
    assert str(path) in warning and "more than the limit of 100 bytes (ROBOKIN_MAX_MESH_BYTES)" in warning


@coal_needed
def test_a_huge_sparse_mesh_is_skipped(tmp_path):
    path = tmp_path / "huge.stl"
    with open(path, "wb") as f:
        f.truncate(2 * 1024 ** 3)   # sparse: nothing is allocated
    (warning,) = _collision_model(str(path)).warnings
    assert "more than the limit of 268435456 bytes" in warning


@coal_needed
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_mesh_with_a_non_finite_vertex_is_skipped_naming_the_file(tmp_path, bad):
    """A binary STL whose first vertex is NaN or inf would give wrong answers: skipped."""
    path = _box_stl(tmp_path / "box.stl")
    data = bytearray(path.read_bytes())
    data[84 + 12:84 + 16] = np.float32(bad).tobytes()   # header 80 + count 4, normal 12, then vertex 1's x
    path.write_bytes(bytes(data))
    cm = _collision_model(str(path))
    assert cm.n_geometries == 2
    (warning,) = cm.warnings
    assert repr(str(path)) in warning and "non-finite vertices" in warning


@coal_needed
def test_a_package_uri_cannot_leave_its_package(tmp_path, monkeypatch):
    from robokin_ros.collision.meshes import resolve_mesh_uri

    _box_stl(tmp_path / "secret" / "box.stl")
    _box_stl(tmp_path / "share" / "my_robot" / "box.stl")
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "share"))
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    escaping = "package://my_robot/../../secret/box.stl"
    assert os.path.isfile(tmp_path / "share" / "my_robot" / "../../secret/box.stl")   # what a join would reach
    assert resolve_mesh_uri(escaping) is None
    (warning,) = _collision_model(escaping).warnings
    assert "leaves its package" in warning and escaping in warning
    inside = "package://my_robot/meshes/../box.stl"   # normalised, still inside
    assert resolve_mesh_uri(inside) == str(tmp_path / "share" / "my_robot" / "box.stl")
    assert _collision_model(inside).warnings == ()
    assert resolve_mesh_uri("package://../secret/box.stl") is None
    assert resolve_mesh_uri("file://otherhost/etc/passwd") is None
