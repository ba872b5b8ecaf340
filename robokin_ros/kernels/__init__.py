"""The kernels: per-model plans, the code emitter, generated FK and dynamics, the numba accelerator.

Layered bottom-up: :mod:`.plan` (per-model constants) and :mod:`.emitter` (straight-line source)
under :mod:`.fk_codegen` and :mod:`.dynamics_codegen` (the generated kernels), which
:mod:`.accel` compiles with numba; :mod:`.selection` chooses generated or generic kernels;
:func:`prepare` (in :mod:`.preparation`) compiles a model's kernels ahead of use.
"""

from .preparation import prepare
from .selection import use

__all__ = ["prepare", "use"]
