"""What a robot's links are for, read from its kinematic tree: limbs (arms, legs, heads, fingers,
wheels), the hand at the end of an arm and the frame a person would solve IK for there.

Structure decides; link names only break ties among the fixed frames at one hand (a ``tool0``
before a ``ft_frame``). Geometry is the URDF's own layout: link origins with every joint at zero.

Terms:
    movable joint: any joint but a fixed one (mimic joints included: they move their child).
    fixed closure of a link: the link and every link reached from it through fixed joints only.
    split: the root, or a link with two or more child subtrees that hold a movable joint.
    limb: the serial run of movable joints from a split (or the fixed closure of another limb's
        end) down to its *end*, a moving link whose fixed closure has no movable child (an arm
        without a gripper, a finger tip, a wheel), two or more (a hand whose fingers branch off
        there) or one that is a lone jaw (:meth:`TreeRoles.holds_lone_jaw`).
"""

from __future__ import annotations

import dataclasses
import re
from functools import cached_property

import numpy as np

from .elements import JointType
from .robot_model import RobotModel

#: A leg's lowest link is within this share of the robot's height of the robot's lowest link
#: (feet touch the ground with every joint at zero; hands and grippers do not) ...
FLOOR_SHARE = 0.1
#: ... and at least this share of the robot's height below the link the leg hangs from.
DESCENT_SHARE = 0.25

#: Joints that carry a robot's base: what hangs from the root through them is the base, not a limb.
FREE_BASE_TYPES = (JointType.FIXED, JointType.FLOATING, JointType.PLANAR)

#: Words of frame names that mark a tool frame (a tie-breaker between fixed frames at one hand).
TOOL_WORDS = frozenset({"tool", "tcp", "ee", "eef", "effector", "grasp", "grasping", "hand", "tip"})
#: Words of frame names that mark a sensor frame or a helper link (collision shapes, markers,
#: virtual links): never the tool frame of a hand or a foot.
SENSOR_WORDS = frozenset({"camera", "cam", "optical", "ft", "imu", "laser", "lidar", "sensor", "sonar",
                          "range", "accelerometer", "accel", "gyro", "gyrometer", "touch", "bumper", "fsr",
                          "depth", "rgb", "infra", "infrared", "scan", "led", "mic", "speaker"})
HELPER_WORDS = frozenset({"virtual", "dummy", "visual", "collision", "sc", "itb", "safety", "mount", "cover",
                          "marker", "aruco"})


def name_words(name: str) -> tuple[str, ...]:
    """Lower-case words of a frame name, split at non-letters and camelCase humps
    (``'panda_1_hand_tcp'`` -> panda, hand, tcp; ``'LHandTouchLeft_frame'`` -> l, hand, touch,
    left, frame)."""
    return tuple(w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", name))


def named_as(name: str, vocabulary: frozenset[str]) -> bool:
    """A word of ``name`` is in ``vocabulary``, or holds one of its words of five letters or more
    (``'rhsensor'`` holds ``'sensor'``; ``'shaft'`` does not hold ``'ft'``)."""
    return any(w in vocabulary or any(len(v) >= 5 and v in w for v in vocabulary) for w in name_words(name))


@dataclasses.dataclass(frozen=True)
class Limb:
    """A serial run of movable joints (every index is a link index of the model).

    Attributes:
        start: the split the run hangs from.
        end: its last moving link.
        hand: where the moving parts at its end (fingers) branch off, else ``end``.
        n_joints: independent joints from ``start`` to ``end``.
        length: [m] reach of its joints: the path through the link origins from its first
            movable joint to ``end`` at q = 0, plus the strokes of its bounded slides.
        is_leg: it hangs from the base (the root and the links fixed to it or carried by a floating
            or planar joint) and its lowest link is near the robot's
            lowest link, well below ``start`` (a foot); and it is not the robot's only limb of three
            or more joints (an arm hanging down).
    """

    start: int
    end: int
    hand: int
    n_joints: int
    length: float
    is_leg: bool

    @property
    def is_arm(self) -> bool:
        """Three or more joints that do not stand on the ground (an arm; a pan-tilt head has two)."""
        return self.n_joints >= 3 and not self.is_leg


class TreeRoles:
    """The limbs of a model and the frames at their ends (built on demand; cheap)."""

    def __init__(self, model: RobotModel):
        self.model = model

    # ------------------------------------------------------------------ per link
    @cached_property
    def positions(self) -> np.ndarray:
        """Link origins at q = 0 in the root frame ``(n_links, 3)`` [m]."""
        m = self.model
        world = np.empty((m.n_links, 4, 4))
        world[0] = np.eye(4)
        for i in range(1, m.n_links):
            world[i] = world[m.link_parents[i]] @ m.joint_origins[i - 1]
        return world[:, :3, 3]

    @cached_property
    def movable(self) -> np.ndarray:
        """``(n_links,)`` bool: the joint into the link is movable (the root: False)."""
        return np.concatenate([[False], self.model.joint_types != JointType.FIXED])

    @cached_property
    def independent(self) -> np.ndarray:
        """``(n_links,)`` bool: the joint into the link has coordinates (not fixed, not mimic)."""
        return np.concatenate([[False], self.model.joint_nq > 0])

    @cached_property
    def moves(self) -> np.ndarray:
        """``(n_links,)`` bool: the link's own joint or one below it is movable."""
        m = self.model
        moves = self.movable.copy()
        for i in range(m.n_links - 1, 0, -1):
            moves[m.link_parents[i]] |= moves[i]
        return moves

    @cached_property
    def stroke(self) -> np.ndarray:
        """``(n_links,)`` [m]: travel of the independent prismatic joint into each link (0 for
        other joints and unbounded slides)."""
        m = self.model
        with np.errstate(invalid="ignore", over="ignore"):
            travel = np.where(m.joint_types == JointType.PRISMATIC, m.joint_upper - m.joint_lower, 0.0)
        return np.concatenate([[0.0], np.where(np.isfinite(travel) & (m.joint_nq > 0), travel, 0.0)])

    def fixed_closure(self, link: int) -> list[int]:
        """``link`` and every link reached from it through fixed joints, parents first."""
        out = [link]
        for i in out:
            out += [c for c in self.model.link_children[i] if not self.movable[c]]
        return out

    def moving_children(self, link: int) -> list[int]:
        """Links hanging by a movable joint from the fixed closure of ``link``."""
        return [c for i in self.fixed_closure(link) for c in self.model.link_children[i] if self.movable[c]]

    def is_split(self, link: int) -> bool:
        """``link`` is the root or two or more of its child subtrees move."""
        return link == 0 or sum(bool(self.moves[c]) for c in self.model.link_children[link]) >= 2

    def is_frame(self, link: int) -> bool:
        """``link`` has no visual and no collision geometry (a coordinate frame, not a body)."""
        m = self.model
        return not (m.link_visuals and m.link_visuals[link]) and not (m.link_collisions and m.link_collisions[link])

    # ------------------------------------------------------------------ limbs
    def holds_lone_jaw(self, link: int) -> bool:
        """The one moving part hanging from the fixed closure of ``link`` is a jaw: a leaf that
        hangs from a fixed body (a gripper's stator) or has fixed leaves beside it (a tool frame,
        fixed fingers), so ``link`` ends the arm and not the jaw."""
        moving = self.moving_children(link)
        if len(moving) != 1 or self.model.link_children[moving[0]]:
            return False
        closure = self.fixed_closure(link)
        return self.model.link_parents[moving[0]] != link or any(not self.model.link_children[i] for i in closure)

    @cached_property
    def driven(self) -> np.ndarray:
        """``(n_links,)`` bool: an independent joint lies between the root and the link."""
        m = self.model
        driven = self.independent.copy()
        for i in range(1, m.n_links):
            driven[i] |= driven[m.link_parents[i]]
        return driven

    @cached_property
    def limbs(self) -> tuple[Limb, ...]:
        """Every limb with an independent joint between the root and its end, by end link."""
        m = self.model
        ends = [i for i in range(1, m.n_links) if self.movable[i] and self.driven[i]
                and (len(self.moving_children(i)) != 1 or self.holds_lone_jaw(i))]
        held = {i for end in ends for i in self.fixed_closure(end)}   # a finger's run stops there
        base = [0]   # the root and what is fixed to it or carried by a floating or planar joint
        for i in base:
            base += [c for c in m.link_children[i] if m.joint_types[c - 1] in FREE_BASE_TYPES]
        z = self.positions[:, 2]
        floor, height = float(z.min()), float(z.max() - z.min())
        limbs = []
        for end in ends:
            run = [end]
            while not self.is_split(int(m.link_parents[run[-1]])) and int(m.link_parents[run[-1]]) not in held:
                run.append(int(m.link_parents[run[-1]]))
            start = int(m.link_parents[run[-1]])
            run.reverse()
            lowest = float(z[m.link_subtrees[end]].min())
            is_leg = (start in base and lowest - floor <= FLOOR_SHARE * height
                      and z[start] - lowest > DESCENT_SHARE * height)
            limbs.append(Limb(start, end, self._hand(end), int(self.independent[run].sum()),
                              self._reach(run), bool(is_leg)))
        legs = [limb for limb in limbs if limb.is_leg]
        if len(legs) == 1 and not any(limb.n_joints >= 3 and not limb.is_leg for limb in limbs):
            limbs = [dataclasses.replace(limb, is_leg=False) for limb in limbs]   # a lone arm hanging down
        return tuple(limbs)

    def _reach(self, run: list[int]) -> float:
        """Path length [m] through the origins of ``run`` (links, parents first) from its first
        movable joint on, plus the strokes of its slides."""
        m, p = self.model, self.positions
        first = next(k for k, i in enumerate(run) if self.movable[i])
        hops = [float(np.linalg.norm(p[i] - p[m.link_parents[i]])) for i in run[first + 1:]]
        return sum(hops) + float(self.stroke[run].sum())

    def _hand(self, end: int) -> int:
        """Where the moving parts hanging from the fixed closure of ``end`` branch off (their
        deepest common ancestor), else ``end``."""
        parts = {int(self.model.link_parents[c]) for c in self.moving_children(end)}
        if not parts:
            return end
        common = np.logical_and.reduce([self.model.support_mask[i] for i in parts])
        return int(np.flatnonzero(common)[-1])

    @cached_property
    def main_limb(self) -> Limb | None:
        """The limb a person would solve IK for: the longest arm; else (a robot without arms) the
        longest leg; else the longest limb (first in link order among equals). None: no limb."""
        return min(self.limbs, key=self._rank, default=None)

    def _rank(self, limb: Limb):
        return (not limb.is_arm, not limb.is_leg, -round(limb.length, 3), limb.end)

    @cached_property
    def twin_limbs(self) -> tuple[Limb, ...]:
        """The limbs ranked like the main one but for their end (the other arm of a pair)."""
        main = self.main_limb
        return tuple(limb for limb in self.limbs if main is not None and limb is not main
                     and self._rank(limb)[:3] == self._rank(main)[:3])

    # ------------------------------------------------------------------ end frames
    def tool_frame(self, limb: Limb) -> int | None:
        """The fixed frame at the end of a limb a person would solve IK for: a leaf of the fixed
        closure of its end (no joint beyond the arm's moves it) that is a coordinate frame or is
        named as a tool, and is not named as a sensor or helper; coordinate frames first, then
        tool names, then the farthest from the hand. None: there is none."""
        m = self.model
        leaves = [i for i in self.fixed_closure(limb.end) if i != limb.end and not m.link_children[i]]
        candidates = []
        for i in leaves:
            name = m.link_names[i]
            if named_as(name, SENSOR_WORDS | HELPER_WORDS):
                continue
            tool_named = named_as(name, TOOL_WORDS)
            if self.is_frame(i) or tool_named:
                distance = float(np.linalg.norm(self.positions[i] - self.positions[limb.hand]))
                candidates.append((not self.is_frame(i), not tool_named, -round(distance, 4), i))
        return min(candidates)[-1] if candidates else None

    def foot(self, limb: Limb) -> int:
        """The lowest link below the end of a leg that is not named as a sensor or helper (first
        in link order among equals; any link when every one is so named)."""
        z = np.round(self.positions[:, 2], 4)
        below = self.model.link_subtrees[limb.end]
        plain = [i for i in below if not named_as(self.model.link_names[i], SENSOR_WORDS | HELPER_WORDS)]
        below = np.array(plain) if plain else below
        return int(below[np.argmin(z[below])])

    def end_frame(self, limb: Limb) -> tuple[int, str]:
        """The link a person would solve IK for at the end of ``limb``, and what it is:
        ``'foot'`` (lowest link of a leg), ``'tool frame'`` (see :meth:`tool_frame`) or
        ``'hand'`` (where the fingers branch off, or the last moving link)."""
        if limb.is_leg:
            return self.foot(limb), "foot"
        tool = self.tool_frame(limb)
        return (tool, "tool frame") if tool is not None else (limb.hand, "hand")
