"""Soak test of the robokin node as a process: joint states at 1 kHz for minutes, a hot reload of
the description every 10 s, and /compute_ik + /compute_fk calls running alongside.

Reports the node's RSS and open file descriptors after a warm-up and at the end (growth), joint
states sent vs /tf messages received (``ignore_timestamp``: one /tf message per joint state),
service calls answered, and TF correctness: the transforms of sampled /tf messages (and of a
final known configuration) against the core's forward kinematics. Goal (issue 12): RSS growth
< 5 MB, zero wrong TF.

Run: ``tools/run_in_env.sh python bench/soak_node.py [--seconds 600] [--rate 1000]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from robokin_ros import RobotModel, frame_transform  # noqa: E402


def proc_status(pid: int) -> tuple[float, int]:
    """(RSS [MB], open file descriptors) of a process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="joint states per second")
    parser.add_argument("--reload-every", type=float, default=10.0, help="seconds between hot reloads")
    args = parser.parse_args()

    xml = (ROOT / "robokin_ros" / "robots" / "panda.urdf").read_text()
    variants = [xml, xml.replace("<robot ", "<!-- reloaded -->\n<robot ", 1)]   # same robot, another text
    model = RobotModel.from_urdf(xml)
    directory = pathlib.Path(tempfile.mkdtemp(prefix="soak."))
    params = directory / "params.yaml"
    params.write_text(yaml.safe_dump({"robokin": {"ros__parameters": {
        "robot_description": xml, "ignore_timestamp": True, "publish_jacobians": False,
        "publish_gravity_torques": False}}}))
    log = open(directory / "kin_node.log", "w")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    node_proc = subprocess.Popen([sys.executable, "-m", "robokin_ros.node.main", "--ros-args", "--params-file",
                                  str(params)], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))

    try:
        soak(args, model, variants, node_proc, directory)
    finally:
        if node_proc.poll() is None:   # never leave the node behind, whatever happened here
            node_proc.kill()
            node_proc.wait()


def soak(args, model, variants, node_proc, directory) -> None:
    import rclpy
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import PoseStamped
    from moveit_msgs.srv import GetPositionFK, GetPositionIK
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage

    from robokin_ros.node.conversions import matrix_to_pose
    from robokin_ros.spatial import quat_xyzw_to_matrix

    rclpy.init()
    node = rclpy.create_node(f"soak_{os.getpid()}")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    received = {"tf": 0, "wrong": 0, "checked": 0, "foreign": 0}
    sent_q: dict[tuple[int, int], np.ndarray] = {}
    lock = threading.Lock()

    def on_tf(msg):
        received["tf"] += 1
        if received["tf"] % 97 or not msg.transforms:
            return
        stamp = msg.transforms[0].header.stamp
        with lock:
            q = sent_q.get((stamp.sec, stamp.nanosec))
        if q is None:
            return
        received["checked"] += 1
        if any(t.header.frame_id not in model.link_names or t.child_frame_id not in model.link_names
               for t in msg.transforms):
            received["foreign"] += 1   # another node on this domain: not ours to check
            return
        for t in msg.transforms:
            r, p = t.transform.rotation, t.transform.translation
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = quat_xyzw_to_matrix([r.x, r.y, r.z, r.w]), [p.x, p.y, p.z]
            if not np.allclose(T, frame_transform(model, q, t.header.frame_id, t.child_frame_id), atol=1e-9):
                received["wrong"] += 1
                break

    node.create_subscription(TFMessage, "/tf", on_tf, QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    pub = node.create_publisher(JointState, "/joint_states", QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                                                                      durability=DurabilityPolicy.VOLATILE))
    set_params = node.create_client(SetParameters, "/robokin/set_parameters")
    ik = node.create_client(GetPositionIK, "/compute_ik")
    fk = node.create_client(GetPositionFK, "/compute_fk")
    deadline = time.monotonic() + 30
    while not (ik.service_is_ready() and fk.service_is_ready() and set_params.service_is_ready()
               and pub.get_subscription_count() > 0):
        executor.spin_once(timeout_sec=0.05)
        if time.monotonic() > deadline or node_proc.poll() is not None:
            sys.exit(f"the node did not come up; see {directory / 'kin_node.log'}")

    rng = np.random.default_rng(0)
    pool = model.random_configuration(1000, rng=rng)
    services = {"ik": 0, "ik_ok": 0, "fk": 0, "fk_ok": 0, "reloads": 0, "reloads_ok": 0}
    pending = []

    def call_services(k):
        q = pool[k % len(pool)]
        req = GetPositionIK.Request()
        req.ik_request.ik_link_name = "panda_hand_tcp"
        req.ik_request.pose_stamped = PoseStamped(pose=matrix_to_pose(
            frame_transform(model, q, model.root_link, "panda_hand_tcp")))
        req.ik_request.timeout.nanosec = 200_000_000
        pending.append(("ik", ik.call_async(req)))
        pending.append(("fk", fk.call_async(GetPositionFK.Request(fk_link_names=["panda_hand_tcp"]))))

    start = time.monotonic()
    warm = None
    samples: list[tuple[float, float]] = []
    next_sample = start + 60.0
    sent, k, next_reload, next_call = 0, 0, start + args.reload_every, start + 0.2
    period = 1.0 / args.rate
    print(f"soak: {args.seconds:g} s at {args.rate:g} Hz, reload every {args.reload_every:g} s; node pid "
          f"{node_proc.pid}, log {directory / 'kin_node.log'}", flush=True)
    while True:
        now = time.monotonic()
        if now - start > args.seconds or node_proc.poll() is not None:
            break
        if warm is None and now - start > min(10.0, args.seconds / 4):
            warm = proc_status(node_proc.pid)
        if now >= next_sample:
            next_sample += 60.0
            samples.append((now - start, proc_status(node_proc.pid)[0]))
        due = start + sent * period
        if now >= due:
            q = pool[sent % len(pool)]
            stamp = Time(sec=1 + sent // 1000, nanosec=(sent % 1000) * 1_000_000)
            with lock:
                sent_q[(stamp.sec, stamp.nanosec)] = q
                if len(sent_q) > 5000:
                    sent_q.pop(next(iter(sent_q)))
            msg = JointState(name=list(model.joint_names), position=q.tolist())
            msg.header.stamp = stamp
            pub.publish(msg)
            sent += 1
        if now >= next_reload:
            next_reload += args.reload_every
            services["reloads"] += 1
            text = variants[services["reloads"] % 2]
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=text)
            pending.append(("reloads", set_params.call_async(SetParameters.Request(
                parameters=[Parameter(name="robot_description", value=value)]))))
        if now >= next_call:
            next_call += 0.2
            call_services(k)
            k += 1
            services["ik"] += 1
            services["fk"] += 1
        executor.spin_once(timeout_sec=0)
        for kind, future in [p for p in pending if p[1].done()]:
            pending.remove((kind, future))
            result = future.result()
            ok = result.results[0].successful if kind == "reloads" else result.error_code.val == 1
            services[kind + "_ok"] += bool(ok)
    end_status = proc_status(node_proc.pid) if node_proc.poll() is None else (float("nan"), -1)
    drain = time.monotonic() + 3
    while time.monotonic() < drain:
        executor.spin_once(timeout_sec=0.01)
    # final check: a known configuration, all its transforms
    q = model.random_configuration(rng=99)
    final = {}

    def on_final(msg):
        if msg.transforms and msg.transforms[0].header.stamp.sec == 999_999:
            final["msg"] = msg
    node.create_subscription(TFMessage, "/tf", on_final, 10)
    msg = JointState(name=list(model.joint_names), position=q.tolist())
    msg.header.stamp = Time(sec=999_999)
    deadline = time.monotonic() + 10
    while "msg" not in final and time.monotonic() < deadline:
        pub.publish(msg)
        executor.spin_once(timeout_sec=0.05)
    final_ok = "msg" in final and all(
        np.allclose(np.block([[quat_xyzw_to_matrix([t.transform.rotation.x, t.transform.rotation.y,
                                                    t.transform.rotation.z, t.transform.rotation.w]),
                               np.array([[t.transform.translation.x], [t.transform.translation.y],
                                         [t.transform.translation.z]])], [np.zeros((1, 3)), np.ones((1, 1))]]),
                    frame_transform(model, q, t.header.frame_id, t.child_frame_id), atol=1e-9)
        for t in final["msg"].transforms)
    alive = node_proc.poll() is None
    node_proc.send_signal(2)
    code = node_proc.wait(timeout=20)
    elapsed = time.monotonic() - start
    print(f"ran {elapsed:.0f} s; node alive to the end: {alive}, exit code {code}")
    print(f"joint states sent {sent} ({sent / elapsed:.0f}/s), /tf received {received['tf']} "
          f"({100.0 * received['tf'] / max(sent, 1):.2f} %)")
    if received["foreign"]:
        print(f"warning: {received['foreign']} /tf messages from another node on this ROS_DOMAIN_ID were ignored")
    print(f"TF checked against the core: {received['checked']} sampled messages, {received['wrong']} wrong; "
          f"final configuration {'correct' if final_ok else 'WRONG OR MISSING'}")
    print(f"services: IK {services['ik_ok']}/{services['ik']} solved, FK {services['fk_ok']}/{services['fk']}, "
          f"reloads {services['reloads_ok']}/{services['reloads']} accepted")
    if warm is not None:
        print(f"node RSS {warm[0]:.1f} -> {end_status[0]:.1f} MB (growth {end_status[0] - warm[0]:+.1f} MB), "
              f"open fds {warm[1]} -> {end_status[1]}")
        print("node RSS every minute [MB]: " + ", ".join(f"{t:.0f} s {r:.1f}" for t, r in samples))
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    main()
