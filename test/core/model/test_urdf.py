"""URDF loading: one test per bad fixture and per validation rule (error type + culprit named),
hardened XML, every joint type, mimic resolution, and the to_urdf round trip."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import JointLimits, JointType, ModelFields, RobokinError, RobotModel, URDFError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from peers import ERD_ROBOTS, erd_urdf  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ROBOTS = Path(__file__).resolve().parents[3] / "robokin_ros" / "robots"


def load_error(text: str) -> URDFError:
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf(text)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, RobokinError)
    assert str(err).startswith("invalid URDF")
    return err


def fixture_error(name: str) -> URDFError:
    with pytest.raises(URDFError) as info:
        RobotModel.from_urdf_file(FIXTURES / name)
    assert isinstance(info.value, ValueError)
    return info.value


# Each bad fixture's comment says what the message must name.
BAD_FIXTURES = {
    "bad_duplicate_joint.urdf": ["duplicate joint", "joint_a"],
    "bad_duplicate_link.urdf": ["duplicate link", "link_a"],
    "bad_joint_type.urdf": ["joint_ball", "spherical"],
    "bad_malformed_xml.urdf": ["malformed", "line", "column"],
    "bad_mimic_cycle.urdf": ["cycle", "joint_a", "joint_b"],
    "bad_missing_link.urdf": ["joint_b", "link_ghost"],
    "bad_nonfinite_axis.urdf": ["joint_nan_axis", "axis", "finite"],
    "bad_nonfinite_mass.urdf": ["link_nan_mass", "mass", "finite"],
    "bad_nonfinite_origin.urdf": ["joint_inf_origin", "origin", "finite"],
    "bad_two_parents.urdf": ["link_c", "joint_ac", "joint_bc"],
    "bad_two_roots.urdf": ["base_a", "base_b"],
    "bad_zero_axis.urdf": ["joint_zero", "zero axis"],
    "bad_no_root.urdf": ["no root", "link_a", "link_b"],
}


def test_every_bad_fixture_has_a_test():
    tested = set(BAD_FIXTURES) | {"bad_cycle.urdf", "bad_multiple_problems.urdf",
                                  "bad_entity_bomb.urdf", "bad_external_entity.urdf"}
    assert {p.name for p in FIXTURES.glob("bad_*.urdf")} == tested


@pytest.mark.parametrize("name", sorted(BAD_FIXTURES))
def test_bad_fixture_names_its_culprit(name):
    message = str(fixture_error(name))
    for word in BAD_FIXTURES[name]:
        assert word in message, f"{word!r} missing from: {message}"


def test_bad_cycle_names_the_cycle():
    message = str(fixture_error("bad_cycle.urdf"))
    links = all(n in message for n in ("link_a", "link_b", "link_c"))
    joints = all(n in message for n in ("joint_ab", "joint_bc", "joint_ca"))
    assert links or joints, message


def test_multiple_problems_are_reported_at_once():
    err = fixture_error("bad_multiple_problems.urdf")
    assert len(err.problems) == 3
    for culprit in ("joint_missing", "joint_zero_axis", "joint_bad_limits"):  # missing link, zero axis, nan limit
        assert sum(culprit in p for p in err.problems) == 1
        assert culprit in str(err)
    assert "link_ghost" in str(err) and "3 problems" in str(err)


@pytest.mark.parametrize("name", ["bad_entity_bomb.urdf", "bad_external_entity.urdf"])
def test_entities_are_refused_without_expansion(name):
    message = str(fixture_error(name))
    assert "entity" in message and "not allowed" in message
    assert len(message) < 300 and "lollol" not in message and "root:" not in message


def test_any_doctype_is_refused():
    err = load_error('<!DOCTYPE robot><robot name="r"><link name="a"/></robot>')
    assert "DOCTYPE" in str(err)


@pytest.mark.parametrize("text, words", [
    ("", ["empty"]),
    ("  \n ", ["empty"]),
    (b"", ["empty"]),
    ('<sdf version="1.6"/>', ["<sdf>", "<robot>"]),
    ('<robot name="r"/>', ["no links"]),
])
def test_degenerate_documents(text, words):
    message = str(load_error(text))
    for w in words:
        assert w in message


def test_non_text_is_refused():
    assert "got int" in str(load_error(42))


def test_bytes_are_accepted():
    model = RobotModel.from_urdf(b'<robot name="r"><link name="a"/></robot>')
    assert model.link_names == ("a",)


@pytest.mark.parametrize("path, reason", [("/nonexistent/robot.urdf", "No such file"), ("/tmp", "directory")])
def test_unreadable_file(path, reason):
    with pytest.raises(URDFError, match="cannot read") as info:
        RobotModel.from_urdf_file(path)
    assert path in str(info.value) and reason in str(info.value)


def robot(body: str, links=("a", "b")) -> str:
    return '<robot name="t">' + "".join(f'<link name="{n}"/>' for n in links) + body + "</robot>"


LIMIT = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'


def joint(name, type_, parent, child, extra=""):
    return f'<joint name="{name}" type="{type_}"><parent link="{parent}"/><child link="{child}"/>{extra}</joint>'


# One case per validation rule of the loader not covered by a fixture: (document, words of one problem).
RULES = {
    "link without name": (robot(joint("j", "fixed", "a", "b"), links=("a", "b", "")), ["a <link> has no name"]),
    "joint without name": (robot('<joint type="fixed"><parent link="a"/><child link="b"/></joint>'),
                           ["a <joint> has no name"]),
    "joint without type": (robot('<joint name="j"><parent link="a"/><child link="b"/></joint>'),
                           ["'j'", "unknown type None"]),
    "joint without parent": (robot('<joint name="j" type="fixed"><child link="b"/></joint>'),
                             ["'j'", "no parent link"]),
    "joint without child": (robot('<joint name="j" type="fixed"><parent link="a"/></joint>'),
                            ["'j'", "no child link"]),
    "missing parent link": (robot(joint("j", "fixed", "ghost", "b")), ["'j'", "parent link 'ghost'"]),
    "origin not numbers": (robot(joint("j", "fixed", "a", "b", '<origin xyz="0 x 0"/>')),
                           ["'j' origin xyz", "not 3 numbers"]),
    "origin wrong count": (robot(joint("j", "fixed", "a", "b", '<origin rpy="0 0"/>')),
                           ["'j' origin rpy", "must have 3 numbers"]),
    "revolute without limit": (robot(joint("j", "revolute", "a", "b")), ["'j'", "no <limit>"]),
    "limit not a number": (robot(joint("j", "prismatic", "a", "b", '<limit lower="a" upper="1" effort="1" velocity="1"/>')),
                           ["'j' limit lower", "not a number"]),
    "limit velocity not finite": (robot(joint("j", "continuous", "a", "b", '<limit effort="1" velocity="nan"/>')),
                                  ["'j' limit velocity", "not finite"]),
    "mimic multiplier not a number": (robot(joint("j", "continuous", "a", "b")
                                            + joint("k", "continuous", "b", "c", '<mimic joint="j" multiplier="two"/>'),
                                            links=("a", "b", "c")), ["'k' mimic multiplier", "not a number"]),
    "inertial without mass": (robot(joint("j", "fixed", "a", "b"), links=("a",)).replace(
        '<link name="a"/>', '<link name="a"/><link name="b"><inertial/></link>'), ["'b' inertial has no mass"]),
    "negative mass": (robot(joint("j", "fixed", "a", "b"), links=("a",)).replace(
        '<link name="a"/>', '<link name="a"/><link name="b"><inertial><mass value="-2"/></inertial></link>'),
        ["'b' inertial mass -2 is negative"]),
    "inertia not a number": (robot(joint("j", "fixed", "a", "b"), links=("a",)).replace(
        '<link name="a"/>', '<link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="x"/></inertial></link>'),
        ["'b' inertial ixx", "not a number"]),
    "cycle off the root": (robot(joint("j", "fixed", "b", "c") + joint("k", "fixed", "c", "b"), links=("a", "b", "c")),
                           ["'b'", "'c'", "not connected to the root 'a'"]),
    "floating joint mimics": (robot(joint("j", "continuous", "a", "b") + joint("k", "floating", "b", "c", '<mimic joint="j"/>'),
                                    links=("a", "b", "c")), ["'k'", "floating", "cannot mimic"]),
    "mimic of a floating joint": (robot(joint("j", "floating", "a", "b") + joint("k", "continuous", "b", "c", '<mimic joint="j"/>'),
                                        links=("a", "b", "c")), ["'k'", "'j'", "only 1-DOF joints can be mimicked"]),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_validation_rule(rule):
    text, words = RULES[rule]
    err = load_error(text)
    assert any(all(w in p for w in words) for p in err.problems), err.problems


def test_mimic_on_fixed_joint_is_ignored_like_urdfdom():
    model = RobotModel.from_urdf(robot(joint("j", "continuous", "a", "b")
                                       + joint("k", "fixed", "b", "c", '<mimic joint="j" multiplier="3"/>'),
                                       links=("a", "b", "c")))
    k = model.joint_index("k")
    assert model.mimic_source[k] == -1 and model.joint_types[k] == JointType.FIXED
    assert model.n_q == 1 and model.joint_names == ("j",)


def test_mimic_chains_resolve_to_the_independent_source():
    # l = 3 k + 0.5, k = 2 j + 1  =>  l = 6 j + 3.5
    model = RobotModel.from_urdf(robot(
        joint("j", "continuous", "a", "b")
        + joint("k", "continuous", "b", "c", '<mimic joint="j" multiplier="2" offset="1"/>')
        + joint("l", "prismatic", "c", "d", '<limit lower="-9" upper="9" effort="1" velocity="1"/>'
                '<mimic joint="k" multiplier="3" offset="0.5"/>'), links=("a", "b", "c", "d")))
    j, k, l_ = (model.joint_index(n) for n in "jkl")
    assert list(model.mimic_source[[k, l_]]) == [j, j]
    assert model.mimic_multiplier[l_] == 6.0 and model.mimic_offset[l_] == 3.5
    values = model.all_joint_values(np.array([0.25]))
    assert values == {"j": 0.25, "k": 1.5, "l": 5.0}


def test_all_joint_types_load():
    body = (joint("fixed_j", "fixed", "a", "b")
            + joint("rev", "revolute", "b", "c", '<axis xyz="0 2 0"/>' + LIMIT)
            + joint("cont", "continuous", "c", "d", '<axis xyz="1 0 0"/>')
            + joint("pris", "prismatic", "d", "e", '<axis xyz="0 0 -1"/>' + LIMIT)
            + joint("float", "floating", "e", "f")
            + joint("plane", "planar", "f", "g", '<axis xyz="0 1 0"/>'))
    model = RobotModel.from_urdf(robot(body, links="abcdefg"))
    types = [JointType(t) for t in model.joint_types]
    assert types == [JointType.FIXED, JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC,
                     JointType.FLOATING, JointType.PLANAR]
    assert list(model.joint_nq) == [0, 1, 1, 1, 7, 3] and list(model.joint_nv) == [0, 1, 1, 1, 6, 3]
    assert (model.n_q, model.n_v) == (13, 12)
    np.testing.assert_allclose(model.joint_axes[1], [0, 1, 0])  # normalised
    np.testing.assert_allclose(model.joint_axes[3], [0, 0, -1])
    assert (model.joint_lower[1], model.joint_upper[1]) == (-1.0, 1.0)
    assert np.isinf(model.joint_lower[2]) and np.isinf(model.joint_upper[2])


def test_axis_defaults_to_x():
    model = RobotModel.from_urdf(robot(joint("j", "continuous", "a", "b")))
    np.testing.assert_array_equal(model.joint_axes[0], [1.0, 0.0, 0.0])


def test_links_are_in_topological_order_whatever_the_document_order():
    text = robot(joint("k", "continuous", "b", "c") + joint("j", "continuous", "a", "b"), links=("c", "b", "a"))
    model = RobotModel.from_urdf(text)
    assert model.link_names == ("a", "b", "c") and model.joint_names == ("j", "k")
    assert list(model.link_parents) == [-1, 0, 1]


def test_inertial_is_rotated_into_link_axes():
    text = robot(joint("j", "fixed", "a", "b"), links=("a",)).replace('<link name="a"/>', (
        '<link name="a"/><link name="b"><inertial><origin xyz="1 2 3" rpy="0 0 1.5707963267948966"/>'
        '<mass value="2"/><inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="3"/></inertial>'
        '<visual><geometry><mesh filename="package://r/b.stl"/></geometry></visual></link>'))
    model = RobotModel.from_urdf(text)
    b = model.link_index("b")
    assert model.link_masses[b] == 2.0 and model.link_has_inertial[b] and not model.link_has_inertial[0]
    np.testing.assert_allclose(model.link_coms[b], [1, 2, 3])
    np.testing.assert_allclose(model.link_inertias[b], np.diag([2.0, 1.0, 3.0]), atol=1e-15)  # x <-> y
    assert model.link_meshes[b] == "package://r/b.stl" and model.link_meshes[0] is None


# ---------------------------------------------------------------------------- round trip
ROUND_TRIP = ([str(p) for p in sorted(ROBOTS.glob("*.urdf"))]
              + [str(p) for p in sorted(FIXTURES.glob("*.urdf")) if not p.name.startswith("bad_")])


def assert_round_trip(model: RobotModel):
    again = RobotModel.from_urdf(model.to_urdf())
    assert again.equals(model)
    assert again.name == model.name


@pytest.mark.parametrize("path", ROUND_TRIP, ids=[Path(p).stem for p in ROUND_TRIP])
def test_round_trip_bundled_and_fixtures(path):
    assert_round_trip(RobotModel.from_urdf_file(path))


@pytest.mark.parametrize("robot_name", ["ur5", "talos", "tiago", "solo12", "kinova"])
def test_round_trip_example_robot_data(robot_name):
    assert_round_trip(RobotModel.from_urdf_file(erd_urdf(ERD_ROBOTS[robot_name])))


def test_round_trip_without_velocity_and_effort_limits():
    """A model made in code (DH, builder) has no velocity/effort limits (inf): they must stay inf."""
    model = RobotModel.create(ModelFields(
        name="chain", link_names=["a", "b", "c"], joint_names=["j", "k"], joint_parents=[0, 1],
        joint_types=[JointType.REVOLUTE, JointType.PRISMATIC], joint_axes=[[0, 0, 1], [1, 0, 0]],
        joint_origins=np.tile(np.eye(4), (2, 1, 1)), joint_lower=[-1, 0], joint_upper=[1, 0.5]))
    assert_round_trip(model)


def test_equals_detects_a_difference():
    model = RobotModel.from_urdf_file(FIXTURES / "branched.urdf")
    text = (FIXTURES / "branched.urdf").read_text()
    assert RobotModel.from_urdf(text).equals(model)
    for old, new in [('<axis xyz="0 1 0"/>', '<axis xyz="1 0 0"/>'), ('mass value="1.0"', 'mass value="1.5"'),
                     ('lower="-2.0"', 'lower="-1.0"'), ('xyz="0 0 0.4"', 'xyz="0 0 0.41"')]:
        assert not RobotModel.from_urdf(text.replace(old, new, 1)).equals(model), old
    assert not model.equals("not a model")


def test_infinite_velocity_and_effort_mean_no_limit():
    text = robot(joint("j", "revolute", "a", "b", '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="inf" velocity="inf"/>'))
    model = RobotModel.from_urdf(text)
    assert np.isinf(model.joint_velocity[0]) and np.isinf(model.joint_effort[0])


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    """A FIFO (or socket) named as a description file would block a plain read until a writer
    comes: it is refused at once, naming what it is."""
    fifo = tmp_path / "robot.urdf"
    os.mkfifo(fifo)
    with pytest.raises(URDFError, match=r"not a regular file \(a FIFO\)"):
        RobotModel.from_urdf_file(fifo)


# ---------------------------------------------------------------------------- URDF 1.2 (urdfdom 6.0)
URDF12 = FIXTURES / "urdf12_capsule_limits.urdf"


def test_urdf_1_2_limits_are_kept():
    model = RobotModel.from_urdf_file(URDF12)
    slide, spin, tip = (model.joint_index(n) for n in ("slide", "spin", "tip_joint"))
    assert (model.joint_acceleration[slide], model.joint_deceleration[slide], model.joint_jerk[slide]) == (2.5, 3.5, 40)
    # absent means unlimited, as urdfdom 6 reads it
    assert model.joint_acceleration[spin] == 7 and np.isinf(model.joint_deceleration[spin])
    assert np.isinf([model.joint_acceleration[tip], model.joint_jerk[tip]]).all()
    # a continuous joint needs no lower / upper and stays unbounded
    assert model.joint_types[spin] == JointType.CONTINUOUS
    assert (model.joint_lower[spin], model.joint_upper[spin]) == (-np.inf, np.inf)
    assert [g.shape for g in model.link_collisions[model.link_index("base")]] == ["capsule"]
    assert model.link_collisions[model.link_index("base")][0].size == (0.1, 0.4)


def test_urdf_1_2_round_trip_writes_the_limits_and_the_version():
    model = RobotModel.from_urdf_file(URDF12)
    text = model.to_urdf()
    assert 'version="1.2"' in text and 'jerk="40.0"' in text and 'deceleration="3.5"' in text
    assert "<capsule" in text
    again = RobotModel.from_urdf(text)
    assert again.equals(model)
    np.testing.assert_array_equal(again.joint_jerk, model.joint_jerk)


def test_a_model_without_1_2_features_is_written_as_plain_urdf():
    text = RobotModel.from_urdf_file(FIXTURES / "double_pendulum.urdf").to_urdf()
    assert "version=" not in text.split("\n", 1)[0] + text.split(">", 1)[0]
    assert "acceleration" not in text


def test_builder_and_submodel_keep_the_1_2_limits():
    model = RobotModel.from_urdf_file(URDF12)
    trimmed = model.remove_subtree("tip")
    assert trimmed.joint_acceleration[trimmed.joint_index("spin")] == 7
    assert trimmed.joint_deceleration[trimmed.joint_index("slide")] == 3.5
    grown = model.add_body("tip", "extra", "revolute", "extra_link", limits=JointLimits(-1, 1, acceleration=9.0))
    assert grown.joint_jerk[grown.joint_index("slide")] == 40
    assert grown.joint_acceleration[grown.joint_index("extra")] == 9.0


@pytest.mark.parametrize("version", ["2.0", "1.3", "one", "1", "1.2.0", ""])
def test_unknown_urdf_versions_are_refused_naming_the_version(version):
    text = URDF12.read_text().replace('version="1.2"', f'version="{version}"', 1)
    err = load_error(text)
    assert "version" in str(err) and "1.0, 1.1, 1.2" in str(err)


@pytest.mark.parametrize("version", ["1.0", "1.1", " 1.2 "])
def test_known_urdf_versions_load(version):
    text = URDF12.read_text().replace('version="1.2"', f'version="{version}"', 1)
    assert RobotModel.from_urdf(text).n_q == 2


@pytest.mark.parametrize("attribute", ["acceleration", "deceleration", "jerk"])
def test_a_negative_or_nan_extended_limit_is_a_problem_naming_the_joint(attribute):
    text = URDF12.read_text().replace('jerk="40"', f'{attribute}="-1"' if attribute != "jerk" else 'jerk="-1"')
    text = text.replace(f'{attribute}="2.5"', "").replace(f'{attribute}="3.5"', "")
    err = load_error(text)
    assert "slide" in str(err) and attribute in str(err)
    err = load_error(URDF12.read_text().replace('jerk="40"', 'jerk="nan"'))
    assert "slide" in str(err) and "jerk" in str(err)


@pytest.mark.parametrize("shape", ['<box size="0.1 -0.2 0.1"/>', '<sphere radius="1e200"/>',
                                   '<cylinder radius="0.1" length="1e300"/>', '<capsule radius="-0.1" length="0.2"/>',
                                   '<mesh filename="m.stl" scale="1e9 1e9 1e9"/>'])
def test_absurd_collision_geometry_is_ignored_with_a_warning(shape):
    text = URDF12.read_text().replace('<capsule radius="0.1" length="0.4"/>', shape, 1)
    model = RobotModel.from_urdf(text)
    assert model.link_collisions[model.link_index("base")] == ()
    assert any("base" in str(w) and ("negative" in str(w) or "above" in str(w)) for w in model.load_warnings)


def test_limits_written_as_minus_zero_are_plain_zero():
    """Found by make fuzz: upper="-0" with lower="0" made random_configuration raise numpy's
    'high - low < 0' (-0.0 - 0.0 has its sign bit set)."""
    text = (FIXTURES / "planar_2link.urdf").read_text()
    model = RobotModel.from_urdf(text.replace('lower="-3.14159" upper="3.14159"', 'lower="0" upper="-0"', 1))
    j = model.joint_index("joint1")
    assert model.joint_upper[j] == 0.0 and not np.signbit(model.joint_upper[j])
    q = model.random_configuration(5, rng=0)
    assert np.all(q[:, model.joint_q_index[j]] == 0.0)
