"""IK options as one value: :class:`IKOptions` (validated once, at the boundary), the joint bounds
they make for a model, and the solver's :class:`Tolerances` they make for a number of tips."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from ..checks import check_rng, is_real, is_whole, numbers, sequence
from ..collision import CollisionModel
from ..errors import IKOptionError, JointLimitError, NonFiniteError, ShapeError
from ..kernels.parallel import check_threads
from ..model import RobotModel

Array = NDArray[np.float64]

#: Iterations per problem (restarts included) of a request that names none. Every FK-made target
#: of the bundled arms is solved within it: measured (2026-12-02) on 400,000 Panda, 100,000 UR5e and
#: 30,000 each of SO-101, OpenManipulator-X and the twin-arm torso's right arm, with no cap: at most
#: 1,229 iterations (Panda), none over 1,500; with 500, 7.5 in 100,000 Panda targets were missed
#: (next to a singular configuration, where the damped steps overshoot and attempts restart). An
#: unreachable target gives up after it: ~1 ms on the compiled loop (~0.5 µs an iteration).
DEFAULT_MAX_ITERATIONS = 2000

#: Largest position [m] or rotation [rad] tolerance accepted (larger ones mean nothing and
#: would overflow squared residuals).
MAX_TOLERANCE = 1e6

#: Values of :attr:`IKOptions.objective` (see :mod:`robokin_ros.ik.objectives`).
OBJECTIVES = ("closest", "center", "manipulability")


def _frozen(value):
    """Nested tuples of floats of an array's ``tolist()`` (hashable, comparable, shape kept)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


@dataclasses.dataclass(frozen=True)
class IKOptions:
    """The options of :func:`~robokin_ros.ik.solve_ik`, checked once when made (invalid values
    raise :class:`~robokin_ros.errors.IKOptionError` or ``ArgumentError`` naming the option); the
    checks that need the robot (names, shapes against ``n_q`` or the tips, empty bounds) run when
    a call uses them. Array options are kept as nested tuples of floats.

    Attributes:
        base: frame (link) the targets are expressed in; None: the root link.
        position_tolerance: [m] largest accepted position error per tip, in [0, 1e6]; 1e-5.
        rotation_tolerance: [rad] largest accepted rotation angle per tip, in [0, 1e6]; 1e-5.
        axis_tolerances: None, or ``(6,)`` / ``(n_tips, 6)`` ± bounds [m, rad] on the error twist
            in the target's axes (``inf`` frees an axis), >= 0.
        weights: None, or ``(n_tips,)`` finite weights >= 0 of the tips' errors.
        active_joints: None (all joints), or the names of the joints allowed to move.
        lower, upper: None, or ``(n_q,)`` bounds [rad or m] intersected with the model's limits.
        timeout: [s] time budget per problem (> 0, ``inf`` allowed), pooled over a batch; None:
            no time limit.
        max_iterations: iterations per problem (restarts included), a whole number >= 1;
            :data:`DEFAULT_MAX_ITERATIONS`.
        restarts: extra rows per problem started elsewhere alongside the seed, >= 0; 0
            (None is taken as 0).
        rng: None, a whole number >= 0 or a ``numpy.random.Generator``: where restarts start
            (None: chosen from the request's targets and seed, repeatable).
        avoid_collisions: False; True (the model's default collision model) or a
            :class:`~robokin_ros.collision.CollisionModel` of the solved model.
        objective: None or one of :data:`OBJECTIVES` (a null-space objective).
        solutions: None, or ``k >= 1`` distinct solutions of one target.
        solution_distance: [rad or m] least distance between two ``solutions``, > 0; 0.1
            (checked when ``solutions`` is given).
        threads: None (``ROBOKIN_THREADS``, else every core the process may use), or the most
            threads a batch runs on, a whole number >= 1.
    """

    base: str | None = None
    position_tolerance: float = 1e-5
    rotation_tolerance: float = 1e-5
    axis_tolerances: tuple | None = None
    weights: tuple | None = None
    active_joints: tuple[str, ...] | None = None
    lower: tuple | None = None
    upper: tuple | None = None
    timeout: float | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    restarts: int | None = 0
    rng: object = None
    avoid_collisions: object = False
    objective: str | None = None
    solutions: int | None = None
    solution_distance: float = 0.1
    threads: int | None = None

    def __post_init__(self):
        put = object.__setattr__
        for name in ("position_tolerance", "rotation_tolerance"):
            value = getattr(self, name)
            if type(value) is not float or not 0.0 <= value <= MAX_TOLERANCE:   # (the common case: a float)
                if not is_real(value) or not 0 <= value <= MAX_TOLERANCE:
                    raise IKOptionError(f"{name} must be a number in [0, {MAX_TOLERANCE:g}], got {value!r}", name)
                put(self, name, float(value))
        if type(self.max_iterations) is not int or self.max_iterations < 1:
            if not is_whole(self.max_iterations) or self.max_iterations < 1:
                raise IKOptionError(f"max_iterations must be a whole number >= 1, got {self.max_iterations!r}",
                                    "max_iterations")
            put(self, "max_iterations", int(self.max_iterations))
        if type(self.restarts) is not int:
            if self.restarts is not None and (not is_whole(self.restarts) or self.restarts < 0):
                raise IKOptionError(f"restarts must be a whole number >= 0, got {self.restarts!r}", "restarts")
            put(self, "restarts", 0 if self.restarts is None else int(self.restarts))
        elif self.restarts < 0:
            raise IKOptionError(f"restarts must be a whole number >= 0, got {self.restarts!r}", "restarts")
        timeout = self.timeout
        if timeout is not None and (type(timeout) is not float or not timeout > 0.0):
            if not (is_real(timeout) or timeout == math.inf) or not timeout > 0:
                raise IKOptionError(f"timeout must be > 0 seconds or None, got {timeout!r}", "timeout")
            put(self, "timeout", float(timeout))
        if self.rng is not None:
            check_rng(self.rng)
        if self.active_joints is not None and type(self.active_joints) is not tuple:
            put(self, "active_joints", sequence(self.active_joints, "active_joints", one=True))
        if not (self.axis_tolerances is None and self.weights is None and self.lower is None and self.upper is None):
            self._arrays(put)
        if not (self.avoid_collisions is False and self.objective is None and self.solutions is None
                and self.threads is None):
            self._choices()

    def _arrays(self, put) -> None:
        """Check and freeze the array options."""
        if self.axis_tolerances is not None:
            given = numbers(self.axis_tolerances, "axis_tolerances")
            if np.isnan(given).any() or (given < 0).any():
                raise IKOptionError(f"axis_tolerances must be >= 0 (inf frees an axis), got {given.tolist()}",
                                    "axis_tolerances")
            put(self, "axis_tolerances", _frozen(given.tolist()))
        if self.weights is not None:
            w = numbers(self.weights, "weights", vector=True)
            if not np.isfinite(w).all() or (w < 0).any():
                raise IKOptionError(f"weights must be finite and >= 0, got {w.tolist()}", "weights")
            put(self, "weights", _frozen(w.tolist()))
        for name in ("lower", "upper"):
            given = getattr(self, name)
            if given is not None and type(given) is not tuple:
                given = numbers(given, name, vector=True)
                put(self, name, tuple(given.tolist()) if given.ndim == 1 else _frozen(given.tolist()))

    def _choices(self) -> None:
        """Check the collision, objective, solutions and threads options."""
        if self.threads is not None:
            check_threads(self.threads)
        if not (self.avoid_collisions is None or isinstance(self.avoid_collisions, (bool, CollisionModel))):
            raise IKOptionError("avoid_collisions must be a bool or a CollisionModel, got "
                                f"{type(self.avoid_collisions).__name__}", "avoid_collisions")
        if self.objective is not None and self.objective not in OBJECTIVES:
            raise IKOptionError(f"objective must be one of {list(OBJECTIVES)} or None, got {self.objective!r}",
                                "objective")
        if self.solutions is not None:
            if not is_whole(self.solutions) or self.solutions < 1:
                raise IKOptionError(f"solutions must be a whole number >= 1, got {self.solutions!r}", "solutions")
            if not is_real(self.solution_distance) or not self.solution_distance > 0:
                raise IKOptionError(f"solution_distance must be > 0, got {self.solution_distance!r}",
                                    "solution_distance")

    @property
    def collisions(self) -> bool:
        """Whether converged configurations must be free of self-collision."""
        return self.avoid_collisions is not None and self.avoid_collisions is not False

    def call_key(self) -> tuple:
        """What the cached IK call of these options depends on (see :func:`robokin_ros.ik.call.ik_call`)."""
        return (self.base, self.active_joints, self.position_tolerance, self.rotation_tolerance, self.axis_tolerances,
                self.weights, self.max_iterations, self.restarts, self.lower, self.upper, self.collisions)


def effective_bounds(model: RobotModel, lower, upper) -> tuple[Array, Array]:
    """Effective ``(n_q,)`` bounds: the model's limits intersected with the overrides ``lower``,
    ``upper`` (None, or ``(n_q,)``).

    Raises:
        ShapeError: an override not ``(n_q,)``. NonFiniteError: NaN in an override.
        JointLimitError: an override that leaves a joint no admissible value.
    """
    if lower is None and upper is None and not model.quaternion_slices:
        return model.q_lower, model.q_upper
    lo, hi = model.q_lower.copy(), model.q_upper.copy()
    for name, given, pick in (("lower", lower, np.maximum), ("upper", upper, np.minimum)):
        if given is None:
            continue
        given = numbers(given, name, vector=True)
        if given.shape != (model.n_q,):
            raise ShapeError(name, f"({model.n_q},)", given.shape)
        if np.isnan(given).any():
            bad = np.flatnonzero(np.isnan(given))
            raise NonFiniteError(name, bad.tolist(), [model.q_names[i] for i in bad])
        if name == "lower":
            lo = pick(lo, given)
        else:
            hi = pick(hi, given)
    for s in model.quaternion_slices:
        lo[s], hi[s] = -1.0, 1.0
    empty = np.flatnonzero(lo > hi)
    if empty.size:
        i = empty[0]
        value = hi[i] if upper is not None and hi[i] < model.q_upper[i] else lo[i]
        raise JointLimitError(model.q_names[i], float(value),
                              float(model.q_lower[i]), float(model.q_upper[i]))
    return lo, hi


def clamped_seeds(model: RobotModel, seeds: Array, lower: Array, upper: Array) -> Array:
    """``seeds (..., n_q)`` clamped into ``lower, upper (n_q,)``, floating joints' quaternions
    normalised (a new array): the seeds IK starts from."""
    out = np.minimum(np.maximum(seeds, lower), upper)
    for s in model.quaternion_slices:
        out[..., s] /= np.linalg.norm(out[..., s], axis=-1, keepdims=True)
    return out


@dataclasses.dataclass(frozen=True)
class Tolerances:
    """What the solver's iterations take of the options for a number of tips."""

    position: float
    rotation: float
    rows: tuple[tuple[int, int, float, float], ...]  # constrained axes: (tip, axis 0-5, √weight, dead band)
    world: bool                                      # no dead band, no free axis: step in world axes
    max_iterations: int
    restarts: int


def tolerances(options: IKOptions, nt: int) -> Tolerances:
    """The :class:`Tolerances` of ``options`` for ``nt`` tips.

    Raises:
        ShapeError: ``axis_tolerances`` not ``(6,)`` nor ``(nt, 6)``, ``weights`` not ``(nt,)``.
    """
    box = [[0.0] * 6] * nt
    if options.axis_tolerances is not None:
        given = np.array(options.axis_tolerances, float)
        if given.shape not in ((6,), (nt, 6)):
            raise ShapeError("axis_tolerances", f"(6,) or ({nt}, 6)", given.shape)
        box = np.broadcast_to(given, (nt, 6)).tolist()
    sqrt_w = [1.0] * nt
    if options.weights is not None:
        w = np.array(options.weights, float)
        if w.shape != (nt,):
            raise ShapeError("weights", f"({nt},)", w.shape)
        sqrt_w = np.sqrt(w).tolist()
    rows = tuple((k, i, sqrt_w[k], box[k][i]) for k in range(nt) for i in range(6) if math.isfinite(box[k][i]))
    return Tolerances(options.position_tolerance, options.rotation_tolerance, rows, not any(any(b) for b in box),
                      options.max_iterations, options.restarts)
