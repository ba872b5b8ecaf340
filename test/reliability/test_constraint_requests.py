"""Constraint-heavy IK requests (issue 33, items 1 and 3; issue 32, item 3): every request is
bounded before its work starts, and none raises past its handler.

The core call and the handler each run in a subprocess with a timeout and an address-space limit:
on a regression (1,000 constraints compiled into one solver: a RecursionError after 25 s and
800 MB; 3,000 through /compute_ik: 209 s and +1.5 GB) the subprocess dies, not the suite."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Bounds of each subprocess: a refusal needs neither (the interpreter and numpy fit in them).
TIMEOUT_S, ADDRESS_SPACE = 120, 3 << 30


def _run(code: str) -> dict:
    """Run ``code`` (which prints one JSON line last) in a bounded subprocess; its answer."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                         timeout=TIMEOUT_S, preexec_fn=limit)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_core_solve_constrained_with_a_thousand_position_constraints_is_a_typed_error():
    """solve_constrained(..., timeout=1) with 1,000 PositionConstraints: an IKOptionError naming
    the bound, with no solve run and no point model built (no RecursionError)."""
    answer = _run("""
        import json, numpy as np
        from robokin_ros import RobotModel
        from robokin_ros.errors import IKOptionError
        from robokin_ros.ik import PositionConstraint, Region, solve_constrained, constrained
        model = RobotModel.from_urdf_file("robokin_ros/robots/panda.urdf")
        constrained.solve = constrained._with_points = None   # (a call would be a TypeError)
        region = (Region("sphere", (0.1,), np.eye(4)),)
        many = [PositionConstraint("panda_hand", (0.0, 0.0, 0.001 * k), region) for k in range(1000)]
        try:
            solve_constrained(model, many, timeout=1)
            print(json.dumps({"error": None}))
        except IKOptionError as e:
            print(json.dumps({"error": type(e).__name__, "message": str(e)}))
    """)
    assert answer["error"] == "IKOptionError"
    assert "1000 constraints and 0 pose targets: at most 32 in one call" in answer["message"]


@pytest.mark.parametrize("case", ["positions 300", "positions 3000", "primitives 100000", "orientations 2"])
def test_compute_ik_refuses_constraint_heavy_requests_at_once(case):
    """/compute_ik (its handler) with 300 or 3,000 position constraints, one constraint of 10^5
    primitives, or two orientation constraints on one link: INVALID_GOAL_CONSTRAINTS with its
    sentence, no solve run, nothing reported as a crash."""
    pytest.importorskip("moveit_msgs")
    kind, n = case.split()
    answer = _run(f"""
        import json, math
        from geometry_msgs.msg import Pose
        from moveit_msgs.msg import OrientationConstraint, PositionConstraint
        from moveit_msgs.srv import GetPositionIK
        from shape_msgs.msg import SolidPrimitive
        from robokin_ros import RobotModel
        from robokin_ros.node import ik_service, requests
        from robokin_ros.node.parameters import IKSettings
        model = RobotModel.from_urdf_file("robokin_ros/robots/so101_arm.urdf")
        ik_service.ik.solve_constrained = ik_service.ik.solve_ik = None   # (a call would be a crash)
        req = GetPositionIK.Request()
        req.ik_request.ik_link_name = "tool"
        req.ik_request.pose_stamped.pose.orientation.w = 1.0
        c = req.ik_request.constraints
        kind, n = {kind!r}, {n}
        if kind == "orientations":
            o = OrientationConstraint(link_name="tool", absolute_x_axis_tolerance=0.1,
                                      absolute_y_axis_tolerance=0.1, absolute_z_axis_tolerance=math.pi)
            o.orientation.w = 1.0
            c.orientation_constraints = [o] * n
        else:
            p = PositionConstraint(link_name="tool")
            count = n if kind == "primitives" else 1
            p.constraint_region.primitives = [SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[0.1])] * count
            p.constraint_region.primitive_poses = [Pose()] * count
            c.position_constraints = [p] * (1 if kind == "primitives" else n)
        crashes = []
        res = ik_service.compute_ik(req, GetPositionIK.Response(), requests.RobotSnapshot(model, model.home_configuration()),
                                    IKSettings(groups={{}}), ik_service.Handling(on_crash=crashes.append))
        print(json.dumps({{"code": res.error_code.val, "message": res.error_code.message,
                          "crashes": [repr(e) for e in crashes]}}))
    """)
    from moveit_msgs.msg import MoveItErrorCodes
    assert answer["code"] == MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS, answer
    assert not answer["crashes"]
    expected = {"positions": f"{n} constraints in one request: at most 64 (parameter ik_max_constraints)",
                "primitives": "100000 region primitives and meshes in one request: at most 64",
                "orientations": "two orientation constraints on 'tool': give one per link"}[kind]
    assert expected in answer["message"]


def test_random_constraint_requests_never_crash_the_handler():
    """200 /compute_ik requests with constraint fields drawn from hostile values (NaN, inf, 1e308,
    negative, zero quaternions, unknown primitives and links, mismatched pose lists, repeated
    orientation links), small budgets: each answered with an error code or a checked success,
    none reported as a crash."""
    pytest.importorskip("moveit_msgs")
    answer = _run("""
        import json, math, random
        from geometry_msgs.msg import Pose
        from moveit_msgs.msg import JointConstraint, OrientationConstraint, PositionConstraint
        from moveit_msgs.srv import GetPositionIK
        from shape_msgs.msg import SolidPrimitive
        from robokin_ros import RobotModel
        from robokin_ros.node import ik_service, requests
        from robokin_ros.node.parameters import IKSettings
        model = RobotModel.from_urdf_file("robokin_ros/robots/so101_arm.urdf")
        snap = requests.RobotSnapshot(model, model.home_configuration())
        settings = IKSettings(groups={}, timeout=0.05, max_iterations=50)
        rnd = random.Random(7)
        odd = [math.nan, math.inf, -math.inf, 1e308, -1.0, 0.0, 1e-300, math.pi, 0.1, 3.0]
        links = list(model.link_names) + ["nope", ""]
        def value():
            return rnd.choice(odd) if rnd.random() < 0.5 else rnd.uniform(-1, 1)
        def pose():
            p = Pose()
            p.position.x, p.position.y, p.position.z = value(), value(), value()
            p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (
                (0.0, 0.0, 0.0, 1.0) if rnd.random() < 0.6 else (value(), value(), value(), value()))
            return p
        codes, crashes = {}, []
        for _ in range(200):
            req = GetPositionIK.Request()
            req.ik_request.ik_link_name = rnd.choice(links)
            req.ik_request.pose_stamped.pose = pose()
            req.ik_request.pose_stamped.header.frame_id = rnd.choice(links)
            c = req.ik_request.constraints
            for _ in range(rnd.randint(0, 3)):
                o = OrientationConstraint(link_name=rnd.choice(links), parameterization=rnd.choice([0, 1, 2, -1]))
                o.orientation = pose().orientation
                o.absolute_x_axis_tolerance, o.absolute_y_axis_tolerance, o.absolute_z_axis_tolerance = (
                    value(), value(), value())
                o.header.frame_id = rnd.choice(links)
                c.orientation_constraints.append(o)
            for _ in range(rnd.randint(0, 3)):
                p = PositionConstraint(link_name=rnd.choice(links))
                p.target_point_offset.x = value()
                p.header.frame_id = rnd.choice(links)
                for _ in range(rnd.randint(0, 3)):
                    p.constraint_region.primitives.append(SolidPrimitive(
                        type=rnd.randint(0, 5), dimensions=[abs(value()) for _ in range(rnd.randint(0, 4))]))
                p.constraint_region.primitive_poses = [pose() for _ in range(
                    len(p.constraint_region.primitives) + (rnd.random() < 0.1))]
                c.position_constraints.append(p)
            if rnd.random() < 0.3:
                c.joint_constraints.append(JointConstraint(joint_name=rnd.choice(list(model.q_names) + ["nope"]),
                                                           position=value(), tolerance_above=value(),
                                                           tolerance_below=value()))
            res = ik_service.compute_ik(req, GetPositionIK.Response(), snap, settings,
                                        ik_service.Handling(on_crash=crashes.append))
            codes[res.error_code.val] = codes.get(res.error_code.val, 0) + 1
            assert res.error_code.message
        print(json.dumps({"codes": codes, "crashes": [repr(e) for e in crashes]}))
    """)
    assert answer["crashes"] == [], answer
    assert sum(answer["codes"].values()) == 200
