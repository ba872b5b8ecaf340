"""The web view's controls around a :class:`~.scene.RobotScene`: joint sliders (a folder per limb,
a filter box), named states, an IK gizmo, a floor grid, link frames and names, a camera framing
the robot (refit on demand), self-collision colours and the kinematic tree.

:class:`RobotView` shows one configuration at a time (:meth:`RobotView.set_configuration`). In
the ``robokin view`` command the sliders, state buttons and the IK gizmo change it; in the live
view (:mod:`robokin_ros.node.web_view`) joint states do, the sliders only show values, and the
gizmo asks the node's ``/compute_ik`` (an ``ik`` callable) and shows its answer as a frame at the
solution's tip pose.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable

import numpy as np

from ..ik import solve_ik
from ..kinematics import forward_kinematics
from ..model import JointType, RobotModel
from ..model.description_limits import DescriptionLimits, collision_pairs
from ..model.groups import derive_groups
from ..spatial import quat_xyzw_to_matrix
from .layout import CameraFit, fit_camera, floor_grid, limb_folders, matches, robot_bounds, slider_joints
from .path_player import PathPlayer
from .scene import RobotScene, wxyz
from .servo_jog import twist_jog

#: [s] time budget of one IK solve while the gizmo is dragged.
IK_TIMEOUT = 0.05


@dataclasses.dataclass(frozen=True)
class IKOutcome:
    """One IK answer for the gizmo's target.

    Attributes:
        q: ``(n_q,)`` the solution (best effort when not successful); None when there is none.
        success: the target was reached within the tolerances.
        position_error: [m] tip position error. rotation_error: [rad] tip rotation error.
        message: what to show when there is no solution (an error code, a timeout).
    """

    q: np.ndarray | None
    success: bool
    position_error: float = math.nan
    rotation_error: float = math.nan
    message: str = ""


IKCallable = Callable[[str, np.ndarray, np.ndarray], IKOutcome]


def core_ik(model: RobotModel, timeout: float = IK_TIMEOUT) -> IKCallable:
    """An ``ik(tip, T_root_tip (4, 4), seed (n_q,)) -> IKOutcome`` solving with :func:`solve_ik`
    from the seed (the configuration shown), with the ``closest`` objective: a redundant arm
    follows the gizmo with the least motion."""
    def ik(tip: str, target: np.ndarray, seed: np.ndarray) -> IKOutcome:
        result = solve_ik(model, target, tip, seed=seed, timeout=timeout, objective="closest")
        return IKOutcome(np.asarray(result.q, float), bool(result.success), float(result.position_error),
                         float(result.rotation_error))
    return ik


#: Deepest indentation of :func:`tree_text` (deeper links say their depth instead).
MAX_TREE_INDENT = 40


def tree_text(model: RobotModel) -> str:
    """The kinematic tree, one link a line, indented under its parent with its joint's name and
    type (iterative: a chain of thousands of links is fine; past :data:`MAX_TREE_INDENT` levels
    a line says its depth instead of indenting further)."""
    lines = []
    stack = [(0, 0)]
    while stack:
        link, depth = stack.pop()
        if link == 0:
            lines.append(model.link_names[0])
        else:
            joint = link - 1
            kind = JointType(model.joint_types[joint]).name.lower()
            indent = "  " * min(depth, MAX_TREE_INDENT) + (f"[depth {depth}] " if depth > MAX_TREE_INDENT else "")
            lines.append(f"{indent}{model.link_names[link]}  ({model.all_joint_names[joint]}, {kind})")
        stack += [(child, depth + 1) for child in reversed(model.link_children[link])]
    return "\n".join(lines)


def ik_tips(model: RobotModel, semantics=None) -> tuple[list[str], str]:
    """Links offered for the IK gizmo (the SRDF groups' tips, then the derived groups' tips) and
    the default one (the default derived group's tip, or the first SRDF tip)."""
    derived = derive_groups(model)
    srdf_tips = [g.tip for g in (semantics.groups.values() if semantics is not None else ()) if g.tip]
    tips = list(dict.fromkeys(srdf_tips + [g.tip for g in derived.groups.values() if g.tip]))
    default = derived.groups[derived.default].tip or (tips[0] if tips else "")
    return tips, (srdf_tips[0] if srdf_tips else default)


class RobotView:
    """A robot with its controls in a viser server.

    ``limits``: the description limits in force (default :class:`DescriptionLimits`'s): a robot with
    more collision geometry pairs than ``limits.max_collision_pairs`` gets no self-collision colours.

    Attributes:
        scene: the robot's scene nodes. sliders: joint name -> ``(slider, q index)`` (1-DOF
            independent joints, model order), each in the folder of its limb
            (:func:`~.layout.limb_folders`). camera: the latest :class:`~.layout.CameraFit`.
        removed: :meth:`remove` ran (nothing of the view is touched again).
        tip: link the IK gizmo drives. gizmo: the transform controls (None without tips).
        last_ik: the latest :class:`IKOutcome` (None before the first drag).
        colliding: link indices shown in collision.
    """

    def __init__(self, server, model: RobotModel, *, urdf_dir=None, package_paths=None, semantics=None,
                 ik: IKCallable | None = None, interactive: bool = True, collisions: bool = True,
                 limits: DescriptionLimits | None = None, mesh_dir=None):
        self.server, self.model, self.interactive = server, model, interactive
        self.ik = ik if ik is not None else core_ik(model)
        self.scene = RobotScene(server, model, urdf_dir, package_paths, mesh_dir=mesh_dir)
        self.lock = threading.RLock()
        self.removed = False
        self.syncing = False
        self.pending_target = None
        self.solving = self.dragging = self.user_target = False
        self.last_ik: IKOutcome | None = None
        self.colliding: set = set()
        self.collision = self.collision_builder = None
        self.reach_layer = None   # a robokin_ros.web.reach_layer.ReachLayer, when a map is shown
        self.handles = []
        gui = server.gui
        self._add(gui.add_markdown(f"**{model.name}**: {model.n_links} links, {model.n_q} coordinates"))
        self._add_display(gui)
        self.sliders = self._add_sliders(gui)
        self._add_states(gui, semantics)
        self.tips, self.tip = ik_tips(model, semantics)
        self.gizmo = self.solution_marker = None
        self.ik_status = None
        if self.tips:
            self._add_ik(gui)
        self.jog = twist_jog(server, model, self.tip, self) if self.tips and self.interactive else None
        self.path = PathPlayer(server, model, self.tip, self) if self.tips and self.interactive else None
        self.collision_status = None
        if collisions:
            self._add_collisions(gui, semantics, urdf_dir, package_paths, limits or DescriptionLimits())
        with self._add(gui.add_folder("Tree", expand_by_default=False)):
            self._add(gui.add_markdown("```\n" + tree_text(model) + "\n```"))
        self.set_configuration(self.scene.q)
        self.camera = self.refit_camera()   # (kept up to date by every refit)
        self.meshes_loaded = threading.Event()
        threading.Thread(target=self._load_meshes, name="web-view-meshes", daemon=True).start()

    def _load_meshes(self) -> None:
        """Add the mesh files (in the background: the view is up with its primitives meanwhile),
        then list what could not be shown and frame the robot again (meshes included)."""
        try:
            notes = self.scene.load_meshes()
            with self.lock:
                if self.removed:
                    return
                self.refit_camera(move_clients=False)
                if notes:
                    with self._add(self.server.gui.add_folder("Notes", expand_by_default=False)):
                        self._add(self.server.gui.add_markdown("\n".join(f"- {note}" for note in notes)))
        finally:
            self.meshes_loaded.set()

    def _add(self, handle):
        self.handles.append(handle)
        return handle

    # ------------------------------------------------------------------ controls
    def _add_display(self, gui) -> None:
        """The "View" folder: refit the camera, the floor grid, link frames and link names."""
        lo, hi = robot_bounds(forward_kinematics(self.model, self.scene.q), self.scene.meshes)
        place = floor_grid(lo, hi)
        self.grid = self._add(self.server.scene.add_grid(
            "/robot_grid", place.size, place.size, cell_size=place.cell, section_size=5 * place.cell,
            position=place.centre))
        self.labels: list = []
        with self._add(gui.add_folder("View")):
            refit = self._add(gui.add_button("Refit camera", hint="frame the whole robot again"))
            refit.on_click(lambda _: self.refit_camera())
            grid = self._add(gui.add_checkbox("Grid", initial_value=True))
            grid.on_update(lambda _: setattr(self.grid, "visible", bool(grid.value)))
            frames = self._add(gui.add_checkbox("Link frames", initial_value=False))
            frames.on_update(lambda _: self.scene.show_frames(frames.value))
            self.show_labels = self._add(gui.add_checkbox("Link names", initial_value=False))
            self.show_labels.on_update(lambda _: self.label_links(self.show_labels.value))

    def refit_camera(self, move_clients: bool = True) -> CameraFit:
        """Frame the robot as it is shown (its link origins and geometry, never a reach layer):
        the camera new browsers start with, and with ``move_clients`` the camera of every
        browser connected. Returns the fit (also kept as ``camera``)."""
        with self.lock:
            lo, hi = robot_bounds(forward_kinematics(self.model, self.scene.q), self.scene.meshes)
            fit = fit_camera(lo, hi, float(self.server.initial_camera.fov))
            if self.removed:
                return fit
            self.camera = fit
            self.server.initial_camera.look_at = fit.look_at
            self.server.initial_camera.position = fit.position
            if move_clients:
                for client in self.server.get_clients().values():
                    client.camera.look_at = fit.look_at
                    client.camera.position = fit.position
        return fit

    def label_links(self, show: bool) -> None:
        """Show or hide every link's name at its origin (made on first use)."""
        with self.lock:
            if self.removed:
                return
            if show and not self.labels:
                self.labels = [self.server.scene.add_label(f"{frame.name}/name", name, font_screen_scale=0.7)
                               for frame, name in zip(self.scene.frames, self.model.link_names)]
            for label in self.labels:
                label.visible = show

    def _add_sliders(self, gui) -> dict:
        """A slider per independent 1-DOF joint, in a folder per limb, under a filter box."""
        model, sliders = self.model, {}
        lower, upper = model.q_lower, model.q_upper
        self.slider_folders = {}
        with self._add(gui.add_folder("Joints")):
            self.slider_filter = self._add(gui.add_text("Filter", "", hint="show the joints whose names "
                                                        "hold these words"))
            self.slider_filter.on_update(lambda _: self.filter_sliders(self.slider_filter.value))
            folders = limb_folders(model)
            for label, joints in folders.items():
                folder = self._add(gui.add_folder(f"{label} ({len(joints)})", expand_by_default=len(folders) <= 3))
                self.slider_folders[label] = (folder, [model.all_joint_names[j] for j in joints])
                with folder:
                    for j in joints:
                        i = int(model.joint_q_index[j])
                        bounded = np.isfinite(lower[i]) and np.isfinite(upper[i])
                        lo, hi = (float(lower[i]), float(upper[i])) if bounded else (-math.pi, math.pi)
                        name = model.all_joint_names[j]
                        slider = self._add(gui.add_slider(name, min=lo, max=hi, step=(hi - lo) / 1000 or 1e-3,
                                                          initial_value=float(np.clip(self.scene.q[i], lo, hi)),
                                                          disabled=not self.interactive))
                        slider.on_update(lambda _, name=name, i=i: self._slider_moved(name, i))
                        sliders[name] = (slider, i)
        return {name: sliders[name] for name in (model.all_joint_names[j] for j in slider_joints(model))}

    def filter_sliders(self, text: str) -> list[str]:
        """Show the sliders whose joint names hold every word of ``text`` (and their folders,
        opened); returns the names shown."""
        shown = []
        with self.lock:
            if self.removed:
                return shown
            for folder, names in self.slider_folders.values():
                keep = [name for name in names if matches(name, text)]
                for name in names:
                    self.sliders[name][0].visible = name in keep
                folder.visible = bool(keep)
                if text and keep:
                    folder.expand_by_default = True
                shown += keep
        return shown

    def _add_states(self, gui, semantics) -> None:
        """A button per named state: home, and each SRDF ``group_state`` (``"group: state"``)."""
        self.semantics = semantics
        self.states = {"home": None}
        if semantics is not None:
            self.states.update({f"{group}: {state}": (state, group)
                                for group, named in semantics.group_states.items() for state in named})
        if not self.interactive:
            return
        with self._add(gui.add_folder("States")):
            for label in self.states:
                button = self._add(gui.add_button(label))
                button.on_click(lambda _, label=label: self.go_to_state(label))

    def go_to_state(self, label: str) -> np.ndarray:
        """Show the named state ``label`` (``"home"`` or ``"group: state"``); returns the link poses."""
        entry = self.states[label]
        q = self.model.home_configuration() if entry is None else self.semantics.named_configuration(*entry)
        return self.set_configuration(q)

    def _add_ik(self, gui) -> None:
        with self._add(gui.add_folder("IK")):
            tip = self._add(gui.add_dropdown("Tip", options=self.tips, initial_value=self.tip))
            tip.on_update(lambda _: self._choose_tip(tip.value))
            self.ik_status = self._add(gui.add_markdown("Drag the gizmo at the tip."))
        self.gizmo = self._add(self.server.scene.add_transform_controls("/ik_target", scale=0.2, depth_test=False))
        self.gizmo.on_update(self._gizmo_event)
        if not self.interactive:
            self.solution_marker = self._add(self.server.scene.add_frame(
                "/ik_solution", axes_length=0.1, axes_radius=0.006, visible=False))

    def _add_collisions(self, gui, semantics, urdf_dir, package_paths, limits: DescriptionLimits) -> None:
        """A self-collision checkbox, when coal is installed and the robot has at most
        ``limits.max_collision_pairs`` collision geometry pairs (the collision model is built in
        the background so the view starts at once)."""
        from ..collision.geometry import coal_module
        try:
            coal_module()
        except ImportError:
            self._add(gui.add_markdown("Self-collision colours need coal: `pip install coal`"))
            return
        pairs = collision_pairs(self.model)
        if pairs > limits.max_collision_pairs:
            self._add(gui.add_markdown(f"Self-collisions not checked: {pairs} collision geometry pairs, more than "
                                       f"max_collision_pairs = {limits.max_collision_pairs}"))
            return
        self.show_collisions = self._add(gui.add_checkbox("Self-collisions", initial_value=True))
        self.show_collisions.on_update(lambda _: self._check_collisions())
        self.collision_status = self._add(gui.add_markdown("Self-collisions: preparing..."))

        def build():
            from ..collision import collision_model
            try:
                cm = collision_model(self.model, semantics, package_paths,
                                     None if urdf_dir is None else str(urdf_dir))
            except Exception as error:  # noqa: BLE001 - shown in the panel; the view goes on without
                with self.lock:
                    if not self.removed:
                        self.collision_status.content = f"Self-collisions unavailable: {error}"
                return
            with self.lock:
                self.collision = None if self.removed else cm
            self._check_collisions()
        self.collision_builder = threading.Thread(target=build, name="web-view-collision-model", daemon=True)
        self.collision_builder.start()

    # ------------------------------------------------------------------ state
    def set_configuration(self, q, moving_gizmo: bool = False) -> np.ndarray:
        """Show ``q (n_q,)``; the sliders and collision colours follow, and so does the gizmo
        unless it is being dragged, or the view is live and the user has dragged it (it then stays
        at the user's target until another tip is chosen). Returns the link poses ``(n_links, 4, 4)``."""
        with self.lock:
            if self.removed:   # nothing of a removed view is touched again
                return forward_kinematics(self.model, self.model.check_q(q))
            poses = self.scene.update(q)
            self.syncing = True
            try:
                for slider, i in self.sliders.values():
                    value = float(np.clip(self.scene.q[i], slider.min, slider.max))
                    if slider.value != value:
                        slider.value = value
            finally:
                self.syncing = False
            busy = moving_gizmo or self.dragging or self.pending_target is not None
            if self.gizmo is not None and (self.interactive or not self.user_target) and not busy:
                self._place_gizmo(poses)
            self._check_collisions()
        return poses

    def _place_gizmo(self, poses) -> None:
        T = poses[self.model.link_index(self.tip)]
        self.gizmo.wxyz, self.gizmo.position = wxyz(T[:3, :3]), T[:3, 3]

    def _slider_moved(self, name: str, i: int) -> None:
        if self.syncing or not self.interactive:
            return
        with self.lock:
            q = self.scene.q.copy()
            q[i] = self.sliders[name][0].value
            self.set_configuration(q)

    def _choose_tip(self, tip: str) -> None:
        with self.lock:
            self.tip, self.user_target = tip, False
            self._place_gizmo(forward_kinematics(self.model, self.scene.q))

    def gizmo_target(self) -> np.ndarray:
        """``(4, 4)`` the gizmo's pose in the root frame."""
        T = np.eye(4)
        T[:3, :3] = quat_xyzw_to_matrix(np.roll(np.asarray(self.gizmo.wxyz, float), -1))
        T[:3, 3] = self.gizmo.position
        return T

    def _gizmo_event(self, event) -> None:
        """A drag of the gizmo: ``event.phase`` is "start", "update" or "end" (the pose on each)."""
        self.dragging = getattr(event, "phase", "update") != "end"
        self.follow_gizmo()

    def follow_gizmo(self) -> None:
        """Solve for the newest gizmo pose; drag events arriving during a solve are folded into
        the next one (the latest pose wins), so the view never lags behind a queue of solves."""
        with self.lock:
            self.pending_target, self.user_target = self.gizmo_target(), True
            if self.solving:
                return
            self.solving = True
        try:
            while True:
                with self.lock:
                    target, self.pending_target = self.pending_target, None
                    if target is None:
                        self.solving = False
                        return
                    tip, seed = self.tip, self.scene.q.copy()
                self.solve(tip, target, seed)
        except BaseException:
            with self.lock:
                self.solving = False
            raise

    def solve(self, tip: str, target: np.ndarray, seed: np.ndarray) -> IKOutcome:
        """Run the view's IK for ``tip`` at ``target (4, 4)`` from ``seed (n_q,)`` and show the answer."""
        outcome = self.ik(tip, target, seed)
        self.last_ik = outcome
        with self.lock:
            if not self.removed:
                self._show_outcome(tip, outcome)
        return outcome

    def _show_outcome(self, tip: str, outcome: IKOutcome) -> None:
        if outcome.q is None:
            self.ik_status.content = f"IK: no solution ({outcome.message})"
            return
        verdict = "reached" if outcome.success else "not reached (best effort shown)"
        self.ik_status.content = (f"IK {verdict}: position error {outcome.position_error:.2e} m, "
                                  f"rotation error {outcome.rotation_error:.2e} rad"
                                  + (f" ({outcome.message})" if outcome.message else ""))
        if self.interactive:
            self.set_configuration(outcome.q, moving_gizmo=True)
        else:
            T = forward_kinematics(self.model, outcome.q)[self.model.link_index(tip)]
            self.solution_marker.wxyz, self.solution_marker.position = wxyz(T[:3, :3]), T[:3, 3]
            self.solution_marker.visible = True

    def _check_collisions(self) -> None:
        cm = self.collision
        if cm is None:
            return
        from ..collision import self_collisions
        with self.lock:
            if self.removed:
                return
            if not self.show_collisions.value:
                links = set()
            else:
                pairs = self_collisions(cm, self.scene.q).pairs
                links = {self.model.link_index(name) for pair in pairs for name in pair}
            self.colliding = links
            self.scene.colour_links(links)
            names = sorted(self.model.link_names[i] for i in links)
            self.collision_status.content = ("Self-collisions: " + ", ".join(names)) if names else \
                "Self-collisions: none"

    def remove(self) -> None:
        """Take the robot and its controls out of the server (before showing a new description).
        Work still running in the background (mesh files, the collision model, an IK answer)
        finds the view removed and touches none of its components."""
        with self.lock:
            if self.removed:
                return
            self.removed = True
            if self.jog is not None:
                self.jog.remove()
            if self.path is not None:
                self.path.remove()
            self.collision = None
            self.scene.remove()      # (the link names go with their link frames)
            for handle in reversed(self.handles):
                handle.remove()
            self.handles, self.labels = [], []
