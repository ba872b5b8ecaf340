"""config/kin.yaml documents every parameter and runs the node as shipped; config/kin.rviz and
launch/kin.launch.py are well formed (the launch itself is exercised by test_launch.py on ROS)."""

import ast
import re

import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionIK
from node_harness import ROOT, KinNode, Probe, robot_xml, write_params

from robokin_ros import RobotModel, frame_transform
from robokin_ros.node.conversions import matrix_to_pose
from robokin_ros.node.parameters import PARAMETERS, STRING_LIST

KIN_YAML = ROOT / 'config' / 'kin.yaml'


def test_every_parameter_is_in_kin_yaml():
    text = KIN_YAML.read_text()
    values = yaml.safe_load(text)['/**']['ros__parameters']
    for name in PARAMETERS:
        # robot_description is documented in a comment: the launch file sets it
        assert name in values or re.search(rf'^\s*#\s*{name}:', text, re.MULTILINE), name
    assert set(values) - {'ik_groups'} <= set(PARAMETERS)
    for name, value in values.items():
        if name in PARAMETERS and PARAMETERS[name].default is not STRING_LIST:
            assert value == PARAMETERS[name].default or name in ('ik_group_names', 'default_ik_group'), name


def test_rviz_config_shows_the_robot_model_and_tf():
    config = yaml.safe_load((ROOT / 'config' / 'kin.rviz').read_text())
    displays = {d['Class']: d for d in config['Visualization Manager']['Displays']}
    model = displays['rviz_default_plugins/RobotModel']
    assert model['Description Source'] == 'Topic'
    assert model['Description Topic']['Value'] == '/robot_description'
    assert model['Description Topic']['Durability Policy'] == 'Transient Local'
    assert 'rviz_default_plugins/TF' in displays


def test_launch_file_declares_its_arguments():
    """Literal ``DeclareLaunchArgument('name', ...)`` calls, or one per name of
    ``launch_arguments.ARGUMENTS`` in a comprehension over it (what kin.launch.py does)."""
    from robokin_ros.node.launch_arguments import ARGUMENTS

    tree = ast.parse((ROOT / 'launch' / 'kin.launch.py').read_text())
    declared = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'DeclareLaunchArgument':
            if isinstance(node.args[0], ast.Constant):
                declared.add(node.args[0].value)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and \
                getattr(node.elt.func, 'id', '') == 'DeclareLaunchArgument' and \
                'ARGUMENTS' in ast.unparse(node.generators[0].iter):
            declared |= set(ARGUMENTS)
    assert {'description_file', 'semantic_file', 'params_file', 'frame_prefix', 'use_rviz',
            'use_sim_time'} <= declared


@pytest.mark.parametrize('params_files, group', [
    ([KIN_YAML], 'panda_hand_tcp'),                               # derived from the tree
    ([KIN_YAML, ROOT / 'config' / 'kin_panda.yaml'], 'arm'),      # the example's group
])
def test_node_runs_with_kin_yaml_as_shipped(tmp_path, ros_context, params_files, group):
    description = write_params(tmp_path / 'description.yaml', robot_description=robot_xml('panda'))
    args = [a for path in params_files for a in ('--params-file', str(path))]
    proc = KinNode(tmp_path, ros_args=args + ['--params-file', str(description)])
    probe = Probe(ros_context, 'config_probe')
    probe.watch = (proc,)
    try:
        client = probe.client(GetPositionIK, '/compute_ik')
        model = RobotModel.from_urdf(robot_xml('panda'))
        q = model.random_configuration(rng=50)
        req = GetPositionIK.Request()
        req.ik_request.pose_stamped = PoseStamped(pose=matrix_to_pose(
            frame_transform(model, q, 'panda_link0', 'panda_hand_tcp')))
        req.ik_request.robot_state.joint_state.name = list(model.joint_names)
        seed = q.copy()
        seed[:7] += 0.02  # the arm starts near the solution, the finger where it is
        req.ik_request.robot_state.joint_state.position = [float(v) for v in seed]
        req.ik_request.timeout.sec = 5
        res = probe.call(client, req)  # empty group_name: the default group
        assert res.error_code.val == MoveItErrorCodes.SUCCESS, res.error_code.message
        assert f"group {group!r}" in res.error_code.message
        js = res.solution.joint_state
        solved = model.q_from_dict(dict(zip(js.name, js.position)))
        assert solved[-1] == seed[-1]  # the finger is not in the arm's group: it keeps the seed
        assert 'rejected parameter' not in proc.output()
    finally:
        probe.close()
        proc.stop()
