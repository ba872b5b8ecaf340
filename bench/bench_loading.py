"""Benchmark of URDF loading time against size: serial chains and stars, 100 to 20,000 links.

Usage: ``python3 bench/bench_loading.py [--quick] [--max-links N]``. For each generated document
prints the seconds ``RobotModel.from_urdf`` takes (best of 3 below 5,000 links, else one run),
its peak Python memory (tracemalloc) relative to the document's size, the seconds of
Pinocchio's ``buildModelFromXML`` (urdfdom + model building, C++) on the same text in the same
run, the ratio ours / Pinocchio, and the growth exponent between consecutive sizes
(log t2/t1 / log n2/n1: ~1 is linear). Also loads the largest real robots of the corpus.
Target (issue 10): time roughly linear in size; <= 1 s for 10,000 links.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import subprocess
import sys
import tempfile
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from timing import best_of  # noqa: E402

from robokin_ros import RobotModel  # noqa: E402

JOINT = ('<joint name="j{i}" type="revolute"><parent link="l{p}"/><child link="l{i}"/>'
         '<origin xyz="0 0 0.01" rpy="0 0 0"/><axis xyz="0 0 1"/>'
         '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n')
LINK = ('<link name="l{i}"><inertial><mass value="1"/>'
        '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'
        '<visual><geometry><cylinder radius="0.01" length="0.01"/></geometry></visual></link>\n')


def document(n_links: int, shape: str) -> str:
    """A URDF of ``n_links`` links: each joint's parent is the previous link (chain) or the root (star)."""
    parts = ['<robot name="bench">\n', LINK.format(i=0)]
    for i in range(1, n_links):
        parts.append(LINK.format(i=i))
        parts.append(JOINT.format(i=i, p=i - 1 if shape == "chain" else 0))
    parts.append("</robot>\n")
    return "".join(parts)


_PIN_TIMER = """
import sys, time, pinocchio as pin
text = open(sys.argv[1], encoding="utf-8").read()
best = float("inf")
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter(); pin.buildModelFromXML(text); best = min(best, time.perf_counter() - t0)
print(best)
"""


def pinocchio_seconds(text: str, repeats: int) -> str:
    """Pinocchio's best time, run in a child process: it crashes (stack overflow) on deep chains."""
    with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
        f.write(text)
    try:
        run = subprocess.run([sys.executable, "-c", _PIN_TIMER, f.name, str(repeats)],
                             capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "timeout"
    finally:
        os.unlink(f.name)
    if run.returncode != 0:
        return "SIGSEGV" if run.returncode == -11 else f"exit {run.returncode}"
    return run.stdout.strip().splitlines()[-1]


def have_pinocchio() -> str | None:
    try:
        import pinocchio as pin
    except ImportError:
        return None
    return pin.__version__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 5,000 links")
    parser.add_argument("--max-links", type=int, default=20000)
    args = parser.parse_args()
    sizes = [n for n in (100, 400, 1600, 5000, 10000, 20000) if n <= (5000 if args.quick else args.max_links)]
    pin = have_pinocchio()
    print(f"URDF loading (python {sys.version.split()[0]}; Pinocchio {pin or 'absent'}, in a child process)")
    print(f"{'shape':6} {'links':>6} {'MB':>6} {'ours s':>8} {'peak/doc':>9} {'pin s':>8} {'ours/pin':>9} {'growth':>7}")
    for shape in ("chain", "star"):
        previous = None
        for n in sizes:
            text = document(n, shape)
            repeats = 3 if n < 5000 else 1
            tracemalloc.start()
            model = RobotModel.from_urdf(text)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert model.n_links == n
            ours = best_of(lambda: RobotModel.from_urdf(text), repeats)
            theirs = pinocchio_seconds(text, repeats) if pin else "absent"
            try:
                ratio, theirs = f"{ours / float(theirs):9.2f}", f"{float(theirs):8.3f}"
            except ValueError:
                ratio = "-"
            growth = "" if previous is None else f"{math.log(ours / previous[1]) / math.log(n / previous[0]):7.2f}"
            print(f"{shape:6} {n:6d} {len(text) / 1e6:6.2f} {ours:8.3f} {peak / len(text):9.1f} "
                  f"{theirs:>8} {ratio:>9} {growth:>7}")
            previous = (n, ours)
    corpus = os.path.join(HERE, "..", "..", "shared", "urdf-corpus")
    files = sorted(glob.glob(os.path.join(corpus, "*.urdf")), key=os.path.getsize)[-3:]
    for path in files:
        text = open(path, encoding="utf-8").read()
        ours = best_of(lambda: RobotModel.from_urdf(text), 5)
        theirs = float(pinocchio_seconds(text, 5)) if pin else math.nan
        print(f"corpus {os.path.basename(path):28} {len(text) / 1e6:5.2f} MB  ours {ours * 1e3:7.2f} ms  "
              f"pin {theirs * 1e3:7.2f} ms  ours/pin {ours / theirs:5.2f}")


if __name__ == "__main__":
    main()
