"""Tests of the servo (robokin_ros/servo): closed loop, commands, parameters."""
