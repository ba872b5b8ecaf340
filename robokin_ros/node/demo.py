"""``make demo``: the robokin node on the bundled Franka Panda, end to end, in about 15 seconds.

Starts ``kin_node`` as its own process, streams a smooth joint motion on /joint_states, reports
the /tf rate and a few frames (checked against the core's forward kinematics), reads a Jacobian
and the gravity torques, calls /compute_fk and /compute_ik, and stops the node with SIGINT.

Run it in a ROS 2 environment (``tools/run_in_env.sh python -m robokin_ros.node.demo`` here).
"""

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

ROBOT = pathlib.Path(__file__).resolve().parents[1] / 'robots' / 'panda.urdf'
ARM = [f'panda_joint{i}' for i in range(1, 8)]
STREAM_SECONDS, STREAM_RATE = 3.0, 100.0


def _params_file(directory: pathlib.Path) -> pathlib.Path:
    params = {'robot_description': ROBOT.read_text(), 'ignore_timestamp': True,
              'ik_group_names': ['arm'], 'ik_groups': {'arm': {'base': 'panda_link0', 'tip': 'panda_hand_tcp',
                                                               'joints': ARM}},
              'jacobian_frames': ['panda_hand_tcp']}
    path = directory / 'demo_params.yaml'
    path.write_text(yaml.safe_dump({'robokin': {'ros__parameters': params}}))
    return path


def _start_node(directory: pathlib.Path):
    env = dict(os.environ)
    source_root = str(pathlib.Path(__file__).resolve().parents[2])
    env['PYTHONPATH'] = os.pathsep.join([source_root] + [p for p in [env.get('PYTHONPATH')] if p])
    log = open(directory / 'kin_node.log', 'wb')
    proc = subprocess.Popen([sys.executable, '-m', 'robokin_ros.node.main', '--ros-args',
                             '--params-file', str(_params_file(directory))],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    return proc, log


def _fmt(v) -> str:
    return '[' + ', '.join(f'{x:+.4f}' for x in np.ravel(v)) + ']'


class _Demo:
    """The client side: an rclpy node in this process."""

    def __init__(self, proc):
        import rclpy
        from moveit_msgs.srv import GetPositionFK, GetPositionIK
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from tf2_msgs.msg import TFMessage

        self.rclpy, self.proc = rclpy, proc
        rclpy.init()
        self.node = rclpy.create_node('robokin_demo')
        self.tf, self.static, self.jacobians, self.torques = [], [], [], []
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(TFMessage, '/tf', self.tf.append, 100)
        self.node.create_subscription(TFMessage, '/tf_static', self.static.append, latched)
        self.node.create_subscription(Float64MultiArray, '/robokin/jacobian/panda_hand_tcp', self.jacobians.append, 10)
        self.node.create_subscription(JointState, '/robokin/gravity_torques', self.torques.append, 10)
        self.joint_states = self.node.create_publisher(JointState, '/joint_states', 10)
        self.ik = self.node.create_client(GetPositionIK, '/compute_ik')
        self.fk = self.node.create_client(GetPositionFK, '/compute_fk')

    def spin_until(self, condition, what, timeout=20.0):
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                raise RuntimeError(f'the node exited (code {self.proc.returncode}) while waiting for {what}')
            if time.monotonic() > deadline:
                raise RuntimeError(f'timed out waiting for {what}')
            self.rclpy.spin_once(self.node, timeout_sec=0.02)

    def call(self, client, request):
        future = client.call_async(request)
        self.spin_until(future.done, f'a reply from {client.srv_name}')
        return future.result()

    def close(self):
        self.node.destroy_node()
        self.rclpy.try_shutdown()


def main() -> int:
    from geometry_msgs.msg import PoseStamped
    from moveit_msgs.msg import MoveItErrorCodes
    from moveit_msgs.srv import GetPositionFK, GetPositionIK
    from sensor_msgs.msg import JointState

    from robokin_ros import RobotModel, frame_transform
    from robokin_ros.dynamics import gravity_torques
    from robokin_ros.kinematics import jacobian
    from robokin_ros.node.conversions import matrix_to_pose, parse_jacobian_msg, transform_to_matrix

    model = RobotModel.from_urdf_file(ROBOT)
    codes = {v: k for k, v in vars(MoveItErrorCodes).items() if k.isupper() and isinstance(v, int)}
    t_start = time.monotonic()
    print(f'robokin demo: robot {model.name!r} ({len(model.joint_names)} joints) from {ROBOT}')
    with tempfile.TemporaryDirectory(prefix='robokin_demo.') as tmp:
        directory = pathlib.Path(tmp)
        proc, log = _start_node(directory)
        print(f'started kin_node (pid {proc.pid}, ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")})')
        demo = _Demo(proc)
        ok = True
        try:
            demo.spin_until(lambda: demo.static and demo.joint_states.get_subscription_count(), 'the node')
            fixed = [(t.header.frame_id, t.child_frame_id) for t in demo.static[-1].transforms]
            print(f'\n/tf_static (latched, one message): {len(fixed)} fixed joints {fixed}')

            # 1. stream a smooth motion and measure /tf
            home = model.home_configuration()
            amplitude = np.array([0.8, 0.5, 0.6, 0.5, 0.8, 0.8, 0.8, 0.0])
            print(f'\nstreaming /joint_states: {STREAM_RATE:.0f} Hz sine motion for {STREAM_SECONDS:.0f} s ...')
            n_before, sent, q = len(demo.tf), 0, home
            start = time.monotonic()
            while (elapsed := time.monotonic() - start) < STREAM_SECONDS:
                q = model.clamp(home + amplitude * np.sin(2 * np.pi * 0.3 * elapsed + np.arange(model.n_q)))
                msg = JointState(name=list(model.joint_names), position=q.tolist())
                msg.header.stamp = demo.node.get_clock().now().to_msg()
                demo.joint_states.publish(msg)
                sent += 1
                demo.spin_until(lambda: time.monotonic() - start >= sent / STREAM_RATE, 'the next tick')
            last_stamp = msg.header.stamp
            demo.spin_until(lambda: demo.tf and demo.tf[-1].transforms[0].header.stamp == last_stamp, 'the last /tf')
            received = len(demo.tf) - n_before
            print(f'/tf: {received} messages for {sent} joint states in {STREAM_SECONDS:.1f} s '
                  f'= {received / STREAM_SECONDS:.0f} Hz, {len(demo.tf[-1].transforms)} transforms each')

            # 2. a few frames, checked against the core
            print('\nlatest /tf frames (parent -> child: translation [m], quaternion xyzw), vs core FK:')
            worst = 0.0
            for t in demo.tf[-1].transforms:
                tr, r = t.transform.translation, t.transform.rotation
                T = transform_to_matrix(t.transform)
                err = np.abs(T - frame_transform(model, q, t.header.frame_id, t.child_frame_id)).max()
                worst = max(worst, err)
                if t.child_frame_id in ('panda_link1', 'panda_link4', 'panda_link7', 'panda_leftfinger'):
                    print(f'  {t.header.frame_id:>12} -> {t.child_frame_id:<16} {_fmt([tr.x, tr.y, tr.z])} '
                          f'{_fmt([r.x, r.y, r.z, r.w])}')
            print(f'  largest difference from the core over all {len(demo.tf[-1].transforms)} transforms: {worst:.1e}')
            ok &= worst < 1e-9

            # 3. Jacobian and gravity torques published with /tf
            # both are published with the /tf of each joint state: wait for those of the last one
            demo.spin_until(lambda: demo.torques and demo.torques[-1].header.stamp == last_stamp,
                            'the gravity torques of the last joint state')
            settle = time.monotonic() + 0.2
            demo.spin_until(lambda: demo.jacobians and time.monotonic() > settle,
                            'the Jacobian of the last joint state')
            jac = parse_jacobian_msg(demo.jacobians[-1])
            torques = demo.torques[-1]
            q_t = model.q_from_dict(dict(zip(model.joint_names, q)))
            print(f'\n~/jacobian/panda_hand_tcp: {jac.J.shape[0]}x{jac.J.shape[1]} in {jac.reference}, rows '
                  f'{jac.rows[0]}..{jac.rows[-1]}, columns {jac.columns[0]}..{jac.columns[-1]}')
            print(f'  column {jac.columns[0]}: {_fmt(jac.J[:, 0])}  (core: '
                  f'{_fmt(jacobian(model, q_t, "panda_hand_tcp")[:, 0])})')
            print(f'~/gravity_torques [N m]: {_fmt(torques.effort[:7])}\n  core:                  '
                  f'{_fmt(gravity_torques(model, q_t)[:7])}')

            # 4. /compute_fk with the latest joint states
            demo.spin_until(lambda: demo.fk.service_is_ready() and demo.ik.service_is_ready(), 'the services')
            fk = demo.call(demo.fk, GetPositionFK.Request(fk_link_names=['panda_hand_tcp']))
            p = fk.pose_stamped[0].pose.position
            T_core = frame_transform(model, q, 'panda_link0', 'panda_hand_tcp')
            print(f'\n/compute_fk panda_hand_tcp in {fk.pose_stamped[0].header.frame_id} (latest joint states): '
                  f'{codes[fk.error_code.val]}, position {_fmt([p.x, p.y, p.z])} (core {_fmt(T_core[:3, 3])})')
            ok &= fk.error_code.val == MoveItErrorCodes.SUCCESS

            # 5. /compute_ik for a pose reached by a known configuration
            q_goal = model.clamp(home + np.array([0.4, -0.3, 0.2, -0.5, 0.1, 0.6, 0.3, 0.02]))
            target = frame_transform(model, q_goal, 'panda_link0', 'panda_hand_tcp')
            request = GetPositionIK.Request()
            request.ik_request.group_name = 'arm'
            request.ik_request.pose_stamped = PoseStamped(pose=matrix_to_pose(target))
            request.ik_request.pose_stamped.header.frame_id = 'panda_link0'
            request.ik_request.timeout.sec = 2
            t0 = time.perf_counter()
            ik = demo.call(demo.ik, request)
            dt = time.perf_counter() - t0
            print(f'\n/compute_ik group "arm", target position {_fmt(target[:3, 3])} in panda_link0 '
                  f'(seed: latest joint states): {codes[ik.error_code.val]} in {dt * 1e3:.0f} ms')
            print(f'  message: {ik.error_code.message}')
            if ik.error_code.val == MoveItErrorCodes.SUCCESS:
                js = ik.solution.joint_state
                q_ik = model.q_from_dict(dict(zip(js.name, js.position)))
                reached = frame_transform(model, q_ik, 'panda_link0', 'panda_hand_tcp')
                print(f'  solution {_fmt(q_ik[:7])}\n  FK of the solution misses the target by '
                      f'{np.linalg.norm(reached[:3, 3] - target[:3, 3]):.1e} m')
            ok &= ik.error_code.val == MoveItErrorCodes.SUCCESS
            unknown = GetPositionIK.Request()
            unknown.ik_request.group_name = 'legs'
            bad = demo.call(demo.ik, unknown)
            print(f'/compute_ik group "legs": {codes[bad.error_code.val]}: {bad.error_code.message}')
        except RuntimeError as e:
            print(f'\nFAILED: {e}')
            ok = False
        finally:
            demo.close()
            proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            log.close()
            node_log = (directory / 'kin_node.log').read_text(errors='replace').strip().splitlines()
        print(f'\nkin_node stopped with SIGINT, exit code {rc}; its log:')
        for line in node_log:
            print(f'  | {line[:160]}')
    ok &= rc == 0
    print(f'\ndemo {"OK" if ok else "FAILED"} in {time.monotonic() - t_start:.1f} s')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
