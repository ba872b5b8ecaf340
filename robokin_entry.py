"""Entry points of the ``kin_node`` and ``web_view`` executables, importing nothing heavy first.

Ctrl-C can come at any moment of start-up: under ``ros2 launch`` the first 1-3 s are spent
importing rclpy, numpy, numba and robokin_ros, and Python's own SIGINT handler then raised
KeyboardInterrupt inside some import (a traceback, exit -2). Here SIGINT and SIGTERM are recorded
from the first line on (this module imports only the standard library, and it lives outside the
robokin_ros package, whose ``__init__`` loads the core); a stop requested during the imports ends
the process with exit code 0 once they are done, without starting the node. Afterwards the
node's own handling takes over (:func:`robokin_ros.node.main.main`), and a ``web_view`` run ends
with further stop signals ignored, so a second Ctrl-C from launch's process group cannot end it
with -2 during Python's finalisation.
"""

import signal
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class EarlyStop:
    """Records SIGINT/SIGTERM while the executable imports its modules.

    Attributes:
        signum: the first stop signal received (None: none).
    """

    def __init__(self):
        self.signum = None
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)

    def _handle(self, signum, frame):
        if self.signum is None:
            self.signum = signum


def ignore_stop_signals():
    """Ignore further stop signals: the process is exiting."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def kin_node():
    """The ``kin_node`` executable: :func:`robokin_ros.node.main.main` (exit code 0 when stopped
    during start-up)."""
    early = EarlyStop()
    from robokin_ros.node.main import main
    if early.signum is not None:
        ignore_stop_signals()
        return 0
    return main(early=early)


def web_view():
    """The ``web_view`` executable: :func:`robokin_ros.node.web_view.main` (exit code 0 when
    stopped during start-up, or by a Ctrl-C that reaches it while it shuts down)."""
    early = EarlyStop()
    from robokin_ros.node.web_view import main
    if early.signum is not None:
        ignore_stop_signals()
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)   # web_view's own handling (rclpy's)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        return main()
    except KeyboardInterrupt:   # a second Ctrl-C during its teardown
        return 0
    finally:
        ignore_stop_signals()


if __name__ == '__main__':
    sys.exit({'kin_node': kin_node, 'web_view': web_view}[sys.argv.pop(1)]())
