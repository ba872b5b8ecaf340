"""Benchmark of the web view (viser): start-up time, update rate, and the live node's rate.

Usage: ``python3 bench/bench_web_view.py [--no-node] [--no-browser] [--screenshots DIR]``.

1. Start-up: wall time from starting ``python -m robokin_ros view FILE --port 0`` to its URL
   line (interpreter, imports, URDF, server), median of 3 runs, with the command's own "ready
   in" figure (load + server + scene, after the imports); bundled robots and a humanoid and two
   mobile manipulators of ../shared/urdf-corpus (their meshes are not in the corpus: collision
   primitives and skeleton stand in).
2. Update rate: ``RobotView.set_configuration`` (one FK, every link frame and slider sent) in a
   loop for 2 s, without a browser and with headless Chromium connected (--no-browser skips it).
3. Live node: joint states published at 100 Hz for 3 s to a ``WebViewNode`` (update_rate 30,
   its default, and 100): view updates per second (needs rclpy; --no-node skips it).

``--screenshots DIR`` also writes the pictures of docs/ (panda at its SRDF 'ready' state, the
humanoid) there.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, ROOT)

from robokin_ros import RobotModel  # noqa: E402
from robokin_ros.model.description import read_description  # noqa: E402
from robokin_ros.model.srdf import parse_srdf  # noqa: E402
from robokin_ros.web import RobotView, import_viser  # noqa: E402
from robokin_ros.web.browser import find_chromium, screenshot  # noqa: E402

CORPUS = os.path.join(ROOT, "..", "shared", "urdf-corpus")
ROBOTS = [("panda", os.path.join(ROOT, "robokin_ros", "robots", "panda.urdf")),
          ("ur5e", os.path.join(ROOT, "robokin_ros", "robots", "ur5e.urdf")),
          ("g1 humanoid", os.path.join(CORPUS, "g1_29dof_hand.urdf")),
          ("fetch", os.path.join(CORPUS, "fetch.urdf")),
          ("tiago", os.path.join(CORPUS, "tiago_hey5.urdf"))]


def startup(path: str) -> tuple[float, float]:
    """(wall seconds to the URL line, the command's 'ready in' seconds)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "robokin_ros", "view", path, "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        for line in proc.stdout:
            found = re.search(r"ready in ([\d.]+) s", line)
            if found:
                return time.perf_counter() - start, float(found.group(1))
        raise RuntimeError(f"robokin view {path} printed no URL")
    finally:
        proc.terminate()
        proc.wait()


def update_rate(view: RobotView, seconds: float = 2.0) -> float:
    qs = view.model.random_configuration(1000, rng=0)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        view.set_configuration(qs[n % len(qs)])
        n += 1
    return n / (time.perf_counter() - start)


def with_browser(server, measure):
    """``measure()`` while headless Chromium has the page open (in a thread); its result."""
    shot = threading.Thread(target=screenshot, args=(f"http://127.0.0.1:{server.get_port()}", "/tmp/bench_web.png"),
                            kwargs={"wait_ms": 20000})
    shot.start()
    deadline = time.monotonic() + 30
    while not server.get_clients() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        return measure() if server.get_clients() else float("nan")
    finally:
        shot.join()


def node_rates(viser) -> dict:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from robokin_ros.node.web_view import LATCHED_QOS, WebViewNode

    text = open(ROBOTS[0][1]).read()
    model = RobotModel.from_urdf(text)
    rclpy.init()
    out = {}
    try:
        for rate in (30.0, 100.0):
            pub_node = rclpy.create_node("bench_web_view_publisher")
            node = WebViewNode(viser, parameter_overrides=[Parameter("port", value=0),
                                                           Parameter("update_rate", value=rate)])
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            executor.add_node(pub_node)
            description = pub_node.create_publisher(String, "/robot_description", LATCHED_QOS)
            joints = pub_node.create_publisher(JointState, "/joint_states", 10)
            description.publish(String(data=text))
            deadline = time.monotonic() + 20
            while node.view is None and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            qs = model.random_configuration(400, rng=1)
            before, start, k = node.updates, time.monotonic(), 0
            while time.monotonic() - start < 3.0:
                joints.publish(JointState(name=list(model.joint_names), position=[float(v) for v in qs[k % 400]]))
                k += 1
                next_at = start + k / 100.0
                while time.monotonic() < next_at:
                    executor.spin_once(timeout_sec=max(0.0, next_at - time.monotonic()))
            out[rate] = (node.updates - before) / (time.monotonic() - start), k / (time.monotonic() - start)
            executor.shutdown()
            node.destroy_node()
            pub_node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-node", action="store_true")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--screenshots", metavar="DIR")
    args = parser.parse_args()
    viser = import_viser()
    robots = [(name, path) for name, path in ROBOTS if os.path.isfile(path)]
    browser = find_chromium() is not None and not args.no_browser

    print("robokin view start-up (median of 3) and update rate of the view")
    print(f"{'robot':14s} {'links':>5s} {'to URL [s]':>10s} {'ready in [s]':>12s} {'updates/s':>10s}"
          + (f" {'with browser':>12s}" if browser else ""))
    for name, path in robots:
        runs = [startup(path) for _ in range(3)]
        wall, ready = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        model = RobotModel.from_urdf_file(path)
        server = viser.ViserServer(host="127.0.0.1", port=0, verbose=False)
        view = RobotView(server, model, urdf_dir=os.path.dirname(path), collisions=False)
        rate = update_rate(view)
        line = f"{name:14s} {model.n_links:5d} {wall:10.2f} {ready:12.2f} {rate:10.0f}"
        if browser:
            line += f" {with_browser(server, lambda view=view: update_rate(view)):12.0f}"
        print(line, flush=True)
        view.remove()
        server.stop()

    if not args.no_node:
        try:
            rates = node_rates(viser)
        except ImportError as error:
            print(f"live node: skipped ({error})")
        else:
            for rate, (updates, published) in rates.items():
                print(f"live node, update_rate {rate:.0f} Hz: {updates:.1f} view updates/s "
                      f"from joint states at {published:.0f} Hz")

    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
        for name, path, state in [("panda", ROBOTS[0][1], "panda_arm: ready"), ("humanoid", ROBOTS[2][1], None)]:
            model = RobotModel.from_urdf_file(path)
            srdf = os.path.join(ROOT, "robokin_ros", "robots", "panda.srdf") if state else None
            server = viser.ViserServer(host="127.0.0.1", port=0, verbose=False)
            view = RobotView(server, model, urdf_dir=os.path.dirname(path),
                             semantics=parse_srdf(read_description(srdf), model) if srdf else None)
            view.meshes_loaded.wait()
            if state:
                view.go_to_state(state)
            out = os.path.join(args.screenshots, f"web_view_{name}.png")
            screenshot(f"http://127.0.0.1:{server.get_port()}", out, (900, 560))
            print(out)
            view.remove()
            server.stop()


if __name__ == "__main__":
    main()
