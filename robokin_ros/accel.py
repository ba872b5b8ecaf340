"""The numba accelerator at its documented path: :mod:`robokin_ros.kernels.accel`, plus :func:`prepare`.

Every attribute reads and assigns the real module's (``robokin_ros.accel.enabled = False``
switches the accelerator off everywhere; ``monkeypatch.setattr`` on this module patches what runs).
"""

import sys
import types

from .kernels import accel as _accel
from .kernels.preparation import prepare

__all__ = ["prepare"]


class _AccelModule(types.ModuleType):
    """This module, forwarding every attribute it does not define to :mod:`robokin_ros.kernels.accel`."""

    def __getattr__(self, name):
        return getattr(_accel, name)

    def __setattr__(self, name, value):
        if name in _accel.__dict__:
            setattr(_accel, name, value)
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in _accel.__dict__:
            delattr(_accel, name)
        else:
            super().__delattr__(name)


sys.modules[__name__].__class__ = _AccelModule
