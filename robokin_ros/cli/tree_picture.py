"""The kinematic tree as nodes and edges (:func:`tree_nodes`), and as a picture without overlaps
(:func:`tree_figure`, :func:`draw_tree`).

The picture is a tidy tree measured in points: every link box carries its joint's label above
it, each subtree is allotted the width of its widest level (the sum of its children's
allotments, or its own label's width), children sit side by side inside their parent's
allotment, and each depth is a row as tall as its tallest box. Allotments of different
subtrees never share an x range and rows never share a y range, so no two labels overlap
whatever the robot's width. Links joined by fixed joints fold into their parent's box by default
on robots of more than :data:`FOLD_FIXED_PAST` links.
"""

from __future__ import annotations

import dataclasses

from ..model import JointType, RobotModel

#: Pictures of robots with more links than this fold fixed joints by default (``--fold-fixed``
#: / ``--no-fold-fixed`` decide otherwise).
FOLD_FIXED_PAST = 20
#: Names a folded box lists before "+K fixed".
FOLDED_NAMES = 3
#: [pt] font sizes of link boxes and joint labels; padding inside a box; space between
#: allotments, between rows, and between a joint label and its box.
LINK_PT, JOINT_PT, PAD, GAP_X, GAP_Y, GAP_LABEL = 7.0, 6.0, 2.1, 10.0, 16.0, 2.0
#: Largest side of a PNG [pixels]: a bigger tree is saved at a lower resolution.
MAX_PIXELS = 30_000


def tree_nodes(model: RobotModel, fold_fixed: bool = False) -> tuple[dict[int, str], list[tuple[int, int, str]]]:
    """The tree as (label per node, edges ``(parent node, child node, joint label)``); a node is
    a link index, its label the link's name (``\\n``-separated names of the links folded into
    it with ``fold_fixed``: up to :data:`FOLDED_NAMES` + 1 names, else the first ones and
    ``+K fixed``), an edge label ``name\\n(type)``."""
    node_of = list(range(model.n_links))
    labels = {i: [name] for i, name in enumerate(model.link_names)}
    edges = []
    for j, name in enumerate(model.all_joint_names):
        parent, child = node_of[model.link_parents[j + 1]], j + 1
        kind = JointType(model.joint_types[j]).name.lower()
        if fold_fixed and kind == "fixed":
            node_of[child] = parent
            labels[parent].append(model.link_names[child])
            del labels[child]
            continue
        edges.append((parent, child, f"{name}\\n({kind})"))
    return {i: "\\n".join(names if len(names) <= FOLDED_NAMES + 1
                          else names[:FOLDED_NAMES] + [f"+{len(names) - FOLDED_NAMES} fixed"])
            for i, names in labels.items()}, edges


def folds_by_default(model: RobotModel) -> bool:
    """Whether a picture of ``model`` folds its fixed joints when not told."""
    return model.n_links > FOLD_FIXED_PAST


@dataclasses.dataclass
class TreeLayout:
    """Where the tree's labels go, in points (y down from the top).

    Attributes:
        labels: node -> link label (lines joined by newlines).
        joints: child node -> its joint's label.
        parent: child node -> parent node.
        x: node -> centre of its box and joint label.
        box_y: node -> centre of its box. joint_y: child node -> centre of its joint label.
        box_size: node -> (width, height) of its box, padding included.
        joint_height: child node -> height of its joint label.
        width, height: the whole tree's extent.
    """

    labels: dict[int, str]
    joints: dict[int, str]
    parent: dict[int, int]
    x: dict[int, float]
    box_y: dict[int, float]
    joint_y: dict[int, float]
    box_size: dict[int, tuple[float, float]]
    joint_height: dict[int, float]
    width: float
    height: float


class _Measure:
    """Text extents [pt] as matplotlib's Agg renderer sets them at 72 dpi."""

    def __init__(self):
        from matplotlib.backends.backend_agg import RendererAgg
        from matplotlib.font_manager import FontProperties
        self.renderer, self.fonts = RendererAgg(8, 8, 72), {}
        self.font = lambda size: self.fonts.setdefault(size, FontProperties(size=size))

    def __call__(self, text: str, size: float) -> tuple[float, float]:
        lines = text.split("\n")
        widths = [self.renderer.get_text_width_height_descent(line, self.font(size), ismath=False)[0]
                  for line in lines]
        return max(widths), size * (1.2 * len(lines) + 0.2)


def tree_layout(model: RobotModel, fold_fixed: bool) -> TreeLayout:
    """The tidy layout of :func:`tree_nodes` (see the module's docstring)."""
    nodes, edges = tree_nodes(model, fold_fixed)
    labels = {i: label.replace("\\n", "\n") for i, label in nodes.items()}
    joints = {b: label.replace("\\n", "\n") for _, b, label in edges}
    parent = {b: a for a, b, _ in edges}
    children: dict[int, list[int]] = {i: [] for i in labels}
    for a, b, _ in edges:
        children[a].append(b)
    measure = _Measure()
    box = {i: tuple(v + 2 * PAD for v in measure(text, LINK_PT)) for i, text in labels.items()}
    joint = {i: measure(text, JOINT_PT) for i, text in joints.items()}
    order, depth = _preorder(children)
    allotted = {}
    for i in reversed(order):   # children before parents
        own = max(box[i][0], joint[i][0] if i in joint else 0.0) + GAP_X
        allotted[i] = max(own, sum(allotted[c] for c in children[i]))
    rows = max(depth.values()) + 1
    label_h, box_h = [0.0] * rows, [0.0] * rows
    for i in order:
        label_h[depth[i]] = max(label_h[depth[i]], joint[i][1] + GAP_LABEL if i in joint else 0.0)
        box_h[depth[i]] = max(box_h[depth[i]], box[i][1])
    tops = [0.0]
    for d in range(rows):
        tops.append(tops[-1] + label_h[d] + box_h[d] + GAP_Y)
    left, x, box_y, joint_y = {0: 0.0}, {}, {}, {}
    for i in order:
        x[i] = left[i] + allotted[i] / 2
        start = x[i] - sum(allotted[c] for c in children[i]) / 2
        for c in children[i]:
            left[c], start = start, start + allotted[c]
        top = tops[depth[i]] + GAP_Y / 2
        box_y[i] = top + label_h[depth[i]] + box[i][1] / 2
        if i in joint:
            joint_y[i] = box_y[i] - box[i][1] / 2 - GAP_LABEL - joint[i][1] / 2
    return TreeLayout(labels=labels, joints=joints, parent=parent, x=x, box_y=box_y, joint_y=joint_y, box_size=box,
                      joint_height={i: h for i, (_, h) in joint.items()}, width=allotted[0], height=tops[-1])


def _preorder(children: dict[int, list[int]]) -> tuple[list[int], dict[int, int]]:
    """Nodes below and with node 0 in depth-first pre-order, and their depths (a stack: no
    recursion limit)."""
    order, stack, depth = [], [0], {0: 0}
    while stack:
        i = stack.pop()
        order.append(i)
        for c in reversed(children[i]):
            depth[c] = depth[i] + 1
            stack.append(c)
    return order, depth


def tree_figure(model: RobotModel, fold_fixed: bool | None = None):
    """A matplotlib figure of the tree (:func:`tree_layout`; ``fold_fixed`` None:
    :func:`folds_by_default`), one point per point: link boxes, joint labels above them, edges."""
    from matplotlib.figure import Figure

    fold = folds_by_default(model) if fold_fixed is None else fold_fixed
    layout = tree_layout(model, fold)
    title_h = 24.0
    width, height = max(layout.width, 200.0), layout.height + title_h
    fig = Figure(figsize=(width / 72, height / 72), dpi=72)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(-height, 0)
    ax.axis("off")
    shift = (width - layout.width) / 2

    def y(v: float) -> float:
        return -(v + title_h)
    for child, parent in layout.parent.items():
        ax.plot([layout.x[parent] + shift, layout.x[child] + shift],
                [y(layout.box_y[parent] + layout.box_size[parent][1] / 2),
                 y(layout.joint_y[child] - layout.joint_height[child] / 2)], color="0.6", lw=0.8, zorder=1)
    for i, label in layout.labels.items():
        ax.text(layout.x[i] + shift, y(layout.box_y[i]), label, fontsize=LINK_PT, ha="center", va="center",
                zorder=2, bbox=dict(boxstyle=f"square,pad={PAD / LINK_PT}", fc="#fff3d6", ec="0.3", lw=0.6))
    for i, label in layout.joints.items():
        ax.text(layout.x[i] + shift, y(layout.joint_y[i]), label, fontsize=JOINT_PT, ha="center", va="center",
                color="tab:blue", zorder=3)
    folded = ", fixed joints folded" if fold else ""
    ax.text(width / 2, -title_h / 2, f"{model.name}: {model.n_links} links, {model.n_joints} joints, "
                                     f"{model.n_q} DOF{folded}", fontsize=9, ha="center", va="center")
    return fig


def draw_tree(model: RobotModel, path: str, fold_fixed: bool | None = None) -> None:
    """:func:`tree_figure` saved to ``path`` (PNG at up to 100 dpi, at most :data:`MAX_PIXELS`
    a side; SVG, PDF)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = tree_figure(model, fold_fixed)
    FigureCanvasAgg(fig)
    inches = max(fig.get_size_inches())
    fig.savefig(path, dpi=min(100.0, MAX_PIXELS / inches))
