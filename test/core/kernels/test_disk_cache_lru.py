"""The kernel cache deletes the least recently used modules first (issue 38)."""

from __future__ import annotations

import os

from robokin_ros.kernels import disk_cache


def _module(folder: str, k: int, written: float) -> str:
    name = f"{disk_cache.MODULE_PREFIX}{k:024d}"
    path = disk_cache.store_module(folder, name, f"x = {k}\n")
    os.utime(path, (written, written))
    os.utime(os.path.join(folder, name + disk_cache.USED_SUFFIX), (written, written))
    return name


def test_prune_keeps_what_was_used_last_not_what_was_written_last(tmp_path, monkeypatch):
    folder = str(tmp_path)
    os.chmod(folder, 0o700)
    names = [_module(folder, k, 1000.0 + k) for k in range(5)]   # written in order 0..4
    disk_cache.store_module(folder, names[0], "x = 0\n")          # module 0 used again, now
    monkeypatch.setenv("ROBOKIN_CACHE_MAX_ENTRIES", "3")
    disk_cache.prune(folder, keep=names[4])
    left = sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".py"))
    assert left == sorted([names[0], names[3], names[4]])
    assert not os.path.exists(os.path.join(folder, names[1] + disk_cache.USED_SUFFIX))   # markers go too

