"""Launch the robokin servo node (MoveIt Servo's interface: jog the arm by twist, joint or pose).

    ros2 launch robokin_ros servo.launch.py                                   # bundled Panda
    ros2 launch robokin_ros servo.launch.py description_file:=/path/robot.urdf semantic_file:=/path/robot.srdf

Arguments (the description arguments of kin.launch.py):
    description_file: URDF (or .xacro) to load; default: the bundled Panda.
    semantic_file: SRDF (or .xacro) for moveit_servo.move_group_name; default: none (the tree's groups).
    params_file: node parameters; default: share/robokin_ros/config/servo.yaml.
    frame_prefix: prefix of the frame ids in commands' headers.
    use_sim_time: use /clock.

Every argument and file is checked before anything starts (robokin_ros.node.launch_arguments), as
in kin.launch.py. Nothing publishes joint states here: run your driver or a simulator (or
kin.launch.py's demo).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

import robokin_ros
from launch import LaunchDescription
from robokin_ros.node.launch_arguments import ARGUMENTS, check_launch_arguments
from robokin_ros.node.launch_prefix import executable_prefix

SHARE = get_package_share_directory('robokin_ros')
DEFAULTS = {
    'description_file': os.path.join(os.path.dirname(robokin_ros.__file__), 'robots', 'panda.urdf'),
    'semantic_file': '',
    'params_file': os.path.join(SHARE, 'config', 'servo.yaml'),
    'frame_prefix': '',
    'use_sim_time': 'false',
}


def _actions(context):
    values = {name: LaunchConfiguration(name).perform(context) for name in DEFAULTS}
    values.update(use_rviz='false', use_web_view='false')
    plan = check_launch_arguments(values, context.argv, rviz_available=lambda: False)
    params = {'robot_description': ParameterValue(plan.robot_description, value_type=str),
              'frame_prefix': plan.frame_prefix, 'use_sim_time': plan.use_sim_time}
    if plan.semantic_file:
        params['semantic_file'] = plan.semantic_file
    return [Node(package='robokin_ros', executable='servo_node', name='servo_node', output='screen',
                 prefix=executable_prefix(context.launch_configurations, 'servo_node'),
                 parameters=[plan.params_file, params], on_exit=Shutdown(reason='servo_node exited'))]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=DEFAULTS[name], description=ARGUMENTS[name]) for name in DEFAULTS]
        + [OpaqueFunction(function=_actions)])
