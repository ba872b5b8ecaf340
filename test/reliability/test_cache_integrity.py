"""The numba kernel cache is verified, not trusted: an edited or truncated module, garbage
compiled code, or a kernel that disagrees with its own source run uncompiled is rebuilt; nothing accumulates per model
in sys.modules; the cache directory is bounded; planted files (an index pickle in a shared
directory or of another user, a module with extra code, a link, a FIFO) never run."""

from __future__ import annotations

import gc
import glob
import os
import pickle
import shutil
import stat
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.kernels import accel, disk_cache, selection
from robokin_ros.kernels.fk_codegen import compiled_fk

pytestmark = [pytest.mark.skipif(not accel.available(), reason="numba is not installed"),
              pytest.mark.slow]   # compiles kernels, runs interpreters
ROOT = Path(__file__).resolve().parents[2]


def chain(length: float) -> RobotModel:
    """A small 2-DOF arm; ``length`` makes its generated source (and cache entry) distinct."""
    return RobotModel.from_urdf(chain_urdf(length))


def chain_urdf(length: float) -> str:
    return (
        f'<robot name="c"><link name="a"/><link name="b"/><link name="c"/>'
        f'<joint name="j1" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
        f'<origin xyz="0 0 {length}"/></joint>'
        f'<joint name="j2" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>'
        f'<origin xyz="{length} 0 0.1"/></joint></robot>')


@pytest.fixture
def cache(run_with, tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    run_with(accelerated=True)
    accel.loaded().functions.clear()
    return tmp_path


def expected_fk(model, q):
    with selection.use("generic"):
        return forward_kinematics(model, q)


def modules(folder) -> list[str]:
    return sorted(glob.glob(os.path.join(str(folder), "robokin_kernel_*.py")))


def test_edited_module_is_rebuilt(cache):
    model = chain(0.5)
    assert compiled_fk(model).accelerate()
    [path] = modules(cache)
    good = open(path).read()
    # still valid Python, but the kernel writes zeros
    zeros = good.split("    for b in range")[0] + "    out[:] = 0.0\n"
    open(path, "w").write(zeros)
    accel.loaded().functions.clear()
    again = chain(0.5)
    with pytest.warns(RuntimeWarning, match="does not match its source; rebuilt"):
        assert compiled_fk(again).accelerate()
    q = np.random.default_rng(0).uniform(-3, 3, (300, 2))
    np.testing.assert_allclose(forward_kinematics(again, q), expected_fk(again, q), atol=1e-12)
    assert open(path).read() == good


def test_truncated_module_is_rebuilt(cache):
    model = chain(0.6)
    assert compiled_fk(model).accelerate()
    [path] = modules(cache)
    good = open(path).read()
    open(path, "w").write(good[: good.index("@numba.njit")])   # valid Python without a kernel
    accel.loaded().functions.clear()
    with pytest.warns(RuntimeWarning, match="rebuilt"):
        assert compiled_fk(chain(0.6)).accelerate()
    assert open(path).read() == good


def test_garbage_compiled_code_is_never_used(cache):
    model = chain(0.7)
    assert compiled_fk(model).accelerate()
    for path in glob.glob(os.path.join(str(cache), "__pycache__", "*.nbc")):
        open(path, "wb").write(b"\x00garbage" * 100)
    accel.loaded().functions.clear()
    again = chain(0.7)
    with pytest.warns(RuntimeWarning, match="failed to load .*; rebuilt"):
        assert compiled_fk(again).accelerate()   # rebuilt, not numpy forever
    q = np.random.default_rng(1).uniform(-3, 3, (300, 2))
    np.testing.assert_allclose(forward_kinematics(again, q), expected_fk(again, q), atol=1e-12)


def test_a_kernel_that_disagrees_with_its_source_is_not_used(cache, monkeypatch):
    model = chain(0.8)
    kernel = compiled_fk(model)

    def zeros(q, out):   # a wrong reference: the source run uncompiled "gives" zeros
        out.fill(0.0)
        return 0

    monkeypatch.setattr(accel, "python_entry", lambda single: zeros)
    with pytest.warns(RuntimeWarning):
        assert not kernel.accelerate()
    assert kernel._accelerated is None
    assert modules(cache) == []   # the disagreeing entry was purged


def test_nothing_accumulates_in_sys_modules_and_models_are_freed(cache):
    before = {n for n in sys.modules if n.startswith("robokin_kernel_")}
    refs = []
    for k in range(4):
        model = chain(1.0 + k)
        assert compiled_fk(model).accelerate()
        refs.append(weakref.ref(model))
        del model
    gc.collect()
    assert {n for n in sys.modules if n.startswith("robokin_kernel_")} == before
    assert all(r() is None for r in refs)


def test_cache_directory_is_bounded(cache, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_MAX_ENTRIES", "2")
    for k in range(4):
        assert compiled_fk(chain(2.0 + k)).accelerate()
    assert len(modules(cache)) == 2
    names = {os.path.basename(p)[:-3] for p in modules(cache)}
    compiled = glob.glob(os.path.join(str(cache), "__pycache__", "*"))
    assert all(os.path.basename(p).split(".")[0] in names for p in compiled)



def test_the_kernels_shared_in_memory_are_bounded(cache, monkeypatch):
    monkeypatch.setattr(accel, "MAX_LOADED", 2)
    models = [chain(2.5 + k) for k in range(4)]   # alive: their kernels would keep their entries
    for model in models:
        assert compiled_fk(model).accelerate()
    assert len(accel.loaded().functions) == 2
    q = np.random.default_rng(2).uniform(-3, 3, (300, 2))
    np.testing.assert_allclose(forward_kinematics(models[3], q), expected_fk(models[3], q), atol=1e-12)   # not shared, used

# ---------------------------------------------------------------------- planted files (issue 24, case 11)
class _Planted:
    """Unpickling it creates ``marker``: proof that a planted pickle ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _compiled_names(model, folder) -> tuple[str, list[str]]:
    """Compile ``model``'s FK kernel into ``folder``: its module file and numba's index files' names."""
    assert compiled_fk(model).accelerate()
    [path] = modules(folder)
    return path, [os.path.basename(p) for p in glob.glob(os.path.join(str(folder), "__pycache__", "*.nbi"))]


def _plant_index(folder, module_path, index_names, marker) -> None:
    os.makedirs(os.path.join(str(folder), "__pycache__"), exist_ok=True)
    if os.path.dirname(module_path) != str(folder):
        shutil.copy(module_path, folder)
    for name in index_names:
        with open(os.path.join(str(folder), "__pycache__", name), "wb") as f:
            pickle.dump(_Planted(marker), f)


def test_a_planted_index_in_a_shared_cache_directory_is_never_unpickled(cache, tmp_path, monkeypatch):
    """numba unpickles its ``.nbi`` index files: one planted in a group/world-writable cache
    directory would run code here. Such a directory is not used at all."""
    module_path, index_names = _compiled_names(chain(3.1), cache)
    assert index_names
    shared, marker = tmp_path / "shared", tmp_path / "planted-code-ran"
    shared.mkdir()
    _plant_index(shared, module_path, index_names, marker)
    for folder in (shared, shared / "__pycache__"):
        folder.chmod(0o777)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir(mode=0o700)
    monkeypatch.setattr("tempfile.tempdir", str(private_tmp))
    monkeypatch.setattr(disk_cache.fallback_state(), "folder", None)
    monkeypatch.setattr(disk_cache.fallback_state(), "warned", set())
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(shared))
    accel.loaded().functions.clear()
    with pytest.warns(RuntimeWarning, match="not used .*writable by group or others"):
        assert compiled_fk(chain(3.1)).accelerate()
    assert not marker.exists()
    assert modules(private_tmp / f"robokin_ros-{os.getuid()}")


@pytest.mark.skipif(os.getuid() != 0, reason="planting a file of another user needs root")
def test_compiled_files_of_another_user_are_deleted_not_unpickled(cache, tmp_path):
    module_path, index_names = _compiled_names(chain(3.2), cache)
    marker = tmp_path / "planted-code-ran"
    _plant_index(cache, module_path, index_names, marker)
    for name in index_names:
        os.chown(cache / "__pycache__" / name, 65534, 65534)
    accel.loaded().functions.clear()
    assert compiled_fk(chain(3.2)).accelerate()
    assert not marker.exists()
    assert all((cache / "__pycache__" / name).stat().st_uid == os.getuid() for name in index_names)


def test_a_planted_module_under_the_kernels_name_is_not_run(cache, tmp_path):
    module_path, _ = _compiled_names(chain(3.3), cache)
    good = open(module_path).read()
    marker = tmp_path / "planted-code-ran"
    open(module_path, "w").write(f"import os\nos.mkdir({str(marker)!r})\n" + good)
    accel.loaded().functions.clear()
    with pytest.warns(RuntimeWarning, match="does not match its source; rebuilt"):
        assert compiled_fk(chain(3.3)).accelerate()
    assert not marker.exists() and open(module_path).read() == good


def test_a_module_entry_that_is_a_symbolic_link_is_replaced(cache, tmp_path):
    """Even to a file with the right text: an entry is a regular file of this user, or rebuilt."""
    module_path, _ = _compiled_names(chain(3.4), cache)
    elsewhere = tmp_path / "elsewhere.py"
    shutil.move(module_path, elsewhere)
    os.symlink(elsewhere, module_path)
    accel.loaded().functions.clear()
    with pytest.warns(RuntimeWarning, match="rebuilt"):
        assert compiled_fk(chain(3.4)).accelerate()
    assert not os.path.islink(module_path) and open(module_path).read() == elsewhere.read_text()


def test_a_fifo_module_entry_does_not_hang_the_load(cache):
    """A FIFO where the generated module belongs (a plain ``open`` waits for a writer forever):
    replaced and compiled, in a fresh process with a timeout."""
    module_path, _ = _compiled_names(chain(3.5), cache)
    os.remove(module_path)
    os.mkfifo(module_path)
    code = textwrap.dedent(f"""
        import warnings
        from robokin_ros import RobotModel
        from robokin_ros.kernels.fk_codegen import compiled_fk
        model = RobotModel.from_urdf({chain_urdf(3.5)!r})
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            print(compiled_fk(model).accelerate())
        """)
    env = {**os.environ, "ROBOKIN_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert result.stdout.strip() == "True", result.stderr[-2000:]
    assert stat.S_ISREG(os.lstat(module_path).st_mode)


def test_a_shared_numba_cache_dir_keeps_numpy(cache, tmp_path, monkeypatch):
    """With ``NUMBA_CACHE_DIR`` set, numba keeps (and unpickles) its index files there instead:
    a directory others can write keeps the kernel on numpy, with the reason."""
    shared = tmp_path / "numba"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(shared))
    kernel = compiled_fk(chain(3.6))
    with pytest.warns(RuntimeWarning, match="unavailable, using numpy .*NUMBA_CACHE_DIR .*writable by group or others"):
        assert not kernel.accelerate()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "private_numba"))
    assert compiled_fk(chain(3.7)).accelerate()
