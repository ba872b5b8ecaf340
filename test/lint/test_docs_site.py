"""The documentation site builds without a warning: Sphinx with MyST over docs/*.md and the API
reference from the docstrings, as ``make docs`` builds it (``-W -n``: a broken cross-reference,
a docstring that does not parse, a page outside the table of contents fails). ``make test`` runs
``make docs`` first too; this test lets ``python -m pytest`` alone catch the same warnings."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("sphinx", reason="the docs tools (tools/requirements-docs.txt) are not installed here")
pytest.importorskip("myst_parser", reason="the docs tools (tools/requirements-docs.txt) are not installed here")


def test_make_docs_builds_with_the_same_flags():
    recipe = re.search(r"^docs:.*\n((?:\t.*\n)*)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe and "python -m sphinx -b html -E -W -n" in recipe.group(1)
    assert re.search(r"^test:.*\bdocs\b", (ROOT / "Makefile").read_text(), re.M)


@pytest.mark.slow
def test_the_docs_site_builds_without_a_warning(tmp_path):
    result = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W", "-n", "--keep-going", "-q",
                             str(ROOT / "docs"), str(tmp_path / "site")], capture_output=True, text=True, timeout=900)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr[-6000:]
    site = tmp_path / "site"
    pages = {p.relative_to(ROOT / "docs").with_suffix(".html") for p in (ROOT / "docs").rglob("*.md")}
    assert {p for p in pages if not (site / p).is_file()} == set()
    # the reference holds the public face, generated from the docstrings
    reference = (site / "reference" / "robokin_ros.html").read_text()
    assert 'id="robokin_ros.solve_ik"' in reference and 'id="robokin_ros.RobotModel"' in reference
