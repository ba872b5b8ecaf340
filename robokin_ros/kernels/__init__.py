"""The kernels: per-model plans, the code emitter, generated FK and dynamics, the numba accelerator.

Layered bottom-up: :mod:`.plan` (per-model constants) and :mod:`.emitter` (straight-line source)
under :mod:`.fk_codegen` and :mod:`.dynamics_codegen` (the generated kernels); :mod:`.numba_source`
wraps their source into numba modules, which :mod:`.accel` compiles and loads, verified, through
the never-trusted disk cache of :mod:`.disk_cache`, after :mod:`.compile_process` has compiled
them there in a separate process (never in the caller's; :mod:`.notices` tells subscribers when
a robot's kernels compile); :mod:`.lazy_accel` loads them on demand in the background;
:mod:`.parallel` runs a batch over chunks on every core. :func:`use` (a context manager) and
:func:`selected` (in :mod:`.selection`) choose and read which kernels run, generated or
generic, on numba or numpy; :func:`prepare` (in :mod:`.preparation`) compiles a model's
kernels ahead of use.
"""

from .preparation import prepare
from .selection import Selection, selected, use

__all__ = ["Selection", "prepare", "selected", "use"]
