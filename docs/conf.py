"""Sphinx configuration of the robokin_ros documentation site (``make docs``).

Sphinx with MyST Markdown, as rosdoc2 builds a ROS 2 package's documentation: the pages are the
Markdown files beside this one (``index.md`` holds the table of contents and includes the
README), the API reference under ``reference/`` comes from the docstrings (autodoc, Google style
through napoleon). ``make docs`` builds it into ``.build/docs`` with ``-W -n``: a warning, a
broken cross-reference included, fails the build. The pins are in tools/requirements-docs.txt.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # document this checkout, not an installed copy

import robokin_ros  # noqa: E402 - after the path above

project = "robokin_ros"
author = "robokin_ros maintainers"
copyright = "robokin_ros maintainers, Apache-2.0"   # noqa: A001 - Sphinx's name
release = version = robokin_ros.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# MyST: GitHub's heading anchors (the pages link to ``node.md#parameters`` as GitHub renders it),
# and ```python / ```bash blocks stay plain code blocks.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# autodoc: members in the order of ``__all__`` / the source; type hints in the description, where
# they do not crowd the signature.
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True   # a NamedTuple's "Attributes:" and its documented fields are one entry, not two

# -n: every cross-reference must resolve. These name other projects' types (no intersphinx: the
# build runs offline) and the shapes written in the docstrings' type slots.
nitpicky = True
nitpick_ignore_regex = [
    ("py:.*", r"(numpy|np|numpy\.typing|npt|collections\.abc|typing|typing_extensions|pathlib|os|concurrent"
              r"|threading|enum|abc|dataclasses|builtins|viser|coal|ray|trimesh)\..*"),
    ("py:.*", r"(np|numpy)\.ndarray|ndarray|NDArray|ArrayLike|Path|Sequence|Iterable|Mapping|Callable|Iterator"),
    ("py:.*", r"\.\.\..*|\(.*|.*\)|optional|default.*|array.*|int|float|bool|str|bytes|None|object|dict|list|tuple"),
]

html_theme = "alabaster"
html_title = "robokin_ros"
html_theme_options = {"page_width": "1240px", "sidebar_width": "260px"}
html_static_path: list[str] = []


def _documented_home(app, env, node, contnode):
    """Resolve a Python reference that autodoc's names miss, to what the reader needs:

    - a name behind the public face (``robokin_ros.ik.result.IKResult``, as type hints name a
      class; ``IKResult`` or ``RobotModel.create`` from a module docstring) to the documented
      object with the same dotted tail, the shortest name first (``robokin_ros.IKResult``);
    - an undocumented name (``robokin_ros.kernels.accel.MIN_BATCH``) to the module that holds it,
      on the module map (reference/modules.md).

    Anything else stays unresolved, and ``-n`` fails the build on it.
    """
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = node["reftarget"].lstrip(".~")
    tail = "." + target.split("robokin_ros.", 1)[-1] if target.startswith("robokin_ros.") else "." + target
    while tail.count(".") > 1 and not any(name.endswith(tail) for name in domain.objects):
        tail = "." + tail.split(".", 2)[-1]   # robokin_ros.ik.result.IKResult -> .IKResult
    homes = sorted((name for name in domain.objects
                    if name.startswith("robokin_ros") and (name + ".").endswith(tail + ".")
                    and domain.objects[name].objtype != "module"), key=len)
    if not homes:
        homes = _holding_module(domain, target, node.get("py:module") or "")
    if not homes:
        return None
    reftype = "mod" if homes[0] in domain.modules and domain.objects[homes[0]].objtype == "module" else "obj"
    return domain.resolve_xref(env, node["refdoc"], app.builder, reftype, homes[0], node, contnode)


def _holding_module(domain, target: str, context: str) -> list[str]:
    """The module on the module map that holds ``target``: its dotted prefix when it names one
    (``robokin_ros.kernels.accel.MIN_BATCH``), else the shortest module under the docstring's
    package (``context``) whose namespace has the name (``mesh_uri_problem`` from
    ``robokin_ros.collision``)."""
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:i]) in domain.modules:
            return [".".join(parts[:i])]
    if not context.startswith("robokin_ros"):
        return []
    for name in sorted((m for m in domain.modules if m == context or m.startswith(context + ".")), key=len):
        try:
            if hasattr(importlib.import_module(name), parts[0]):
                return [name]
        except ImportError:   # a module that needs what this machine lacks (rclpy, viser)
            continue
    return []


class ReadmeIsTheFrontPage(SphinxPostTransform):
    """The pages' ``../README.md`` links (right on GitHub) lead to the site's front page, which
    includes the README (index.md); runs before MyST resolves document links."""

    default_priority = 8

    def run(self, **kwargs):
        readme = Path(self.env.srcdir, "..", "README").resolve()
        for node in self.document.findall(addnodes.pending_xref):
            if node.get("reftype") == "myst" and node.get("refdomain") == "doc" and \
                    Path(self.env.srcdir, node["reftarget"]).resolve() == readme:
                node["reftarget"] = root_doc


def _comma_names(app, what, name, obj, options, lines):
    """``lower, upper: ...`` (one entry for several names, good Google style) reaches Sphinx as
    ``:ivar lower, upper:``, which it would read as a type ``lower,`` and a name ``upper``: join the
    names with a comma and a zero-width space, so the entry keeps both names and no type."""
    for i, line in enumerate(lines):
        match = re.match(r"(\s*:(?:ivar|param|var|cvar) )([\w*]+(?:, [\w*]+)+):(.*)", line)
        if match:
            lines[i] = match.group(1) + match.group(2).replace(", ", ",\u200b") + ":" + match.group(3)


class ModuleMap(SphinxDirective):
    """``modulemap``: every module of the package with the first line of its docstring, read from
    the source (nothing imported), as a ``py:module`` target, so ``:mod:`` references to the
    modules behind the public face (``robokin_ros.ik.solve``) lead somewhere. Modules with a page
    of their own (``automodule``) are listed with a link instead."""

    has_content = True

    def run(self):
        documented = set(self.content)
        out = []
        for path in sorted((ROOT / "robokin_ros").rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            summary = doc.strip().split("\n\n")[0].replace("\n", " ")
            if name not in documented:
                out += self.parse_text_to_nodes(f".. py:module:: {name}\n   :no-contents-entry:\n")
            para = nodes.paragraph()
            para += nodes.literal(name, name)
            para += nodes.Text(": " + summary if summary else "")
            out.append(para)
        return out


def setup(app):
    app.add_directive("modulemap", ModuleMap)
    app.connect("missing-reference", _documented_home)
    app.add_post_transform(ReadmeIsTheFrontPage)
    app.connect("autodoc-process-docstring", _comma_names, priority=600)   # after napoleon (500)
