"""Self-collision checking with coal: geometry, pairs to check, batched checks.

:mod:`.meshes` (mesh URIs to files), :mod:`.geometry` (coal shapes, bounding volumes),
:mod:`.pairs` (link pairs not worth checking, sampled as MoveIt Setup Assistant does),
:mod:`.checker` (:class:`CollisionModel`, :func:`collision_model`), :mod:`.batch`
(:func:`self_collisions`, :func:`pair_collisions`, :func:`in_collision`: configurations
checked over every core).
"""

from ..errors import CollisionUnavailableError
from .batch import Contact, SelfCollisionResult, in_collision, pair_collisions, self_collisions
from .checker import CollisionModel, collision_model, disabled_pairs_by_sampling
from .geometry import bounding_box_model
from .meshes import resolve_mesh_uri

__all__ = ["CollisionModel", "CollisionUnavailableError", "Contact", "SelfCollisionResult", "bounding_box_model",
           "collision_model", "disabled_pairs_by_sampling", "in_collision", "pair_collisions", "resolve_mesh_uri",
           "self_collisions"]
