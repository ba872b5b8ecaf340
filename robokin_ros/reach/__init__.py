"""Reachability maps: which poses of a tip a robot reaches, voxel by voxel.

:func:`reachability_map` builds a :class:`ReachMap` (saved and loaded as a documented ``.npz``,
:func:`load_reach_map`); the work is cut into chunks of voxels (:mod:`.chunks`) run by local
processes or Ray tasks (:mod:`.engines`), each chunk a deterministic function of the URDF text,
the :class:`ReachParameters` and its index, kept for resuming in verified files
(:mod:`.chunk_files`, read and written by :mod:`.files`); a stopped run says what it kept
(:mod:`.failures`). :mod:`.grid` (:func:`reach_sphere`, a sphere holding every tip position,
and the voxels within it), :mod:`.orientations` (the rotations tried at each voxel). Core
only: never imports rclpy.
"""

from .failures import KeptChunks, ReachInterrupted, ReachWorkerError
from .grid import VoxelGrid, reach_grid, reach_sphere
from .orientations import cone_orientations, uniform_orientations
from .parameters import MAX_ORIENTATIONS, MAX_POSES, MAX_VOXELS, ReachParameters
from .reach_map import ReachMap, RunStats, load_reach_map, reachability_map

__all__ = ["MAX_ORIENTATIONS", "MAX_POSES", "MAX_VOXELS", "KeptChunks", "ReachInterrupted", "ReachMap",
           "ReachParameters", "ReachWorkerError", "RunStats", "VoxelGrid", "cone_orientations", "load_reach_map",
           "reach_grid", "reach_sphere", "reachability_map", "uniform_orientations"]
