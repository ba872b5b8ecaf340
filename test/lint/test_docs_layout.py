"""docs/architecture.md's Layout names every module of the package, and no module that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "robokin_ros"


def layout() -> dict[str, set[str]]:
    """Folder (``robokin_ros``, ``robokin_ros/model``, ...) -> the names its Layout lines give."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    names: dict[str, set[str]] = {}
    folder = None
    for line in block.splitlines():
        match = re.match(r"^(robokin_ros(?:/\w+)?)/\s+(.*)$", line)
        if match:
            folder, rest = match.group(1), match.group(2)
        elif line.startswith(" ") and folder is not None:
            rest = line
        else:
            folder = None
            continue
        rest = re.sub(r"\([^)]*\)", " ", rest)   # (explanations)
        names.setdefault(folder, set()).update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rest))
    return names


def modules() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        folder = path.parent.relative_to(ROOT).as_posix()
        if path.stem != "__init__" or folder == "robokin_ros":   # (a subpackage's face is its folder)
            found.setdefault(folder, set()).add(path.stem)
    return found


def test_the_layout_names_every_module():
    named = layout()
    missing = {folder: sorted(stems - named.get(folder, set())) for folder, stems in modules().items()}
    missing = {folder: stems for folder, stems in missing.items() if stems}
    assert not missing, f"docs/architecture.md's Layout does not name these modules: {missing}"


def test_the_layout_names_no_module_that_is_gone():
    found = modules()
    for folder, names in layout().items():
        assert folder in found, f"docs/architecture.md's Layout names a folder that is gone: {folder}"
        gone = sorted(n for n in names if n not in found[folder] and n not in _WORDS)
        assert not gone, f"docs/architecture.md's Layout names modules {folder} does not have: {gone}"


#: Words of the Layout lines that are not module names.
_WORDS = {"the", "robokin", "command", "only", "code", "importing", "rclpy", "public", "face", "documented",
          "paths", "robots", "urdf", "srdf", "panda", "py", "typed", "wiring", "rnea", "crba", "aba", "__init__"}
