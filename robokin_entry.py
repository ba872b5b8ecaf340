"""Entry points of the ``kin_node``, ``servo_node``, ``web_view`` and ``robokin`` executables, importing
nothing heavy first.

Ctrl-C can come at any moment of start-up: under ``ros2 launch`` the first 1-3 s are spent
importing rclpy, numpy, numba and robokin_ros, and Python's own SIGINT handler then raised
KeyboardInterrupt inside some import (a traceback, exit -2). Here SIGINT and SIGTERM are recorded
from the first line on (this module imports only the standard library, and it lives outside the
robokin_ros package, whose ``__init__`` loads the core); a stop requested during the imports ends
the process with exit code 0 once they are done, without starting the node. Afterwards the
node's own handling takes over (:func:`robokin_ros.node.main.main`), and a ``web_view`` run ends
with further stop signals ignored, so a second Ctrl-C from launch's process group cannot end it
with -2 during Python's finalisation.

``robokin bench``, ``ik`` and ``view`` say what they do in one line on stderr before those imports
(:func:`first_line`; a new user waited seconds in silence), and a Ctrl-C during the imports of any
``robokin`` command ends it at once with exit code 130, without a traceback (:func:`robokin`).
"""

import os
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
        # The launch files start the executables with these signals blocked (held pending from
        # the exec on, robokin_ros/node/launch_prefix.py): one that came while Python started
        # is delivered here, to the handler above.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

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


def servo_node():
    """The ``servo_node`` executable: :func:`robokin_ros.node.servo_node.main` (exit code 0 when
    stopped during start-up)."""
    early = EarlyStop()
    from robokin_ros.node.servo_node import main
    if early.signum is not None:
        ignore_stop_signals()
        return 0
    return main()


def web_view():
    """The ``web_view`` executable: :func:`robokin_ros.node.web_view.main` (exit code 0 when
    stopped during start-up, or by a Ctrl-C that reaches it while it shuts down)."""
    early = EarlyStop()
    from robokin_ros.node.web_view import main
    if early.signum is not None:
        ignore_stop_signals()
        return 0
    signal.signal(signal.SIGINT, _interrupt_once)   # web_view's own handling: a KeyboardInterrupt, once
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        return main()
    except KeyboardInterrupt:   # a second Ctrl-C during its teardown
        return 0
    finally:
        ignore_stop_signals()


def _interrupt_once(signum, frame):
    """The first Ctrl-C of a running ``web_view``: KeyboardInterrupt (its main loop ends and tears
    down); further stop signals are ignored from here on, so a second Ctrl-C from launch's
    process group cannot interrupt the teardown (it did, inside rclpy's logger finaliser)."""
    ignore_stop_signals()
    raise KeyboardInterrupt


#: What the first line of a ``robokin`` command says it does (``{file}``: its robot's file name).
FIRST_LINES = {'bench': 'timing FK, Jacobians and IK of {file}', 'ik': 'solving IK on {file}',
               'view': 'a 3D view of {file}'}
#: How a robot description's file name ends (the FILE among a command's arguments).
DESCRIPTION_SUFFIXES = ('.urdf', '.xacro', '.xml')
#: The exit status of a command stopped by Ctrl-C (as the shell's 128 + SIGINT).
INTERRUPTED = 130


def first_line(argv):
    """The line a ``robokin`` command prints before its imports, or None: ``argv`` (the
    arguments after ``robokin``) runs one of :data:`FIRST_LINES` on a file (a help request or
    a command without a file argument says nothing here; its parser answers).

    The FILE is the first argument ending in one of :data:`DESCRIPTION_SUFFIXES`, else the first
    one that is no option (only its name is shown).
    """
    if not argv or argv[0] not in FIRST_LINES or any(a in ('-h', '--help') for a in argv[1:]):
        return None
    words = [a for a in argv[1:] if not a.startswith('-')]
    file = next((a for a in words if a.lower().endswith(DESCRIPTION_SUFFIXES)), words[0] if words else None)
    if file is None:
        return None
    return f'robokin {argv[0]}: {FIRST_LINES[argv[0]].format(file=os.path.basename(file))} \u2014 loading\u2026'


def _exit_interrupted(signum, frame):
    os._exit(INTERRUPTED)   # during the imports: nothing to clean up, nothing to print


def robokin():
    """The ``robokin`` executable: :func:`first_line` (if any) on stderr, then
    :func:`robokin_ros.cli.main`; exit code :data:`INTERRUPTED` at once on a Ctrl-C during the
    imports (afterwards the command's own handling: 130 too)."""
    signal.signal(signal.SIGINT, _exit_interrupted)
    line = first_line(sys.argv[1:])
    if line:
        print(line, file=sys.stderr, flush=True)
    from robokin_ros.cli import leave, main
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main()
    except KeyboardInterrupt:   # between the imports and the command's own handling
        code = INTERRUPTED
    return leave(code)


if __name__ == '__main__':
    entries = {'kin_node': kin_node, 'web_view': web_view, 'servo_node': servo_node, 'robokin': robokin}
    sys.exit(entries[sys.argv.pop(1)]())
