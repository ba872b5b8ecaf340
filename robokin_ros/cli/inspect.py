"""``robokin check`` and ``robokin tree``: the robot's structure as text, DOT or a picture."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ..errors import URDFError
from ..model import JointType, RobotModel
from ..model.warning_groups import grouped_warnings
from . import common, meshes
from .arguments import capped
from .tree_picture import FOLD_FIXED_PAST, draw_tree, tree_nodes


def add_commands(commands) -> None:
    check = commands.add_parser("check", help="parse and validate a URDF (like check_urdf)",
                                description="Parse FILE, print its tree (as urdfdom's check_urdf does), DOF, the "
                                            "default tip (the tip of the node's default IK group), a joint table, "
                                            "the load warnings with input lines and a line for mesh files not "
                                            "found; exit 1 on errors.")
    common.add_file(check)
    meshes.add_options(check)
    check.set_defaults(run=run_check)
    tree = commands.add_parser("tree", help="the kinematic tree as text, DOT, SVG or PNG",
                               description="The tree of links (boxes) and joints (edges, with their types).")
    common.add_file(tree)
    tree.add_argument("--format", choices=("text", "dot", "svg", "png"), default="text")
    tree.add_argument("-o", "--output", help="output file (default: stdout for text/dot, robot_tree.<format>)")
    tree.add_argument("--fold-fixed", action=argparse.BooleanOptionalAction, default=None,
                      help="merge links joined by fixed joints into one node (default: in pictures of robots of "
                           f"more than {FOLD_FIXED_PAST} links)")
    tree.set_defaults(run=run_tree)


# ---------------------------------------------------------------------------- check
def _depth_first(children) -> list[tuple[int, int, int]]:
    """``(node, its 1-based position among its siblings, depth)`` of every node below node 0 of
    the tree ``children[i]`` (children in order), in depth-first pre-order; iterative, so a chain
    of any length works."""
    out, stack = [], [(c, n, 1) for n, c in reversed(list(enumerate(children[0], start=1)))]
    while stack:
        i, n, depth = stack.pop()
        out.append((i, n, depth))
        stack += [(c, k, depth + 1) for k, c in reversed(list(enumerate(children[i], start=1)))]
    return out


def _limits(model: RobotModel, j: int) -> str:
    lo, hi = model.joint_lower[j], model.joint_upper[j]
    return "-" if not (np.isfinite(lo) or np.isfinite(hi)) else f"[{lo:.4g}, {hi:.4g}]"


def run_check(args) -> int:
    try:
        model, _ = common.load(args.file)
    except URDFError as error:
        print(f"Error: {args.file} is not a valid robot description")
        print(capped("\n".join(f"  {problem}" for problem in error.problems)))
        return 1
    print(f"robot name is: {model.name}")
    print("---------- Successfully Parsed XML ---------------")
    kids = model.link_children
    root = model.link_names[0]
    print(f"root Link: {root} has {len(kids[0])} child(ren)")
    for i, n, depth in _depth_first(kids):   # (a stack, not recursion: chains thousands of links deep)
        print(f"{'  ' * (depth + 1)}child({n}):  {model.link_names[i]}")
    print(f"\n{model.n_links} links, {model.n_joints} joints, DOF: n_q = {model.n_q}, n_v = {model.n_v}")
    tip, why = common.default_tip(model)
    print(f"default tip: {tip} ({why})")
    print(f"{'joint':32} {'type':10} {'parent -> child':48} {'limits':22} mimic")
    for j, name in enumerate(model.all_joint_names):
        kind = JointType(model.joint_types[j]).name.lower()
        edge = f"{model.link_names[model.link_parents[j + 1]]} -> {model.link_names[j + 1]}"
        mimic = ""
        if model.mimic_source[j] >= 0:
            mimic = (f"{model.all_joint_names[model.mimic_source[j]]} x {model.mimic_multiplier[j]:g} "
                     f"+ {model.mimic_offset[j]:g}")
        print(f"{name:32} {kind:10} {edge:48} {_limits(model, j):22} {mimic}")
    if model.load_warnings:
        kinds = grouped_warnings(model.load_warnings)
        print(f"\n{len(model.load_warnings)} warning(s) of {len(kinds)} kind(s) (parts the model does not use; "
              "loaded anyway):")
        for line in kinds:
            print(f"  {line}")
    files = meshes.from_args(args)
    for g in (g for geometries in (*(model.link_visuals or ()), *model.link_collisions) for g in geometries):
        if g.shape == "mesh":
            files.find(g.filename)
    for line in files.summary("'robokin show' and 'robokin view' draw their links without them"):
        print(f"\nwarning: {line}")
    return 0


# ---------------------------------------------------------------------------- tree
def dot_source(model: RobotModel, fold_fixed: bool = False) -> str:
    """Graphviz DOT of the tree: links as boxes, joints as labelled edges."""
    def quote(text: str) -> str:
        return '"' + text.replace('"', '\\"') + '"'
    nodes, edges = tree_nodes(model, fold_fixed)
    lines = [f"digraph {quote(model.name)} {{", "  rankdir=TB;", "  node [shape=box, fontsize=10];",
             "  edge [fontsize=8];"]
    lines += [f"  n{i} [label={quote(label)}];" for i, label in nodes.items()]
    lines += [f"  n{a} -> n{b} [label={quote(label)}];" for a, b, label in edges]
    return "\n".join(lines) + "\n}\n"


def text_tree(model: RobotModel, fold_fixed: bool = False) -> str:
    nodes, edges = tree_nodes(model, fold_fixed)
    children: dict[int, list] = {}
    for a, b, label in edges:
        children.setdefault(a, []).append((b, label.replace("\\n", " ")))
    out = [nodes[0].replace("\\n", " + ")]

    def entries(i: int, prefix: str) -> list:
        kids = children.get(i, [])
        return [(c, label, prefix, k == len(kids) - 1) for k, (c, label) in reversed(list(enumerate(kids)))]
    stack = entries(0, "")   # depth-first with a stack, not recursion: chains of any length
    while stack:
        c, label, prefix, last = stack.pop()
        out.append(f"{prefix}{'└── ' if last else '├── '}{label} → {nodes[c].replace(chr(92) + 'n', ' + ')}")
        stack += entries(c, prefix + ("    " if last else "│   "))
    return "\n".join(out) + "\n"


def run_tree(args) -> int:
    model, _ = common.load(args.file)
    if args.format in ("text", "dot"):
        fold = bool(args.fold_fixed)
        text = text_tree(model, fold) if args.format == "text" else dot_source(model, fold)
        if args.output:
            with open(args.output, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    path = args.output or f"robot_tree.{args.format}"
    draw_tree(model, path, args.fold_fixed)
    print(path)
    return 0
