"""Servo timing (issue 40): one cycle's computation, and the node's cycles on time.

Usage: ``python3 bench/bench_servo.py [--steps N] [--seconds S]``.

1. ``Servo.step`` on the Panda (7 DOF) and the UR5e (6 DOF) from a well-conditioned state: a
   constant twist, a pose target and a joint jog; median and 99th percentile per cycle [µs]
   (each cycle timed alone, after a warm-up that loads the robot's kernels).
2. ``servo_node`` in this process (rclpy's EventsExecutor, or the single-threaded one), fed joint
   states and twists at 100 Hz by a second node on the same executor, at ``publish_period``
   0.002 and 0.001: the share of cycles on time (started less than one period after their
   schedule, counted from the first cycle), the median cycle computation, and the command-to-
   output latency bound (a command is read by the next cycle: at most one period plus that
   cycle's computation).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

import numpy as np

import robokin_ros as rk
from robokin_ros import robots
from robokin_ros.servo import JointJogCommand, PoseCommand, TwistCommand

READY = {"panda.urdf": ("panda_hand_tcp", {"panda_joint2": -0.785, "panda_joint4": -2.356, "panda_joint6": 1.571,
                                           "panda_joint7": 0.785}),
         "ur5e.urdf": ("tool0", {"shoulder_lift_joint": -1.6, "elbow_joint": 1.6, "wrist_1_joint": -1.6,
                                 "wrist_2_joint": -1.6})}


def time_steps(servo, q, command, steps: int) -> np.ndarray:
    times = np.empty(steps)
    for k in range(steps):
        t = time.perf_counter()
        q_next, _, _ = servo.step(q, command, 0.002)
        times[k] = time.perf_counter() - t
        if k % 200 == 199:
            servo.reset()   # stay near the starting state
    return times * 1e6


def core_rows(steps: int) -> list[str]:
    rows = []
    for file, (tip, ready) in READY.items():
        model = rk.RobotModel.from_urdf_file(robots.path(file))
        q = model.q_from_dict(ready)
        servo = rk.Servo(model, tip, parameters={"command_in_type": "speed_units"})
        T = rk.frame_transform(model, q, servo.base, tip)
        T[:3, 3] += [0.03, 0.03, -0.0265]
        commands = {"twist": TwistCommand(linear=(0.05, 0.0, 0.02), angular=(0.0, 0.0, 0.1)),
                    "pose target": PoseCommand(pose=T),
                    "joint jog": JointJogCommand(names=servo.joint_names[:1], velocities=(0.2,))}
        time_steps(servo, q, commands["twist"], 3000)   # warm-up: the robot's kernels load
        for name, command in commands.items():
            servo.reset()
            t = time_steps(servo, q, command, steps)
            rows.append(f"| {model.name} ({len(servo.joint_names)} DOF) | {name} | {np.median(t):.1f} | "
                        f"{np.percentile(t, 99):.1f} |")
    return rows


def node_rows(seconds: float) -> list[str]:
    import rclpy
    from geometry_msgs.msg import TwistStamped
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from robokin_ros.node.servo_node import ServoNode, make_executor

    rows = []
    model = rk.RobotModel.from_urdf_file(robots.path("panda.urdf"))
    ready = READY["panda.urdf"][1]
    for period in (0.002, 0.001):
        context = Context()
        rclpy.init(context=context)
        node = ServoNode(context=context, parameter_overrides=[
            Parameter("robot_description", value=robots.path("panda.urdf").read_text()),
            Parameter("moveit_servo.publish_period", value=period),
            Parameter("moveit_servo.command_in_type", value="speed_units")])
        feeder = rclpy.create_node("servo_bench_feeder", context=context)
        states = feeder.create_publisher(JointState, "/joint_states", 10)
        twists = feeder.create_publisher(TwistStamped, "/servo_node/delta_twist_cmds", 10)
        state = JointState(name=list(model.joint_names), position=[ready.get(n, 0.0) for n in model.joint_names])
        twist = TwistStamped()
        twist.twist.linear.x = 0.01

        def feed():
            states.publish(state)
            twists.publish(twist)

        feeder.create_timer(0.01, feed)
        executor = make_executor(context)
        executor.add_node(node)
        executor.add_node(feeder)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:   # warm-up
            executor.spin_once(timeout_sec=0.01)
        node.cycles.clear()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)
        starts = np.array([c[0] for c in node.cycles])
        compute = np.array([c[1] for c in node.cycles]) * 1e6
        schedule = starts[0] + period * np.arange(len(starts))
        late = starts - schedule
        expected = int(round((starts[-1] - starts[0]) / period)) + 1
        on_time = np.mean(np.diff(starts) < 2 * period) * 100
        rows.append(f"| {period} | {len(starts)} of {expected} | {on_time:.1f} % | {np.median(compute):.0f} | "
                    f"{np.percentile(compute, 99):.0f} | {np.median(np.diff(starts)) * 1e3:.3f} | "
                    f"{np.percentile(np.diff(starts), 99) * 1e3:.3f} | {late[-1] * 1e3:.1f} |")
        executor.shutdown()
        node.destroy_node()
        feeder.destroy_node()
        rclpy.try_shutdown(context=context)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-node", action="store_true", help="the core rows only (no rclpy)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"{datetime.date.today()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {load:.1f}")
    print("| arm | command | median µs | p99 µs |\n|---|---|---|---|")
    print("\n".join(core_rows(args.steps)))
    if not args.no_node:
        print("\n| publish_period [s] | cycles run | intervals < 2 periods | compute median µs | compute p99 µs "
              "| interval median ms | interval p99 ms | drift at end ms |\n|---|---|---|---|---|---|---|---|")
        print("\n".join(node_rows(args.seconds)))


if __name__ == "__main__":
    main()
