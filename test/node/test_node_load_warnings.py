"""The node logs a description's load warnings one line per kind (issue 41 item 4: the H1_2
humanoid's 55 nameless-``<material>`` warnings were 55 lines of the node's log, cut at its cap)."""

from robokin_ros import RobotModel
from robokin_ros.node.descriptions import URDFDescription
from robokin_ros.node.live_robot import load_robot
from robokin_ros.node.parameters import PARAMETERS, STRING_LIST, read_settings


def defaults():
    return {name: [] if spec.default is STRING_LIST else spec.default for name, spec in PARAMETERS.items()}.__getitem__


def chain_with_nameless_materials(links: int) -> str:
    parts = ['<robot name="chain">']
    for k in range(links):
        parts.append(f'<link name="l{k}"><visual><geometry><box size="0.1 0.1 0.1"/></geometry>'
                     f'<material><color rgba="1 0 0 1"/></material></visual></link>')
        if k:
            parts.append(f'<joint name="j{k}" type="revolute"><parent link="l{k - 1}"/><child link="l{k}"/>'
                         f'<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    return "\n".join(parts + ['</robot>'])


def test_load_warnings_of_one_kind_are_one_log_line():
    xml = chain_with_nameless_materials(6)
    model = RobotModel.from_urdf(xml)
    assert len(model.load_warnings) == 6
    notes = load_robot(URDFDescription(model, xml, 'test'), read_settings(defaults()), None).notes
    lines = [text for level, text in notes if level == 'warning' and text.startswith('robot description (test): ')]
    assert len(lines) == 1, notes
    assert "<material>: of link 'l0' has no name" in lines[0] and '[6 of this kind: lines 2, 3, 5, 7, 9 and 1 more]' in lines[0]
