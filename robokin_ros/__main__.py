"""``python -m robokin_ros``: the ``robokin`` command (see :mod:`robokin_ros.cli`)."""

from .cli import entry_point

if __name__ == "__main__":
    entry_point()
