"""The launch prefix of the package's executables: their stop signals held from the exec on.

Under ``ros2 launch`` a Ctrl-C in the first ~0.15 s of an executable's life reached Python while
it was still importing its ``site`` module (the virtual environment's ``.pth`` files), before any
line of ours could install a handler: Python printed ``Fatal Python error: init_import_site`` and
a ``KeyboardInterrupt`` traceback (3 of 24 interrupts at 0.02-0.12 s). The launch files therefore
start the executables through ``env --block-signal=INT,TERM`` (GNU coreutils >= 8.31: Ubuntu 22.04
and later): SIGINT and SIGTERM stay pending, not lost, until the executable's first line has its
own handlers in place and unblocks them (``robokin_entry.EarlyStop``), which then end the process
with exit code 0 once its imports are done.

The user's ``--launch-prefix`` (e.g. ``gdb -ex run --args``) keeps working: a node's own prefix
replaces launch's ``launch-prefix`` configuration, so :func:`executable_prefix` puts that first,
filtered by ``launch-prefix-filter`` as launch filters it (a regular expression matched against the
executable's name).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Mapping

#: The command that holds SIGINT and SIGTERM across the exec (``env`` of GNU coreutils).
HOLD_STOP_SIGNALS = ('env', '--block-signal=INT,TERM')


@functools.cache
def can_hold_stop_signals() -> bool:
    """Whether this machine's ``env`` holds signals (:data:`HOLD_STOP_SIGNALS` runs ``true``):
    GNU coreutils 8.31 or later. Elsewhere the executables start as they are (only a Ctrl-C in
    their first ~0.15 s then prints Python's own traceback)."""
    if shutil.which(HOLD_STOP_SIGNALS[0]) is None or shutil.which('true') is None:
        return False
    try:
        done = subprocess.run([*HOLD_STOP_SIGNALS, 'true'], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def executable_prefix(configurations: Mapping[str, str], executable: str) -> str | None:
    """The ``prefix`` of the launch files' ``Node`` for ``executable``: the user's
    ``launch-prefix`` (from the launch context's ``configurations``) when its
    ``launch-prefix-filter`` matches ``executable`` (or there is none), then
    :data:`HOLD_STOP_SIGNALS`; None where this machine cannot hold signals
    (:func:`can_hold_stop_signals`): launch then applies its own ``launch-prefix`` as usual."""
    if not can_hold_stop_signals():
        return None
    user, pattern = configurations.get('launch-prefix', ''), configurations.get('launch-prefix-filter', '')
    parts = [user] if user and re.match(pattern, executable) is not None else []
    return ' '.join([*parts, *HOLD_STOP_SIGNALS])
