"""Field-ready URDF loading: what urdfdom accepts loads, parts the model does not use become
warnings with input line numbers, and hostile input (size, encoding, paths) is a URDFError.

One fixture in test/fixtures/field/ per cause seen in real descriptions; a fixture's
``<!-- WARN-LINE -->`` comments mark the lines its warnings must name.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import LoadWarning, RobotModel, URDFError, forward_kinematics

FIELD = Path(__file__).resolve().parents[2] / "fixtures" / "field"

#: fixture -> words each of its warnings must contain (one entry per warning, in document order).
EXPECTED_WARNINGS = {
    "drake_extensions.urdf": [],
    "fixed_axis_without_xyz.urdf": [],
    "gazebo_namespaces.urdf": [],
    "geometry_two_shapes.urdf": [["<geometry>", "2 shapes", "first (<box>)", "link 'link_b'"]],
    "limits_swapped.urdf": [["<limit>", "lower 1.5 > upper -1.5", "swapped"]],
    "material_without_name.urdf": [["<material>", "no name", "link 'link_b'"]],
    "mesh_scale_one_number.urdf": [["<mesh>", "'0.00254'", "uniform scale"]],
    "mimic_unknown.urdf": [["<mimic>", "joint_follow", "joint_ghost", "independent"]],
    "texture_without_filename.urdf": [["<texture>", "no filename"]],
    "transmission_pr2_style.urdf": [["<rollJoint name='joint_ghost'>", "<transmission>", "does not have"]],
}


def marked_lines(path: Path) -> list[int]:
    return [i for i, line in enumerate(path.read_text().splitlines(), start=1) if "<!-- WARN-LINE -->" in line]


def test_every_field_fixture_has_expectations():
    assert {p.name for p in FIELD.glob("*.urdf")} == set(EXPECTED_WARNINGS)


@pytest.mark.parametrize("name", sorted(EXPECTED_WARNINGS))
def test_field_fixture_loads_with_its_warnings_on_their_input_lines(name):
    path = FIELD / name
    model = RobotModel.from_urdf_file(path)
    warnings = model.load_warnings
    expected = EXPECTED_WARNINGS[name]
    assert len(warnings) == len(expected), [str(w) for w in warnings]
    assert [w.line for w in warnings] == marked_lines(path)
    for warning, words in zip(warnings, expected):
        assert isinstance(warning, LoadWarning)
        text = str(warning)
        assert text.startswith(f"line {warning.line}: "), text
        for word in words:
            assert word in text, f"{word!r} missing from {text!r}"
    assert model.n_links >= 2 and forward_kinematics(model, model.home_configuration()).shape[-2:] == (4, 4)


def test_swapped_limits_are_ordered():
    model = RobotModel.from_urdf_file(FIELD / "limits_swapped.urdf")
    j = model.joint_index("joint_limits")
    assert (model.joint_lower[j], model.joint_upper[j]) == (-1.5, 1.5)


def test_mimic_of_an_unknown_joint_makes_an_independent_joint():
    model = RobotModel.from_urdf_file(FIELD / "mimic_unknown.urdf")
    assert model.joint_names == ("joint_a", "joint_follow")
    assert model.mimic_source[model.joint_index("joint_follow")] == -1


def test_mesh_path_is_kept_whatever_its_scale():
    model = RobotModel.from_urdf_file(FIELD / "mesh_scale_one_number.urdf")
    assert model.link_meshes[model.link_index("link_b")] == "package://robot/meshes/b.dae"


def test_ignored_parts_do_not_change_the_kinematics():
    """Every field fixture equals itself stripped of what the model ignores."""
    import re
    for path in sorted(FIELD.glob("*.urdf")):
        text = path.read_text()
        stripped = re.sub(r"<!--.*?-->", "", text, flags=re.S)
        stripped = re.sub(r"<(transmission|gazebo|ros2_control|drake:[a-z_]+)\b.*?</\1>", "", stripped, flags=re.S)
        stripped = re.sub(r"<(visual|collision)>.*?</\1>", "", stripped, flags=re.S)
        a, b = RobotModel.from_urdf(stripped), RobotModel.from_urdf(text)
        assert (a.link_names, a.joint_names) == (b.link_names, b.joint_names), path.name
        np.testing.assert_array_equal(a.joint_lower, b.joint_lower)
        q = a.random_configuration(3, rng=np.random.default_rng(0))
        np.testing.assert_array_equal(forward_kinematics(a, q), forward_kinematics(b, q))


def test_problems_carry_input_line_numbers():
    text = ('<robot name="r">\n<link name="a"/>\n<link name="b"/>\n'
            '<joint name="j" type="revolute">\n  <parent link="a"/>\n  <child link="ghost"/>\n</joint>\n'
            '<joint name="k" type="revolute">\n  <parent link="a"/>\n  <child link="b"/>\n'
            '  <axis xyz="0 0 0"/>\n  <limit lower="-1" upper="1"/>\n</joint>\n</robot>')
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(text)
    problems = info.value.problems
    assert any(p.startswith("line 6: ") and "'ghost'" in p for p in problems), problems
    assert any(p.startswith("line 11: ") and "zero axis" in p for p in problems), problems


def test_finite_numbers_whose_composition_overflows_are_rejected():
    fixed = ('<joint name="{n}" type="fixed"><parent link="{p}"/><child link="{c}"/>'
             '<origin xyz="1e308 0 0"/></joint>')
    text = ('<robot name="r"><link name="a"/><link name="b"/><link name="c"/>'
            + fixed.format(n="j1", p="a", c="b") + fixed.format(n="j2", p="b", c="c") + '</robot>')
    with pytest.raises(URDFError, match="link 'c' overflows.*'j2'"):
        RobotModel.from_urdf(text)


def test_overflowing_inertia_is_rejected():
    text = ('<robot name="r"><link name="a"><inertial><origin rpy="0.3 0.2 0.1"/><mass value="1"/>'
            '<inertia ixx="1.7e308" ixy="1.7e308" ixz="0" iyy="1.7e308" iyz="0" izz="1"/></inertial></link></robot>')
    with pytest.raises(URDFError, match="link 'a' inertial inertia overflows"):
        RobotModel.from_urdf(text)


def test_mimic_multiplier_chain_overflow_is_rejected():
    joints = ['<joint name="j0" type="continuous"><parent link="l0"/><child link="l1"/></joint>']
    for k in range(1, 4):
        joints.append(f'<joint name="j{k}" type="continuous"><parent link="l{k}"/><child link="l{k + 1}"/>'
                      f'<mimic joint="j{k - 1}" multiplier="1e200"/></joint>')
    text = '<robot name="r">' + "".join(f'<link name="l{i}"/>' for i in range(5)) + "".join(joints) + "</robot>"
    with pytest.raises(URDFError, match="mimic chain multiplier"):
        RobotModel.from_urdf(text)


# ---------------------------------------------------------------------------- hostile input
GOOD = '<robot name="r"><link name="a"/></robot>'


@pytest.mark.parametrize("text, words", [
    ('<robot name="r\ud800"><link name="a"/></robot>', ["lone surrogate", "U+D800"]),
    (b'<robot name="r\xff"><link name="a"/></robot>', ["not UTF-8", "0xff"]),
    (b'<robot name="r">\n<link name="\xc3"/></robot>', ["line 2", "not UTF-8"]),
])
def test_bad_text_is_a_urdf_error(text, words):
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(text)
    for word in words:
        assert word in str(info.value)


def test_size_cap_argument_and_environment(monkeypatch):
    with pytest.raises(URDFError, match="limit of 20 bytes"):
        RobotModel.from_urdf(GOOD, max_bytes=20)
    monkeypatch.setenv("ROBOKIN_MAX_DESCRIPTION_BYTES", "30")
    with pytest.raises(URDFError, match="limit of 30 bytes"):
        RobotModel.from_urdf(GOOD)
    monkeypatch.setenv("ROBOKIN_MAX_DESCRIPTION_BYTES", "lots")
    with pytest.raises(URDFError, match="ROBOKIN_MAX_DESCRIPTION_BYTES"):
        RobotModel.from_urdf(GOOD)
    monkeypatch.delenv("ROBOKIN_MAX_DESCRIPTION_BYTES")
    assert RobotModel.from_urdf(GOOD).n_links == 1


def test_dev_zero_is_refused_without_reading_it_all():
    with pytest.raises(URDFError, match="larger than the limit of 1000 bytes"):
        RobotModel.from_urdf_file("/dev/zero", max_bytes=1000)


def test_huge_sparse_file_is_refused(tmp_path):
    path = tmp_path / "huge.urdf"
    with open(path, "wb") as f:
        f.truncate(2 * 1024 ** 3)   # 2 GiB, sparse: nothing is allocated
    with pytest.raises(URDFError, match="larger than the limit"):
        RobotModel.from_urdf_file(path)


@pytest.mark.parametrize("path, words", [
    ("robot\0.urdf", ["cannot read", "null"]),
    ("/nonexistent/robot.urdf", ["cannot read", "No such file"]),
    ("/", ["cannot read", "directory"]),
])
def test_bad_paths(path, words):
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf_file(path)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("size, words", [(500_000, "500000 characters"), (10_000_000, "a tag longer than")])
def test_huge_attribute_is_shortened_in_messages(size, words):
    """Under the tag cap the value is read and named shortened; over it the tag is refused whole."""
    value = "x" * size
    text = f'<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="fixed"><parent link="a"/>' \
           f'<child link="b"/><origin xyz="{value}"/></joint></robot>'
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(text)
    message = str(info.value)
    assert len(message) < 500 and words in message


def test_huge_name_is_shortened_in_messages():
    name = "n" * 1_000_000
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(f'<robot name="r"><link name="a"/><joint name="j" type="fixed"><parent link="a"/>'
                             f'<child link="{name}"/></joint></robot>')
    assert len(str(info.value)) < 500


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc for the memory check")
def test_deep_chain_loads_in_linear_memory():
    """A 5,000-link chain: no quadratic structure is built while loading (a per-link ancestor
    set would be 12.5 million entries)."""
    import tracemalloc
    n = 5000
    text = ['<robot name="chain"><link name="l0"/>']
    for i in range(1, n):
        text.append(f'<link name="l{i}"/><joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
                    f'<child link="l{i}"/><origin xyz="0 0 0.01"/><axis xyz="0 0 1"/>'
                    '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    text = "".join(text) + "</robot>"
    tracemalloc.start()
    model = RobotModel.from_urdf(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert model.n_q == n - 1
    assert peak < 40 * len(text), f"peak {peak / 1e6:.1f} MB for a {len(text) / 1e6:.1f} MB document"
    np.testing.assert_allclose(forward_kinematics(model, np.zeros(n - 1))[-1][:3, 3], [0, 0, 0.01 * (n - 1)])


def test_malformed_visual_geometry_is_a_warning_not_a_rejection():
    text = ('<robot name="t"><link name="a"/><link name="b">\n<visual><geometry>\n<box size="1 x 2"/>'
            '</geometry></visual></link><joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>')
    model = RobotModel.from_urdf(text)
    assert [str(w) for w in model.load_warnings] == ["line 3: <box>: <box> size of link 'b' = '1 x 2' is not 3 numbers"]
