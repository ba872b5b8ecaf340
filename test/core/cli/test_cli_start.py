"""The ``robokin`` executable's start (issue 30: "the first run of bench / ik / view on a new
robot says what it is doing within 1 s"; issue 31: "bench <new robot> prints its first line
within 1 s and finishes within 15 s").

Decided by order, never by the clock: ``bench``, ``ik`` and ``view`` print their first line
before any module of robokin_ros, numpy or numba is imported (an import hook stops the process
at the first such import); a Ctrl-C during the imports exits 130 without a traceback; ``bench``
on a robot whose kernels are not compiled yet ends while its compiles are held up forever (a
``sitecustomize`` holds the compile processes), its rows marked cold.

Before: the console script was ``robokin_ros.cli:entry_point``, whose first import loads the
core (``robokin_entry.robokin`` did not exist); bench waited for every compile (50-83 s on a
humanoid), and forever on a compile that does not end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import robokin_entry

pytestmark = pytest.mark.slow   # starts processes

ROOT = Path(__file__).resolve().parents[3]
SO101 = str(ROOT / "robokin_ros" / "robots" / "so101_arm.urdf")
#: The first import of these (top-level names) stops the process of :func:`start`.
HEAVY = ("robokin_ros", "numpy", "numba")
#: Program: an import hook that prints ``IMPORT name`` and then ``then`` (Python) at the first
#: import of a :data:`HEAVY` module, then runs the ``robokin`` executable's entry point.
PROGRAM = """
import os, sys, time
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {heavy!r}:
            print("IMPORT " + name, file=sys.stderr, flush=True)
            {then}
        return None
sys.meta_path.insert(0, Hook())
import robokin_entry
sys.exit(robokin_entry.robokin())
"""


def environment(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **extra)


def start(argv, then: str) -> subprocess.Popen:
    code = PROGRAM.format(heavy=HEAVY, then=then)
    return subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=environment(), cwd=str(ROOT))


@pytest.mark.parametrize("argv, line", [
    (["bench", SO101], "robokin bench: timing FK, Jacobians and IK of so101_arm.urdf \u2014 loading\u2026"),
    (["ik", SO101, "--pose", "0.1", "0", "0.2", "--position-only"],
     "robokin ik: solving IK on so101_arm.urdf \u2014 loading\u2026"),
    (["view", "--port", "8123", SO101], "robokin view: a 3D view of so101_arm.urdf \u2014 loading\u2026"),
], ids=["bench", "ik", "view"])
def test_the_first_line_comes_before_any_import_of_the_core(argv, line):
    proc = start(argv, "os._exit(99)")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 99, err
    assert err.splitlines() == [line, "IMPORT robokin_ros"], err
    assert out == ""


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["bench", "--help"], ["ik", "-h", SO101], ["bench"],
                                  ["check", SO101], ["fk", SO101]], ids=lambda argv: " ".join(Path(a).name for a in argv))
def test_help_version_usage_errors_and_other_commands_print_no_first_line(argv):
    proc = start(argv, "os._exit(99)")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 99 and err.splitlines() == ["IMPORT robokin_ros"], err


def test_the_file_of_the_first_line_is_the_robot_description():
    first_line = robokin_entry.first_line
    assert first_line(["view", "--srdf", "a/panda.srdf", "b/panda.urdf"]).startswith("robokin view: a 3D view of panda.urdf ")
    assert "of arm.urdf.xacro " in first_line(["bench", "--tip", "tool0", "x/arm.urdf.xacro"])
    assert "on robot.txt " in first_line(["ik", "robot.txt", "--pose", "1", "2", "3"])
    assert first_line(["reach", "robot.urdf"]) is None and first_line([]) is None


@pytest.mark.parametrize("argv", [["bench", SO101], ["check", SO101]], ids=["bench", "check"])
def test_ctrl_c_during_the_imports_exits_130_without_a_traceback(argv):
    proc = start(argv, "time.sleep(600)")   # the imports take long: Ctrl-C comes during them
    try:
        seen = []
        for line in proc.stderr:   # until the imports have begun
            seen.append(line)
            if line.startswith("IMPORT"):
                break
        assert seen and seen[-1].startswith("IMPORT robokin_ros"), seen
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


#: sitecustomize of the compile processes' held-up run. A process that compiles kernels
#: (:data:`robokin_ros.kernels.compile_process.WORKER` reads its job from stdin) writes its pid
#: to $HELD_COMPILES and waits until its parent (the pid its parent gave it, its last argument)
#: has gone, compiling nothing. The ``robokin`` process ends (``os._exit``: it leaves while its
#: compiles run) only once a compile process has written its pid (an event, not the scheduler's
#: luck: on a busy machine bench could end before the compile process had started), waiting up
#: to 4,000 polls for it.
HOLD_COMPILES = """
import os, sys, time
argv = " ".join(getattr(sys, "orig_argv", ()))
if "pickle.loads(sys.stdin" in argv:
    parent = int(sys.orig_argv[-1])
    held = os.open(os.environ["HELD_COMPILES"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(held, f"{os.getpid()}\\n".encode())
    os.close(held)
    while os.getppid() == parent:
        time.sleep(0.05)
    os._exit(3)
elif "robokin_entry" in argv:
    exit_now = os._exit
    def exit_once_held(code):
        for _ in range(4000):
            if os.path.exists(os.environ["HELD_COMPILES"]) and os.path.getsize(os.environ["HELD_COMPILES"]):
                break
            time.sleep(0.05)
        exit_now(code)
    os._exit = exit_once_held
"""


def test_bench_on_a_robot_new_to_the_machine_does_not_wait_for_its_compiles(tmp_path):
    pytest.importorskip("numba")
    pytest.importorskip("tqdm")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HOLD_COMPILES)
    held = tmp_path / "held"
    env = environment(ROBOKIN_CACHE_DIR=str(tmp_path / "kernels"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
                      HELD_COMPILES=str(held))
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    code = "import sys, robokin_entry; sys.exit(robokin_entry.robokin())"
    proc = subprocess.run([sys.executable, "-c", code, "bench", SO101, "-n", "300"], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=300)   # before: waited on the held compile (forever)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    err = proc.stderr.splitlines()
    assert err[0].startswith("robokin bench: timing FK, Jacobians and IK of so101_arm.urdf"), err
    assert "robokin: compiling kernels for so101_arm (first run; cached afterwards)…" in err, err
    assert not any(re.search(r"compiled \d+ kernels? for", line) for line in err), err   # none finished
    # (the closing line is bench's last; compile notices of a burst that starts while the process
    # waits for its held compile to write its pid may follow it)
    closing = [line for line in err if not line.startswith("robokin: compiling kernels for ")][-1]
    assert "the rows marked cold or generic ran while so101_arm's kernels compiled" in closing, err
    rows = [line for line in proc.stdout.splitlines() if line.startswith("  ") and "Pinocchio" not in line]
    assert len(rows) == 5, proc.stdout
    assert all("cold (compiling in the background)" in row for row in rows), proc.stdout
    assert re.search(r"IK of tool, 200 targets, 5 ms each, numpy path, cold \[us/solve\] \(\d+\.\d % solved\) +\d",
                     proc.stdout), proc.stdout
    assert re.search(r"prepared Kinematics\(model\)\.fk\(q, out\) \[us\] +- +cold", proc.stdout), proc.stdout
    assert held.exists(), "no compile process started while bench ran"
    pids = [int(p) for p in held.read_text().split()]
    assert pids   # the compile was held up while bench ran
    for _ in range(400):   # the held compile processes end with bench (iteration budget: 400 polls)
        alive = [pid for pid in pids if running(pid)]
        if not alive:
            break
        time.sleep(0.05)
    assert not alive, alive


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_the_robokin_executable_starts_in_the_entry_module():
    """What the console script runs (pip and colcon read setup.py's entry points)."""
    text = (ROOT / "setup.py").read_text()
    assert re.search(r"""['"]robokin = robokin_entry:robokin['"]""", text), "setup.py: robokin's entry point"
