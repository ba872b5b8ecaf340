"""The shape of the package, checked from its source: the layering (no import circles, no import
that climbs back up), no private name imported across modules, and the size limits of issue 29
(no function over cyclomatic complexity 15 — ruff's C901, in ruff.toml —, no public function
with more than 12 parameters but ``solve_ik``'s documented face, no call passing more than 6
positional arguments, no module over 600 lines, one home for the single-configuration guard).

Run it alone to see the layering: ``python -m pytest test/lint/test_code_shape.py -q``; a
failure names the modules, lines and functions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "robokin_ros"

#: Floors of the package's rooms, top down (a room imports only rooms on lower floors, or itself).
#: Front ends on top, then the algorithms, the kernels, the model, and the foundations.
FLOORS: dict[str, int] = {
    "__main__": 12,
    "node": 11, "cli": 11,
    "web": 10,
    "__init__": 9, "reach": 9, "servo": 9, "cartesian": 9,
    "ik": 8,
    "collision": 7,
    "kinematics": 6,
    "dynamics": 5, "accel": 5,
    "kernels": 4, "srdf": 4,
    "model": 3,
    "checks": 2,
    "errors": 1, "spatial": 1, "model_cache": 1, "free_cores": 1,
    "runtime": 2,
    "robots": 0,
}

#: Public functions allowed more than MAX_PARAMETERS parameters: the documented faces that keep
#: the keyword arguments users already write (solve_ik: IKOptions's 17 fields as explicit
#: keyword-only parameters, visible to IDEs and type checkers, held equal to the fields by
#: test/core/ik/test_ik.py::test_solve_ik_shows_every_option_with_its_default).
WIDE_FACES = {("ik/solve.py", "solve_ik")}
MAX_PARAMETERS = 12
MAX_POSITIONAL = 6
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    """Dotted module name (``robokin_ros.ik.solve``) -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom | ast.Import, is_package: bool) -> list[str]:
    """The package modules an import statement in ``module`` names (absolute, within the package)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - node.level + 1]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        # `from . import ik` names a module; `from .x import f` names module x.
        names = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in MODULES else prefix for alias in node.names]
    return [name for name in names if name.split(".")[0] == "robokin_ros" and name in MODULES]


def _typing_only(tree: ast.Module) -> set[int]:
    """ids of the import statements under ``if TYPE_CHECKING:`` (never run: no arrow)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return out


def _graph(with_typing_only: bool = False) -> dict[str, set[str]]:
    """module -> modules it imports when it runs (module-level and inside functions alike), and
    with ``with_typing_only`` those it imports under ``if TYPE_CHECKING:`` too."""
    graph = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only = set() if with_typing_only else _typing_only(tree)
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in typing_only:
                edges.update(_resolve(module, node, path.name == "__init__.py"))
        edges.discard(module)
        graph[module] = edges
    return graph


GRAPH = _graph()


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_every_room_has_a_floor():
    rooms = {_room(m) for m in MODULES}
    assert rooms <= set(FLOORS), f"rooms without a floor in FLOORS: {sorted(rooms - set(FLOORS))}"


def test_no_import_circle_between_modules():
    """Among all modules, imports inside functions included (a lazy import is still an arrow)."""
    assert _cycles(GRAPH) == []


def test_no_import_circle_even_through_typing_only_imports():
    """Imports under ``if TYPE_CHECKING:`` never run, but they are still a dependency of the design:
    a module that names a class for its type hints depends on it (issue 38: ``model/configuration``
    and ``model/fields`` named ``RobotModel``, whose module imports them)."""
    assert _cycles(_graph(with_typing_only=True)) == []


def test_no_import_climbs_back_up():
    upward = [f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets
              if _room(a) != _room(b) and FLOORS[_room(b)] >= FLOORS[_room(a)]
              and _room(a) != "__init__"]   # the package's face re-exports from every room below it
    # The package face (robokin_ros/__init__) sits on floor 9: only rooms above it may import it.
    face = [f"{a} -> robokin_ros" for a, targets in GRAPH.items() if "robokin_ros" in targets
            and FLOORS[_room(a)] <= FLOORS["__init__"] and _room(a) != "__init__"]
    assert upward + face == []


def test_the_core_never_imports_the_node():
    core = [m for m in GRAPH if _room(m) != "node"]
    assert [f"{m} -> {t}" for m in core for t in GRAPH[m] if _room(t) == "node"] == []


def test_no_private_name_is_imported_across_modules():
    found = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                found += [f"{module}: from {'.' * node.level}{node.module or ''} import {alias.name}"
                          for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == []


def _functions():
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.relative_to(PACKAGE).as_posix(), node


def _parameter_count(node: ast.FunctionDef) -> int:
    a = node.args
    names = [x.arg for x in a.posonlyargs + a.args]
    count = len(names) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return count - (bool(names) and names[0] in ("self", "cls"))


def test_no_public_function_takes_more_than_twelve_parameters():
    wide = [f"{file}:{node.lineno} {node.name} ({_parameter_count(node)})" for file, node in _functions()
            if not node.name.startswith("_") and _parameter_count(node) > MAX_PARAMETERS
            and (file, node.name) not in WIDE_FACES]
    assert wide == []


def test_no_call_passes_more_than_six_positional_arguments():
    long_calls = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                positional = [x for x in node.args if not isinstance(x, ast.Starred)]
                if len(positional) > MAX_POSITIONAL:
                    long_calls.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node.func)}"
                                      f" ({len(positional)} positional)")
    assert long_calls == []


def test_no_module_is_over_600_lines():
    long_modules = {str(p.relative_to(PACKAGE)): n for p in MODULES.values()
                    if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long_modules == {}


#: The single-configuration guard ("one plain float64 ndarray") spelled out by hand.
GUARD = re.compile(r"type\([^()]*\) is (not )?np\.ndarray")


def test_the_single_configuration_guard_has_one_home():
    """``checks.is_single_vector`` owns the test; no other module spells it again."""
    spelled = [f"{p.relative_to(PACKAGE)}:{i}" for p in MODULES.values()
               for i, line in enumerate(p.read_text().splitlines(), 1)
               if GUARD.search(line) and p.name != "checks.py"]
    assert spelled == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("robokin_ros.node.")))
def test_the_node_uses_only_the_public_face_of_ik(module):
    deep = sorted(t for t in GRAPH[module] if t.startswith("robokin_ros.ik."))
    assert deep == []


def test_the_checks_find_what_they_look_for():
    """The scans above can fail: each finds its pattern in a small planted source."""
    planted = ast.parse("def f(a, b, c, d, e, f, g, h, i, j, k, l, m):\n    g(1, 2, 3, 4, 5, 6, 7)\n")
    function = planted.body[0]
    assert _parameter_count(function) == 13
    call = function.body[0].value
    assert len(call.args) == 7
    assert GUARD.search("if type(q) is np.ndarray and q.ndim == 1:")
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    typed = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import Y\nfrom .z import W\n")
    assert [type(typed.body[i]) in (ast.ImportFrom,) and id(typed.body[i]) in _typing_only(typed) for i in (0, 2)] \
        == [False, False]
    assert id(typed.body[1].body[0]) in _typing_only(typed)
