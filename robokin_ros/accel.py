"""The numba accelerator at its documented path: :mod:`robokin_ros.kernels.accel`, plus :func:`prepare`
and :func:`cache_dir` (:mod:`robokin_ros.kernels.disk_cache`).

Every other attribute reads the real module's (``robokin_ros.accel.MIN_BATCH``, ``active()``);
``enabled`` reads the current runtime's accelerator setting. Nothing here can be assigned: run
with the accelerator off inside ``with robokin_ros.kernels.use(accelerated=False):`` or
``with robokin_ros.using(robokin_ros.Runtime(accelerated=False)):``.
"""

import sys
import types

from .kernels import accel as _accel
from .kernels.disk_cache import cache_dir
from .kernels.preparation import prepare

__all__ = ["cache_dir", "prepare"]


class _AccelModule(types.ModuleType):
    """This module, reading :mod:`robokin_ros.kernels.accel`'s attributes; assigning them raises."""

    def __getattr__(self, name):
        return getattr(_accel, name)

    def __setattr__(self, name, value):
        if name.startswith("__") or (name != "enabled" and name not in dir(_accel)):
            super().__setattr__(name, value)
            return
        replacement = ("`with robokin_ros.kernels.use(accelerated=...):` or a robokin_ros.Runtime(accelerated=...)"
                       if name == "enabled" else "a robokin_ros.Runtime (see docs/api.md, 'Runtime')")
        raise AttributeError(f"robokin_ros.accel.{name} can no longer be assigned: use {replacement}")


sys.modules[__name__].__class__ = _AccelModule
