"""No process-wide side effects and no private internals of other libraries in the package
(issue 38, item 4), checked from its source:

- no ``gc.disable(`` (a library call must not switch the process's garbage collector), no
  ``gc.get_objects(`` (finding another library's objects by scanning the heap), no
  ``inspect.getsource(`` (code reused as text, not by import);
- no private member of numba, llvmlite, viser or websockets: no attribute chain from one of them
  (``numba.core._x``), no ``from numba... import _x`` or ``import viser._viser``, and none of the
  private members the package once reached into (``._cache``, ``._load_index``,
  ``._websock_server``...) on anything but ``self`` / ``cls``;
- no reading of numba's cache files (their names and format are numba's private matter: the
  package keeps its own :class:`~robokin_ros.kernels.compile_record.CompileRecord`): no ``.nbi``
  or ``.nbc`` in its source.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "robokin_ros"
SOURCES = sorted(PACKAGE.rglob("*.py"))

#: Calls with process-wide effects or that read other code as text.
FORBIDDEN_CALLS = ("gc.disable(", "gc.get_objects(", "inspect.getsource(")

#: Libraries whose private members the package must not touch.
FOREIGN = ("numba", "llvmlite", "viser", "websockets")

#: Private members of those libraries' objects (met in this package before): on anything but
#: ``self`` / ``cls`` an access to one is refused, whatever the object's name.
FOREIGN_PRIVATE = frozenset({
    "_cache", "_cache_file", "_load_index", "_cache_path", "_index_path", "_can_compile", "_cache_hits",
    "_cache_misses", "_websock_server", "_server_thread", "_background_event_loop", "_live_connections",
    "_client_state_from_id", "_thread_executor", "_share_tunnel", "_port",
})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _chain(node: ast.AST) -> list[str] | None:
    """``["numba", "core", "_x"]`` for ``numba.core._x`` (None when not rooted at a name)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _foreign_names(tree: ast.Module) -> set[str]:
    """Names bound in the module to one of :data:`FOREIGN` or a module under it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FOREIGN:
                    names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in FOREIGN:
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def private_uses(source: str) -> list[str]:
    """Each private member of :data:`FOREIGN` the source reaches, as ``line: what``."""
    tree = ast.parse(source)
    foreign = _foreign_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] in FOREIGN and any(map(_private, a.name.split(".")))]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in FOREIGN:
            if any(map(_private, node.module.split("."))) or any(_private(a.name) for a in node.names):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Attribute):
            chain = _chain(node)
            if chain and chain[0] in foreign and _private(node.attr):
                found.append(f"{node.lineno}: {'.'.join(chain)}")
            elif node.attr in FOREIGN_PRIVATE and not (isinstance(node.value, ast.Name)
                                                       and node.value.id in ("self", "cls")):
                found.append(f"{node.lineno}: .{node.attr}")
    return found


@pytest.mark.parametrize("call", FORBIDDEN_CALLS)
def test_no_process_wide_switch_heap_scan_or_source_text(call):
    pattern = re.compile(re.escape(call).replace(r"\.", r"\s*\.\s*").replace(r"\(", r"\s*\("))
    hits = [f"{path.relative_to(ROOT)}:{source[:m.start()].count(chr(10)) + 1}"
            for path in SOURCES for source in [path.read_text(encoding="utf-8")]
            for m in pattern.finditer(source)]
    assert not hits, f"{call} in the package: {', '.join(hits)}"


def test_no_reading_of_numbas_cache_files():
    pattern = re.compile(r"\.nb[ic]\b")
    hits = [f"{path.relative_to(ROOT)}:{source[:m.start()].count(chr(10)) + 1}" for path in SOURCES
            for source in [path.read_text(encoding="utf-8")] for m in pattern.finditer(source)]
    assert not hits, "numba's cache files named in the package: " + ", ".join(hits)


def test_no_private_member_of_numba_llvmlite_viser_or_websockets():
    hits = [f"{path.relative_to(ROOT)}:{use}" for path in SOURCES
            for use in private_uses(path.read_text(encoding="utf-8"))]
    assert not hits, "private members of other libraries used: " + "; ".join(hits)


@pytest.mark.parametrize("source", [
    "import numba\nnumba.core._private_thing",
    "def f(function):\n    return function._cache._cache_file._load_index()",
    "from viser import _viser",
    "import viser._viser",
    "def f(server):\n    return server._websock_server",
    "from numba.core.dispatcher import _CompileStats",
])
def test_the_check_sees_what_it_refuses(source):
    assert private_uses(source)


@pytest.mark.parametrize("source", [
    "class A:\n    def f(self):\n        return self._cache",
    "import numba\nnumba.njit",
    "def f(cm):\n    return cm._transforms",
])
def test_the_check_lets_own_members_pass(source):
    assert not private_uses(source)
