"""The SRDF reader at its documented path: this name is :mod:`robokin_ros.model.srdf` itself."""

import sys

from .model import srdf as _srdf

sys.modules[__name__] = _srdf
