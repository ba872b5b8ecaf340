"""Every Python example of the README and of docs/ runs as written (from the repository root),
every relative link in them leads to a file and an anchor that exist, and the README stays one
page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _examples():
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            line = text[:match.start()].count("\n") + 1
            name = f"{page.relative_to(ROOT)}:{line}"
            marks = () if page.name == "README.md" else (pytest.mark.slow,)   # docs/: make test only
            yield pytest.param(name, match.group(1), id=name, marks=marks)


@pytest.mark.parametrize("name, code", list(_examples()))
def test_the_example_runs(name, code, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(code, name, "exec"), {"__name__": "__example__"})   # noqa: S102 - the project's own docs


def test_the_readme_has_an_example_and_fits_on_a_page():
    text = (ROOT / "README.md").read_text()
    assert BLOCK.search(text)
    assert len(text.splitlines()) <= 250


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings."""
    return {re.sub(r"[^\w\- ]", "", m.strip().lower()).replace(" ", "-")
            for m in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file.read_text()):
            broken.append(target)
    assert broken == []
