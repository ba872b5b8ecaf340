"""The node's live robot: one model with everything derived from it, and its latest joint values.

A :class:`LiveRobot` is built once per description (:func:`load_robot`: a parsed URDF, the SRDF
in force read against it, the IK groups, kernels warmed up) and replaced by a single assignment
in the node, so a service thread always reads one consistent robot while descriptions hot-reload.
Within it, joint values and the IK groups are replaced, never written in place. No rclpy.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import numpy as np
from geometry_msgs.msg import TransformStamped

from ..collision import CollisionModel, CollisionUnavailableError
from ..dynamics import gravity_torques
from ..kinematics import Reference, forward_kinematics, jacobian, joint_poses
from ..model import SCALAR_TYPES, RobotModel
from ..model.warning_groups import grouped_warnings
from .conversions import JointStateMap, TFMessageEncoder, TransformBatch, ns_to_stamp
from .descriptions import Note, Rejected, RobotSemantics, SRDFDescription, URDFDescription, choose_ik_groups
from .limits import collision_pairs
from .log_limits import cap_lines
from .parameters import NodeSettings
from .requests import RobotSnapshot

#: ``last_published_ns`` of a coordinate never published (far enough from int64's minimum that
#: adding an interval cannot overflow).
NEVER_NS = np.iinfo(np.int64).min // 2


class LiveRobot:
    """One model with everything derived from it and the frame prefix, plus its latest joint values.

    Attributes:
        model: the model. xml: its URDF text. prefix: the node's ``frame_prefix``.
        names: JointState name -> q coordinate map.
        semantics: the IK groups and SRDF in force (replaced as a whole).
        tf_joints: ``(n_tf,)`` joints published on /tf (1-DOF, not fixed; floating and planar
            joints are not published), in :func:`~robokin_ros.kinematics.joint_poses` order.
        tf_parents, tf_children: ``(n_tf,)`` link indices of their parent and child links.
        encoder: the /tf message encoder of those rows.
        required: ``(n_q,)`` bool: coordinates a JointState must provide for a full state.
        q: ``(n_q,)`` latest values (home where none received), replaced, never written in place.
        received: ``(n_q,)`` bool: a value has been received.
        complete: every required coordinate has been received.
        last_published_ns: ``(n_q,)`` stamp [ns] each coordinate was last published with.
        log: where the collision model's build notes go (the node's info logger).
        warn: where its warnings go (meshes that could not be loaded; the node's warning logger).
        max_collision_pairs: a robot with more collision geometry pairs is not checked for
            self-collision (the node's ``max_collision_pairs``); None: no limit.
    """

    def __init__(self, model: RobotModel, xml: str, prefix: str, previous: LiveRobot | None = None,
                 max_collision_pairs: int | None = None):
        self.model, self.xml, self.prefix = model, xml, prefix
        self.max_collision_pairs = max_collision_pairs
        self.names = JointStateMap(model)
        self.semantics = RobotSemantics()
        scalar = np.isin(model.joint_types, SCALAR_TYPES) & ~model.is_fixed
        self.tf_joints = np.flatnonzero(scalar)
        self.tf_parents = model.link_parents[self.tf_joints + 1]
        self.tf_children = self.tf_joints + 1
        row_of = {int(j): r for r, j in enumerate(self.tf_joints)}
        rows_of_q: list[list[int]] = [[] for _ in range(model.n_q)]
        for j in self.tf_joints.tolist():
            source = model.mimic_source[j] if model.is_mimic[j] else j
            rows_of_q[model.joint_q_index[source]].append(row_of[j])
        self._rows_of_q = rows_of_q
        self._rows_cache: dict[bytes, np.ndarray] = {}
        self.encoder = TFMessageEncoder([prefix + model.link_names[i] for i in self.tf_parents],
                                        [prefix + model.link_names[i] for i in self.tf_children])
        self.required = np.zeros(model.n_q, bool)
        for j in model.active_joints.tolist():
            if model.joint_types[j] in SCALAR_TYPES:
                self.required[model.joint_q_index[j]] = True
        self.log: Callable[[str], None] = lambda text: None
        self.warn: Callable[[str], None] = lambda text: None
        self._collision_lock = threading.Lock()
        self._collision: tuple | None = None   # (disabled pairs key, CollisionModel or reason)
        self.q = model.home_configuration()
        self.received = np.zeros(model.n_q, bool)
        self.last_published_ns = np.full(model.n_q, NEVER_NS, np.int64)
        self.complete = not self.required.any()
        if previous is not None:  # keep the values of joints that still exist
            old = dict(zip(previous.model.q_names, zip(previous.q.tolist(), previous.received.tolist())))
            for i, name in enumerate(model.q_names):
                if name in old and old[name][1]:
                    self.q[i], self.received[i] = old[name][0], True
            self.complete = bool(self.received[self.required].all())

    def rows(self, q_indices: np.ndarray) -> np.ndarray:
        """/tf rows (movable joints) that the q coordinates ``q_indices`` move, sorted."""
        key = q_indices.tobytes()
        rows = self._rows_cache.get(key)
        if rows is None:
            rows = np.array(sorted({r for i in q_indices.tolist() for r in self._rows_of_q[i]}), np.intp)
            if len(self._rows_cache) > 64:
                self._rows_cache.clear()
            self._rows_cache[key] = rows
        return rows

    def static_transforms(self, stamp) -> list[TransformStamped]:
        """One TransformStamped per fixed joint (parent -> child), stamped ``stamp``."""
        model = self.model
        fixed = np.flatnonzero(model.is_fixed)
        batch = TransformBatch([self.prefix + model.link_names[model.link_parents[j + 1]] for j in fixed],
                               [self.prefix + model.link_names[j + 1] for j in fixed])
        return batch.fill(np.arange(fixed.size), model.joint_origins[fixed], stamp)

    def warm_up(self, reference: Reference) -> None:
        """Run the kernels once, so the first joint state is not delayed by building their plans."""
        model, q = self.model, self.q
        T = forward_kinematics(model, q)
        self.encoder.encode(np.arange(self.tf_joints.size), joint_poses(model, q), ns_to_stamp(0))
        for leaf in model.leaf_links:
            jacobian(model, q, leaf, reference, poses=T)
        if model.link_has_inertial.any():
            gravity_torques(model, q)

    def too_many_collision_pairs(self) -> str:
        """Why the robot is not checked for self-collision because of ``max_collision_pairs``
        ('' : it is within the limit)."""
        pairs = collision_pairs(self.model)
        if self.max_collision_pairs is None or pairs <= self.max_collision_pairs:
            return ''
        return (f'robot {self.model.name!r} has {pairs} collision geometry pairs, more than max_collision_pairs = '
                f'{self.max_collision_pairs}: not checked for self-collision')

    def collision_model(self) -> CollisionModel | str:
        """The robot's collision model (pairs from its SRDF, else sampled and cached on disk), built
        on first use (the first request with avoid_collisions or to /check_state_validity: without
        an SRDF the pair sampling takes seconds the first time a URDF is seen on a machine); or why
        there is none. :attr:`log` gets the warnings of a new build."""
        semantic = self.semantics.srdf
        key = None if semantic is None else semantic.disabled_collisions
        with self._collision_lock:
            if self._collision is None or self._collision[0] != key:
                too_many = self.too_many_collision_pairs()
                if too_many:   # the limit is the model's: whatever the SRDF, never built
                    self._collision = (key, too_many)
                    return too_many
                try:
                    cm = CollisionModel.build(self.model, srdf=semantic)
                except CollisionUnavailableError as e:
                    result: CollisionModel | str = str(e)
                else:
                    result = cm
                    if not cm.n_geometries:
                        skipped = f' ({len(cm.warnings)} collision meshes could not be loaded)' if cm.warnings else ''
                        result = f'robot {self.model.name!r} has no collision geometry{skipped}'
                    elif cm.warnings and not len(cm.pairs):   # what loaded leaves nothing to check
                        result = (f'{len(cm.warnings)} collision meshes of robot {self.model.name!r} could not be '
                                  'loaded, and no pair of what did is left to check')
                    for warning in cap_lines(cm.warnings):   # a skipped mesh is a part of the robot not checked
                        self.warn(f'collision model: {warning}')
                    if cm.n_geometries:
                        self.log(f'collision model: {cm.n_geometries} geometries, {len(cm.link_pairs)} link pairs '
                                 f"checked ({'SRDF' if semantic is not None else 'sampled'} disabled pairs)")
                self._collision = (key, result)
            return self._collision[1]

    def snapshot(self) -> RobotSnapshot:
        """What one service call reads: model, latest joint values, groups, collision model."""
        semantics = self.semantics
        return RobotSnapshot(self.model, self.q, frame_prefix=self.prefix, groups=semantics.groups,
                                      default_group=semantics.default_group, collision=self.collision_model,
                                      srdf=semantics.srdf)


@dataclasses.dataclass(frozen=True)
class LoadedRobot:
    """A new live robot and the SRDF in force for it.

    Attributes:
        robot: the live robot (model, TF tables, IK groups; joint values kept from the previous one).
        srdf: the SRDF in force (``semantic`` read against the new model, None if it does not fit),
            None when there is none.
        notes: lines for the node's log, in order.
    """

    robot: LiveRobot
    srdf: SRDFDescription | None
    notes: tuple[Note, ...]


def load_robot(urdf: URDFDescription, settings: NodeSettings, srdf: SRDFDescription | None,
               previous: LiveRobot | None = None) -> LoadedRobot:
    """The live robot of a parsed URDF, with the SRDF in force read against it and its IK groups,
    warmed up (its kernels run once). Nothing here touches the node: it installs the result.

    Args:
        urdf: the parsed URDF.
        settings: the node's settings (frame prefix, Jacobian reference, IK groups).
        srdf: the SRDF in force (read again if it was read against another model), or None.
        previous: the robot it replaces; joints of the same name keep their latest values.
    """
    model = urdf.model
    notes: list[Note] = [('warning', f'robot description ({urdf.source}): {line}')
                         for line in grouped_warnings(model.load_warnings)]   # one line per kind
    if srdf is not None:
        try:
            srdf = dataclasses.replace(srdf, semantic=srdf.for_model(model))
        except Rejected as e:
            srdf = dataclasses.replace(srdf, semantic=None)
            notes.append(('error', f'the semantic description from {srdf.source} does not fit robot '
                                   f'{model.name!r}: {e}'))
    robot = LiveRobot(model, urdf.xml, settings.frame_prefix, previous, settings.limits.max_collision_pairs)
    too_many = robot.too_many_collision_pairs()
    if too_many:
        notes.append(('warning', too_many))
    robot.semantics = choose_ik_groups(model, settings, srdf, notes)
    robot.warm_up(settings.reference)
    return LoadedRobot(robot, srdf, tuple(notes))
