"""The numba accelerator at its documented path: :mod:`robokin_ros.kernels.accel`, plus :func:`prepare`
and :func:`cache_dir` (:mod:`robokin_ros.kernels.disk_cache`).

Every other attribute reads the real module's (``robokin_ros.accel.MIN_BATCH``, ``active()``).
Assigning through this path is deprecated (a DeprecationWarning; it still sets the real module's
attribute): switch the accelerator for a block with ``with robokin_ros.kernels.use(accelerated=False):``
and read it with ``robokin_ros.kernels.selected().accelerated``.
"""

import sys
import types
import warnings

from .kernels import accel as _accel
from .kernels.disk_cache import cache_dir
from .kernels.preparation import prepare

__all__ = ["cache_dir", "prepare"]


class _AccelModule(types.ModuleType):
    """This module, reading (and, deprecated, assigning) :mod:`robokin_ros.kernels.accel`'s attributes."""

    def __getattr__(self, name):
        return getattr(_accel, name)

    def __setattr__(self, name, value):
        if name.startswith("__") or name not in _accel.__dict__:
            super().__setattr__(name, value)
            return
        replacement = "`with robokin_ros.kernels.use(accelerated=...):`" if name == "enabled" else \
            f"robokin_ros.kernels.accel.{name}"
        warnings.warn(f"assigning robokin_ros.accel.{name} is deprecated: use {replacement}", DeprecationWarning,
                      stacklevel=2)
        setattr(_accel, name, value)


sys.modules[__name__].__class__ = _AccelModule
