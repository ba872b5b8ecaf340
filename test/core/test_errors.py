"""Error messages that echo their input stay short, whatever the input's length."""

import pytest

from robokin_ros import RobotModel
from robokin_ros.errors import JointLimitError, UnknownJointError, UnknownLinkError, shorten

PLANAR = """<robot name="planar"><link name="base"/><link name="arm"/>
<joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_shorten_cuts_and_says_how_long():
    assert shorten("abc") == "'abc'"
    assert shorten("x" * 1000) == repr("x" * 60) + "... (1000 characters)"
    assert shorten("x" * 100, 10) == repr("x" * 10) + "... (100 characters)"


@pytest.mark.parametrize("error", [UnknownLinkError, UnknownJointError])
def test_megabyte_names_give_short_messages(error):
    text = str(error("y" * 1_000_000, ["base", "arm"]))
    assert len(text) < 200 and "(1000000 characters)" in text


def test_unknown_link_of_a_model_is_cut_and_still_suggests_close_matches():
    model = RobotModel.from_urdf(PLANAR)
    with pytest.raises(UnknownLinkError) as info:
        model.link_index("z" * 1_000_000)
    assert len(str(info.value)) < 200
    with pytest.raises(UnknownLinkError, match=r"unknown link 'arn'; did you mean 'arm'"):
        model.link_index("arn")
    with pytest.raises(UnknownLinkError, match=r"unknown link 7\b"):
        model.link_indices([7])   # an index keeps its plain repr


def test_joint_limit_error_cuts_the_joint_name():
    text = str(JointLimitError("j" * 10_000, 2.0, -1.0, 1.0))
    assert len(text) < 200 and "(10000 characters)" in text
