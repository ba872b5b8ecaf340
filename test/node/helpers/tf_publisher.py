"""Test helper node: publish a known tf2_msgs/TFMessage on /tf at 20 Hz until SIGINT.

Parameters: ``tag`` (string) is appended to the child frame names so a test can tell this
publisher's messages from any other's.
"""

from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from spin import run
from tf2_msgs.msg import TFMessage

# (parent, child, translation xyz [m], rotation quat_xyzw); {tag} is the ``tag`` parameter.
TRANSFORMS = [
    ('world', 'link_a_{tag}', (1.0, 2.0, 3.0), (0.0, 0.0, 0.6, 0.8)),
    ('link_a_{tag}', 'link_b_{tag}', (-0.5, 0.25, 0.125), (0.5, 0.5, 0.5, 0.5)),
]


class TfPublisher(Node):

    def __init__(self):
        super().__init__('tf_publisher')
        tag = self.declare_parameter('tag', 'x').value
        self._pub = self.create_publisher(TFMessage, '/tf', 10)
        self._transforms = []
        for parent, child, xyz, quat in TRANSFORMS:
            t = TransformStamped()
            t.header.frame_id = parent.format(tag=tag)
            t.child_frame_id = child.format(tag=tag)
            t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
            (t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
             t.transform.rotation.w) = quat
            self._transforms.append(t)
        self.create_timer(0.05, self._publish)

    def _publish(self):
        stamp = self.get_clock().now().to_msg()
        for t in self._transforms:
            t.header.stamp = stamp
        self._pub.publish(TFMessage(transforms=self._transforms))


def main():
    run(TfPublisher)


if __name__ == '__main__':
    main()
