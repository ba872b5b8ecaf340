"""ROS 2 node of robokin_ros: the only subpackage that imports rclpy and message packages."""
