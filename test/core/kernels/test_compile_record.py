"""Our own record that numba's cache holds a module compiled (robokin_ros/kernels/compile_record.py):
it names the module's file (bytes, modification time, size), the interpreter, numba and the
machine, so any change reads as not compiled; numba's own files are never read."""

from __future__ import annotations

import os

import pytest

from robokin_ros.kernels.compile_record import CompileRecord

pytest.importorskip("numba", reason="the record describes numba's cache")


def test_a_record_holds_for_the_very_file_it_was_written_for(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    module = tmp_path / "some_kernels.py"
    module.write_text("x = 1\n")
    record = CompileRecord(str(module))
    assert not record.holds()
    record.write()
    assert record.holds()
    assert os.path.dirname(record.location()) == str(tmp_path / "__pycache__")   # beside numba's own files
    os.utime(module, ns=(1, 1))                 # numba checks the modification time: so does the record
    assert not record.holds()
    record.write()
    module.write_text("x = 2\n")                # other bytes
    assert not record.holds()
    record.write()
    assert record.holds()
    record.remove()
    assert not record.holds()


def test_a_record_names_numba_cache_dir_and_then_lives_in_the_kernel_cache(tmp_path, monkeypatch):
    module = tmp_path / "mod.py"
    module.write_text("y = 1\n")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    record = CompileRecord(str(module))
    record.write()
    numba_dir = tmp_path / "numba"
    numba_dir.mkdir(mode=0o700)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(numba_dir))
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path / "robokin"))
    assert not record.holds()                   # another cache of numba's
    assert record.location().startswith(str(tmp_path / "robokin"))
    record.write()
    assert record.holds()


def test_a_record_that_is_not_a_regular_file_of_ours_does_not_hold(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    module = tmp_path / "m.py"
    module.write_text("z = 1\n")
    record = CompileRecord(str(module))
    record.write()
    target = record.location() + ".real"
    os.replace(record.location(), target)
    os.symlink(target, record.location())
    assert not record.holds()
