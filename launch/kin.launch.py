"""Launch the robokin node (TF, Jacobians, /compute_ik, /compute_fk) and optionally RViz.

    ros2 launch robokin_ros kin.launch.py                                   # bundled Panda
    ros2 launch robokin_ros kin.launch.py description_file:=/path/robot.urdf semantic_file:=/path/robot.srdf
    ros2 launch robokin_ros kin.launch.py description_file:=robot.urdf.xacro frame_prefix:=r1/ use_rviz:=true

Arguments (``ros2 launch robokin_ros kin.launch.py -s`` lists them):
    description_file: URDF (or .xacro, expanded with xacro) to load; default: the bundled Panda.
    semantic_file: SRDF (or .xacro) passed to the node as parameter ``semantic_file``; default: none.
    params_file: node parameters; default: share/robokin_ros/config/kin.yaml.
    frame_prefix: prefix of every published frame id.
    use_rviz: true, false or auto (default): RViz with share/robokin_ros/config/kin.rviz when
        rviz2 is installed.
    use_sim_time: use /clock.
    use_web_view: true or false (default): also start the web_view node (the robot in a browser,
        its log prints the URL with a per-run token, http://127.0.0.1:8080/?token=...; needs viser:
        pip install 'viser==1.1.1').

Every argument and file is checked before anything starts (robokin_ros.node.launch_arguments,
reading files with the core's size-capped reader and parsing them with its hardened parsers, as
the node does): a bad one, or an unknown argument name, ends the launch with every problem listed
and no process started. When either process exits, the launch shuts the other down: nothing is left behind.

Nothing publishes joint states here: run your driver, a simulator or joint_state_publisher_gui.
"""

import importlib.util
import os

from ament_index_python.packages import PackageNotFoundError, get_package_prefix, get_package_share_directory
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

import robokin_ros
from launch import LaunchDescription
from robokin_ros.node.launch_arguments import (
    ARGUMENTS,
    FALSE_WORDS,
    TRUE_WORDS,
    LaunchArgumentError,
    check_launch_arguments,
)
from robokin_ros.node.launch_prefix import executable_prefix
from robokin_ros.web.library import INSTALL_HINT

SHARE = get_package_share_directory('robokin_ros')
DEFAULTS = {
    'description_file': os.path.join(os.path.dirname(robokin_ros.__file__), 'robots', 'panda.urdf'),
    'semantic_file': '',
    'params_file': os.path.join(SHARE, 'config', 'kin.yaml'),
    'frame_prefix': '',
    'use_rviz': 'auto',
    'use_sim_time': 'false',
    'use_web_view': 'false',
}


def rviz_available():
    """Whether launch_ros can start ``rviz2`` (it resolves executables through the ament index)."""
    try:
        prefix = get_package_prefix('rviz2')
    except PackageNotFoundError:
        return False
    return os.access(os.path.join(prefix, 'lib', 'rviz2', 'rviz2'), os.X_OK)


def _actions(context):
    values = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
    plan = check_launch_arguments(values, context.argv, rviz_available=rviz_available)
    actions = [LogInfo(msg=note) for note in plan.notes]
    params = {'robot_description': ParameterValue(plan.robot_description, value_type=str),
              'frame_prefix': plan.frame_prefix, 'use_sim_time': plan.use_sim_time}
    if plan.semantic_file:
        params['semantic_file'] = plan.semantic_file
    actions.append(Node(
        package='robokin_ros', executable='kin_node', name='robokin', output='screen',
        prefix=executable_prefix(context.launch_configurations, 'kin_node'),
        parameters=[plan.params_file, params],
        on_exit=Shutdown(reason='kin_node exited')))
    if plan.use_rviz:
        actions.append(Node(
            package='rviz2', executable='rviz2', name='rviz2', output='log',
            arguments=['-d', os.path.join(SHARE, 'config', 'kin.rviz'),
                       '--fixed-frame', plan.frame_prefix + plan.root_link],
            parameters=[{'use_sim_time': plan.use_sim_time}],
            on_exit=Shutdown(reason='rviz2 exited')))
    if _use_web_view(values['use_web_view']):
        actions.append(Node(
            package='robokin_ros', executable='web_view', name='web_view', output='screen',
            prefix=executable_prefix(context.launch_configurations, 'web_view'),
            parameters=[{'frame_prefix': plan.frame_prefix, 'use_sim_time': plan.use_sim_time}],
            on_exit=Shutdown(reason='web_view exited')))
    return actions


def _use_web_view(text):
    """Whether ``use_web_view`` asks for the web view; raises LaunchArgumentError (nothing started)
    for a word that is not a boolean, or when viser is missing."""
    word = text.strip().lower()
    if word not in TRUE_WORDS + FALSE_WORDS:
        allowed = ', '.join(TRUE_WORDS + FALSE_WORDS)
        raise LaunchArgumentError([f'use_web_view:={text!r} is not a boolean (one of {allowed})'])
    if word in TRUE_WORDS and importlib.util.find_spec('viser') is None:
        raise LaunchArgumentError([f'use_web_view:=true but viser is not installed: {INSTALL_HINT}'])
    return word in TRUE_WORDS


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=DEFAULTS[name], description=text)
         for name, text in ARGUMENTS.items()]
        + [OpaqueFunction(function=_actions)])
