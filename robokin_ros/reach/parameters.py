"""What a reachability map is made of, checked once: :class:`ReachParameters`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

from ..checks import is_real, is_whole
from ..errors import ArgumentError

#: Most voxels a map may hold (a 1 cm map of a 1 m arm has about 4.5 million).
MAX_VOXELS = 10_000_000
#: Most orientations tried per voxel.
MAX_ORIENTATIONS = 10_000
#: Most poses (voxels x orientations) a map may hold: the run keeps a bool per pose in memory
#: (1 GB at the limit; a 1 cm map of a 1 m arm with 50 orientations has about 230 million).
MAX_POSES = 1_000_000_000
#: Most poses per chunk (the unit of work of a process or a Ray task, and of resuming).
MAX_CHUNK_POSES = 1_000_000
#: Most IK iterations per pose.
MAX_ITERATIONS = 10_000


@dataclasses.dataclass(frozen=True)
class ReachParameters:
    """The parameters of a reachability map (everything but the robot).

    Attributes:
        tip: the link whose poses are mapped.
        base: the link the grid is expressed in (None: the root link).
        resolution: [m] voxel edge.
        orientations: orientations tried per voxel.
        cone: None: orientations uniform on SO(3); else ``(x, y, z, half_angle)``: the tip's z axis
            within ``half_angle`` [rad] of the direction ``(x, y, z)`` (in the base frame), the
            rotation about it free.
        seed: integer seed of the IK seeds and restarts (chunk ``k`` uses ``(seed, k)``).
        iterations: IK iterations per pose (restarts included).
        position_tolerance: [m], rotation_tolerance: [rad] what counts as reached.
        collisions: True: a pose reached only in self-collision does not count.
        manipulability: True: also the mean Yoshikawa manipulability ``sqrt(det(J Jᵀ))`` of the
            solutions per voxel.
        chunk_poses: poses per chunk (about; whole voxels per chunk).
    """

    tip: str
    base: str | None = None
    resolution: float = 0.05
    orientations: int = 50
    cone: tuple[float, float, float, float] | None = None
    seed: int = 0
    iterations: int = 200
    position_tolerance: float = 1e-4
    rotation_tolerance: float = 1e-3
    collisions: bool = False
    manipulability: bool = False
    chunk_poses: int = 2048

    def __post_init__(self):
        if not isinstance(self.tip, str) or not self.tip:
            raise ArgumentError("tip", f"must be a link name, got {self.tip!r}")
        if self.base is not None and not isinstance(self.base, str):
            raise ArgumentError("base", f"must be a link name or None, got {self.base!r}")
        if not is_real(self.resolution) or not math.isfinite(self.resolution) or self.resolution <= 0:
            raise ArgumentError("resolution", f"must be a number of metres > 0, got {self.resolution!r}")
        _whole("orientations", self.orientations, 1, MAX_ORIENTATIONS)
        _whole("iterations", self.iterations, 1, MAX_ITERATIONS)
        _whole("chunk_poses", self.chunk_poses, 1, MAX_CHUNK_POSES)
        if not is_whole(self.seed) or self.seed < 0:
            raise ArgumentError("seed", f"must be a whole number >= 0, got {self.seed!r}")
        for name in ("position_tolerance", "rotation_tolerance"):
            value = getattr(self, name)
            if not is_real(value) or not 0 < value <= 1:
                raise ArgumentError(name, f"must be a number in (0, 1], got {value!r}")
        if self.cone is not None:
            cone = tuple(self.cone)
            if len(cone) != 4 or not all(is_real(c) and math.isfinite(c) for c in cone):
                raise ArgumentError("cone", f"must be four numbers (x, y, z, half_angle), got {self.cone!r}")
            if math.hypot(*cone[:3]) < 1e-9:
                raise ArgumentError("cone", f"the axis must not be zero, got {cone[:3]}")
            if not 0 <= cone[3] <= math.pi:
                raise ArgumentError("cone", f"half_angle must be in [0, pi] rad, got {cone[3]!r}")
            object.__setattr__(self, "cone", tuple(float(c) for c in cone))
        for name in ("collisions", "manipulability"):
            if not isinstance(getattr(self, name), bool):
                raise ArgumentError(name, f"must be True or False, got {getattr(self, name)!r}")
        # Plain Python numbers (numpy scalars would not go into JSON).
        for name in ("orientations", "iterations", "chunk_poses", "seed"):
            object.__setattr__(self, name, int(getattr(self, name)))
        for name in ("resolution", "position_tolerance", "rotation_tolerance"):
            object.__setattr__(self, name, float(getattr(self, name)))

    def to_json(self) -> str:
        """The parameters as a JSON object (keys sorted)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ReachParameters:
        """The parameters of :meth:`to_json` text.

        Raises:
            ArgumentError: not a JSON object of these fields with valid values.
        """
        try:
            values = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise ArgumentError("parameters", f"not JSON ({str(error)[:100]})") from None
        fields = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(values, dict) or not set(values) <= fields or "tip" not in values:
            raise ArgumentError("parameters", f"not an object of the fields {sorted(fields)}")
        if isinstance(values.get("cone"), list):
            values["cone"] = tuple(values["cone"])
        return cls(**values)

    def key(self, urdf_sha256: str) -> str:
        """A hex digest naming the map of these parameters on the robot of ``urdf_sha256``
        (its chunk directory): other parameters or another robot never share chunks."""
        return hashlib.sha256(f"{urdf_sha256}\n{self.to_json()}".encode()).hexdigest()[:20]


def _whole(name: str, value, low: int, high: int) -> None:
    if not is_whole(value) or not low <= value <= high:
        raise ArgumentError(name, f"must be a whole number in [{low}, {high}], got {value!r}")
