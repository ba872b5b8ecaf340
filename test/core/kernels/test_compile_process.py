"""Kernels compile in a separate process (issue 31): never in a thread of the caller's.

numba holds the GIL for most of a compile; compiled in a background thread of the caller, it
took the caller's time (timed IK requests starved under load). Now a compile runs in a child
process and the caller's process only loads the result from the verified disk cache. The tests
count numba compiles in this process (none) and measure the CPU time the caller's thread gets
while a compile runs (all of its process's), with a pure-Python loop running meanwhile.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import numba.core.compiler
import pytest

from robokin_ros.kernels import accel, compile_process, notices
from robokin_ros.runtime import Runtime, using

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def heavy_source(lines: int) -> str:
    """A module whose ``f(x)`` takes numba a while to compile (``lines`` dependent operations),
    unique to this call (nothing cached)."""
    body = [f"    a{k} = a{k - 1} * 1.000001 + {k}.5 * x" for k in range(1, lines)]
    return "\n".join([f"# {uuid.uuid4().hex}", "import numba", "",
                      "@numba.njit(cache=True, nogil=True)", "def f(x):", "    a0 = x", *body,
                      f"    return a{lines - 1}", ""])


@pytest.fixture
def compiles_here(monkeypatch):
    """The list of numba compiles run in this process from now on."""
    seen = []
    real = numba.core.compiler.compile_extra

    def counting(*args, **kwargs):
        seen.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(numba.core.compiler, "compile_extra", counting)
    return seen


def test_a_compile_runs_in_another_process_and_loads_here(accelerated, compiles_here):
    sent = []
    source = heavy_source(20)
    # (a runtime of this test's own: other robots' background compiles report to theirs)
    with using(Runtime()), notices.subscribed(sent.append):
        f = accel.load_function(source, "f", [("f", (1.0,))], lambda f: f(2.0) == f.py_func(2.0), "test robot")
        assert f(3.0) == f.py_func(3.0)
        assert accel.load_function(source, "f", [("f", (1.0,))]) is f   # shared, nothing more compiled
    assert compiles_here == []
    assert [(n.robot, n.started) for n in sent] == [("test robot", True), ("test robot", False)]
    assert sent[1].kernels == 1
    assert "compiling kernels for test robot (first run; cached afterwards)" in sent[0].line()


def test_a_failed_compile_is_a_kernel_error_naming_it(accelerated):
    from robokin_ros.errors import KernelCheckError

    source = "import numba\n\n@numba.njit(cache=True)\ndef f(x):\n    return undefined_name(x)\n"
    with pytest.raises(KernelCheckError, match="failed in its process: .*undefined_name"):
        accel.load_function(source, "f", [("f", (1.0,))])


@pytest.mark.slow
def test_the_callers_thread_keeps_the_gil_while_a_kernel_compiles(accelerated, compiles_here):
    """While a kernel compiles (from its start notice to its end notice), a pure-Python loop in
    the caller's thread gets all but a sliver of its process's CPU time (a compile in a thread
    of this process would take half or more), and compiles nothing here."""
    started, ended = threading.Event(), threading.Event()

    def tell(notice):
        (started if notice.started else ended).set()

    with notices.subscribed(tell):
        loader = threading.Thread(target=accel.load_function, args=(heavy_source(200), "f", [("f", (1.0,))]))
        loader.start()
        assert started.wait(60.0)
        cpu_thread, cpu_process, iterations = time.thread_time(), time.process_time(), 0
        while not ended.is_set():
            iterations += 1
        cpu_thread, cpu_process = time.thread_time() - cpu_thread, time.process_time() - cpu_process
        loader.join(600.0)
    assert iterations > 10_000   # the compile lasted long enough to measure
    assert cpu_thread >= 0.9 * cpu_process, (cpu_thread, cpu_process, iterations)
    assert compiles_here == []


def test_a_loaded_module_is_recorded_by_our_record_not_by_numbas_files(accelerated, monkeypatch):
    """Whether a module needs the compile process is our CompileRecord's answer (numba's cache
    files are its private format): written once the module is loaded, it skips the process on
    the next load; a module whose file changed reads as not compiled."""
    from robokin_ros.kernels.compile_record import CompileRecord

    source = heavy_source(4)
    f = accel.load_function(source, "f", [("f", (1.0,))])
    path = f.py_func.__code__.co_filename
    assert accel.in_cache(source) and CompileRecord(path).holds()
    started = []
    monkeypatch.setattr(compile_process, "compile_module", lambda *args: started.append(args))
    accel.loaded().functions.clear()   # (as a new process: loads from numba's cache again)
    assert accel.load_function(source, "f", [("f", (1.0,))])(2.0) == f(2.0)
    assert started == []   # the record held: no compile process
    os.utime(path, ns=(1, 1))   # the module's file changed under the record
    assert not CompileRecord(path).holds() and not accel.in_cache(source)


def spy_on_compiles(monkeypatch) -> list:
    """Each compile process's ``(command, how much lower than this process it runs)``, reported
    by the process itself (its worker's start run with a print of its niceness), in order; the
    compile then runs as it would."""
    seen = []
    real = compile_process.subprocess.run

    def spying(argv, *args, **kwargs):
        report = argv[:]
        report[argv.index(compile_process.WORKER)] = (compile_process.LOWER_PRIORITY
                                                      + "print(os.getpriority(os.PRIO_PROCESS, 0))")
        done = real(report, *args, **kwargs)
        seen.append((argv[0], int(done.stdout.decode().split()[-1]) - os.nice(0)))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(compile_process.subprocess, "run", spying)
    return seen


def test_a_background_compile_runs_at_the_lowest_priority_from_its_start_a_waited_one_at_the_callers(
        accelerated, monkeypatch):
    """A background compile's process (nobody waits for it) runs at nice +19 (the caller's threads
    that answer requests keep the CPU where cores are few), from its interpreter's start where
    ``nice`` exists: the process itself reports its niceness, and the command starts with
    ``nice``. A compile the caller waits for runs at the caller's priority (at +19 it starved
    while other processes held every core)."""
    import shutil

    import robokin_ros as rk

    seen = spy_on_compiles(monkeypatch)
    loaded = []
    thread = rk.Runtime().start_background(lambda: loaded.append(accel.load_function(heavy_source(5), "f",
                                                                                     [("f", (1.0,))])))
    thread.join()
    assert loaded and loaded[0](2.0) == loaded[0].py_func(2.0)
    assert seen == [(shutil.which("nice") or compile_process.sys.executable, min(19, 19 + os.nice(0)) - os.nice(0))]
    f = accel.load_function(heavy_source(6), "f", [("f", (1.0,))])   # waited for, in this thread
    assert f(2.0) == f.py_func(2.0)
    assert seen[1] == (compile_process.sys.executable, 0)


#: A parent of a compiling process (issue 41): starts :data:`~compile_process.WORKER` on a job
#: that never ends (it prints ``started``, then sleeps), prints its pid, then exits at once
#: (``exit``) or when told on stdin (``wait``).
PARENT = """
import os, pickle, subprocess, sys
from robokin_ros.kernels import compile_process
source = "import time\\ndef f():\\n    print('started', flush=True)\\n    time.sleep(600)\\n"
job = pickle.dumps(("never_ends.py", "never_ends", source, [("f", ())]))
child = subprocess.Popen(compile_process.worker_command(compile_process.WORKER, compile_process.NICENESS),
                         stdin=subprocess.PIPE)
child.stdin.write(job)
child.stdin.close()
print(child.pid, flush=True)
if sys.argv[1] == "wait":
    sys.stdin.readline()
os._exit(0)
"""


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("parent_ends", ["exit", "wait"], ids=["before the compile starts", "during the compile"])
def test_a_compiling_process_ends_when_its_parent_has_gone(parent_ends):
    """Whenever the parent goes, its compile process ends. ``exit``: the parent is gone before
    the child has started its interpreter (before, the child then took its adopter's pid for its
    parent's and compiled on for nobody: forever here); ``wait``: the parent goes once the job
    has started."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    parent = subprocess.Popen([sys.executable, "-c", PARENT, parent_ends], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    child = int(parent.stdout.readline())
    try:
        if parent_ends == "wait":
            assert parent.stdout.readline() == "started\n"   # the job runs
            parent.stdin.write("go\n")
            parent.stdin.flush()
        assert parent.wait(60) == 0
        for _ in range(400):   # iteration budget: 400 polls (the child looks every 0.5 s)
            if not running(child):
                break
            time.sleep(0.05)
        assert not running(child), f"compile process {child} outlived its parent"
    finally:
        if running(child):
            os.kill(child, 9)


def test_the_runtime_sets_how_much_lower_a_background_compile_runs(accelerated, monkeypatch):
    """``Runtime(background_niceness=k)``: the background compile's process reports k more than
    this process; out of 0..19 is refused, named."""
    import robokin_ros as rk

    seen = spy_on_compiles(monkeypatch)
    runtime = rk.Runtime(background_niceness=5)
    runtime.start_background(lambda: accel.load_function(heavy_source(7), "f", [("f", (1.0,))])).join()
    assert [lower for _, lower in seen] == [min(19, 5 + os.nice(0)) - os.nice(0)]
    for bad in (-1, 20, 2.0, True):
        with pytest.raises(rk.ArgumentError, match="background_niceness"):
            rk.Runtime(background_niceness=bad)
