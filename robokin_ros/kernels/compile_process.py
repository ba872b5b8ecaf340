"""Compiling a generated numba module in a separate process, never in the caller's.

numba compiles with the GIL held for most of the time (6-10 s for an IK loop on 2 cores, minutes
for a humanoid's dynamics): compiled in a thread of the caller, it takes the caller's time.
:func:`compile_module` runs the module in a fresh ``python`` process instead, which calls the
module's functions once with the given arguments, so that numba compiles them into the disk
cache (:mod:`robokin_ros.kernels.disk_cache`); the caller's thread only waits for it (without the
GIL) and then loads the compiled code from the cache, verified (:mod:`robokin_ros.kernels.accel`).

A background compile's process (:func:`robokin_ros.runtime.in_background`: nobody waits for it)
runs at a lower priority, ``nice`` + the runtime's ``background_niceness`` (:data:`NICENESS`, the
lowest, unless set otherwise), from its start (it is started by ``nice``
where the system has it: the interpreter's start and imports take ~0.5 s of CPU): where cores are
few, the threads of the caller that answer requests meanwhile keep the CPU. A compile the caller
waits for (e.g. ``prepare``) runs at the caller's own priority: at the lowest it starved while
other processes held every core.

Whether a module needs this process at all is the caller's record
(:class:`~robokin_ros.kernels.compile_record.CompileRecord`), not numba's files.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys

from ..errors import KernelCheckError
from ..runtime import current_runtime, in_background
from . import notices

#: Most seconds a compile may take (a 60-link humanoid's forward dynamics takes minutes).
COMPILE_TIMEOUT = 1800.0

#: How much lower than the caller's the compiling process's priority is (``nice``): the lowest.
NICENESS = 19

#: ``nice`` (coreutils) where the system has it: the compiling interpreter then starts at its
#: lower priority (its start and imports take ~0.5 s of CPU before its own code could lower it).
_NICE = shutil.which("nice")

#: The start of :data:`WORKER`: the process's niceness raised to ``argv[1]`` (already there when
#: started by ``nice``).
LOWER_PRIORITY = """
import os, sys
try:
    if os.getpriority(os.PRIO_PROCESS, 0) < int(sys.argv[1]):
        os.setpriority(os.PRIO_PROCESS, 0, int(sys.argv[1]))
except (AttributeError, OSError):   # (not on Windows)
    pass
"""

#: The compiling process's program: runs at niceness ``argv[1]``; reads ``(path, name,
#: source, calls)`` (a pickle, from its parent) on stdin, runs ``source`` as the module ``name``
#: at ``path`` (numba keys its cache on that file, which the parent has written and verified),
#: and calls ``function(*args)`` for each of ``calls``; exits at once when its parent, the process
#: ``argv[2]`` (its pid, given by the parent: read here, the parent's pid would be whatever
#: adopted this process if the parent had already gone), is no longer its parent (nothing is left
#: compiling for nobody; before, a process started as its parent ended watched its adopter forever).
#: Imports numba and numpy only.
WORKER = LOWER_PRIORITY + """
import pickle, threading, time, types
parent = int(sys.argv[2])
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(3)
threading.Thread(target=watch, daemon=True).start()
path, name, source, calls = pickle.loads(sys.stdin.buffer.read())
module = types.ModuleType(name)
module.__file__ = path
sys.modules[name] = module
exec(compile(source, path, "exec"), module.__dict__)
for function, args in calls:
    getattr(module, function)(*args)
"""


def worker_command(program: str, lower: int) -> list[str]:
    """The command running ``program`` (:data:`WORKER`) in a new interpreter ``lower`` (0 to
    :data:`NICENESS`) lower in priority than this process (started by ``nice`` where there is one
    and ``lower`` > 0, which becomes that interpreter: this process stays its parent), with this
    process's pid as its ``argv[2]``."""
    try:
        here = os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):   # (not on Windows)
        here = 0
    python = [sys.executable, "-c", program, str(min(19, here + lower)), str(os.getpid())]
    return [_NICE, "-n", str(lower), *python] if _NICE and lower > 0 else python


def compile_module(path: str, name: str, source: str, calls, robot: str) -> None:
    """Compile the generated module ``source`` (stored at ``path`` as ``name``) into numba's
    disk cache in a separate process, calling ``function(*args)`` for each ``(function, args)``
    of ``calls`` there; waits for it (without the GIL). Sends the compile notices of ``robot``
    (:mod:`robokin_ros.kernels.notices`).

    Raises:
        KernelCheckError: the process failed (its last error line), or ran past
            :data:`COMPILE_TIMEOUT`.
    """
    data = pickle.dumps((path, name, source, list(calls)))
    with notices.compiling(robot):
        try:
            lower = current_runtime().settings.background_niceness if in_background() else 0
            done = subprocess.run(worker_command(WORKER, lower), input=data, capture_output=True,  # noqa: S603
                                  timeout=COMPILE_TIMEOUT, check=False)
        except subprocess.TimeoutExpired as error:
            raise KernelCheckError(f"compiling {name} took more than {COMPILE_TIMEOUT:g} s") from error
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines() or [f"exit status {done.returncode}"]
        errors = [line for line in lines if "Error:" in line or "Exception:" in line]
        raise KernelCheckError(f"compiling {name} failed in its process: {(errors or lines)[-1].strip()}")
