"""Launch the robokin node (TF, Jacobians, /compute_ik, /compute_fk) and optionally RViz.

    ros2 launch robokin_ros kin.launch.py                                   # bundled Panda + RViz
    ros2 launch robokin_ros kin.launch.py description_file:=/path/robot.urdf params_file:=/path/kin.yaml
    ros2 launch robokin_ros kin.launch.py description_file:=robot.urdf.xacro frame_prefix:=r1/ use_rviz:=false

Arguments:
    description_file: URDF (or .xacro, expanded with xacro) to load; default: the bundled Panda.
    params_file: node parameters; default: share/robokin_ros/config/kin.yaml.
    frame_prefix: prefix of every published frame id.
    use_rviz: start RViz with share/robokin_ros/config/kin.rviz (RobotModel + TF displays).
    use_sim_time: use /clock.

Nothing publishes joint states here: run your driver, a simulator or joint_state_publisher_gui.
"""

import os

import robokin_ros
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

SHARE = get_package_share_directory('robokin_ros')
BUNDLED_PANDA = os.path.join(os.path.dirname(robokin_ros.__file__), 'robots', 'panda.urdf')


def _read_description(path):
    """URDF text of ``path``; ``.xacro`` files are expanded with xacro."""
    if path.endswith('.xacro'):
        import xacro  # a ROS install has it (package xacro); only needed for .xacro files
        return xacro.process_file(path).toxml()
    with open(path, encoding='utf-8') as f:
        return f.read()


def _nodes(context):
    path = LaunchConfiguration('description_file').perform(context)
    prefix = LaunchConfiguration('frame_prefix').perform(context)
    xml = _read_description(path)
    root = robokin_ros.RobotModel.from_urdf(xml).root_link  # fails the launch early on a bad URDF
    sim_time = ParameterValue(LaunchConfiguration('use_sim_time'), value_type=bool)
    kin = Node(
        package='robokin_ros', executable='kin_node', name='robokin', output='screen',
        parameters=[LaunchConfiguration('params_file'),
                    {'robot_description': ParameterValue(xml, value_type=str),
                     'frame_prefix': prefix, 'use_sim_time': sim_time}])
    rviz = Node(
        package='rviz2', executable='rviz2', name='rviz2', output='log',
        arguments=['-d', os.path.join(SHARE, 'config', 'kin.rviz'), '--fixed-frame', prefix + root],
        parameters=[{'use_sim_time': sim_time}],
        condition=IfCondition(LaunchConfiguration('use_rviz')))
    return [kin, rviz]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('description_file', default_value=BUNDLED_PANDA,
                              description='URDF or xacro file of the robot'),
        DeclareLaunchArgument('params_file', default_value=os.path.join(SHARE, 'config', 'kin.yaml'),
                              description='parameters of the robokin node'),
        DeclareLaunchArgument('frame_prefix', default_value='', description='prefix of every published frame id'),
        DeclareLaunchArgument('use_rviz', default_value='true', description='start RViz'),
        DeclareLaunchArgument('use_sim_time', default_value='false', description='use /clock'),
        OpaqueFunction(function=_nodes),
    ])
