"""The model as data (issue 38): the functions of a model (configuration, builder, urdf_writer)
read it through the protocols of ``model/model_data.py``, below ``RobotModel``; the class
implements them, and its methods of the same names are a facade over the functions."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import ModelError, RobotModel
from robokin_ros.model import builder, configuration, urdf_writer
from robokin_ros.model.fields import model_arrays
from robokin_ros.model.model_data import EditableModel, ModelData
from robokin_ros.model.urdf import urdf_fields

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MODEL = Path(__file__).resolve().parents[3] / "robokin_ros" / "model"


@pytest.fixture(scope="module")
def mimic():
    return RobotModel.from_urdf_file(FIXTURES / "prismatic_continuous_mimic.urdf")


@pytest.fixture(scope="module")
def floating():
    return RobotModel.from_urdf_file(FIXTURES / "floating.urdf")


def _members(protocol) -> dict[str, object]:
    """The members a protocol declares (its own and its bases'), name -> property or function."""
    out: dict[str, object] = {}
    for cls in reversed(protocol.__mro__):
        if cls is object or not getattr(cls, "_is_protocol", False):
            continue
        out.update({name: value for name, value in vars(cls).items() if not name.startswith("_")})
    return out


def test_robot_model_implements_both_protocols_member_by_member(mimic):
    members = _members(EditableModel)
    assert set(_members(ModelData)) < set(members) and "create" in members and len(members) > 40
    for name, declared in members.items():
        value = getattr(mimic, name)   # raises AttributeError for a member the class lacks
        if isinstance(declared, property):   # data: not a method
            assert not callable(value) or isinstance(value, np.ndarray), name
        else:
            assert callable(value), name
    assert isinstance(mimic, EditableModel) and isinstance(mimic, ModelData)
    assert not isinstance(object(), ModelData)


def _model_reads(module) -> dict[str, set[str]]:
    """Per function of ``module``: the attributes it reads of its parameter ``model``."""
    tree = ast.parse(Path(module.__file__).read_text())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(a.arg == "model" for a in node.args.args):
            out[node.name] = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                              and isinstance(n.value, ast.Name) and n.value.id == "model"}
    return out


@pytest.mark.parametrize("module", [configuration, builder, urdf_writer], ids=lambda m: m.__name__.rsplit(".")[-1])
def test_the_functions_of_a_model_read_only_what_the_protocol_declares(module):
    """What mypy would check, without mypy: every ``model.x`` a function of the model reads is a
    member of the protocol it names, so the protocol is the whole of what they depend on."""
    declared = set(_members(EditableModel))
    reads = _model_reads(module)
    assert reads, "no function of the model found"
    beyond = {f"{function}: model.{name}" for function, names in reads.items() for name in names - declared}
    assert beyond == set()
    tree = ast.parse(Path(module.__file__).read_text())
    annotations = [ast.unparse(a.annotation) for a in ast.walk(tree) if isinstance(a, ast.arg) and a.annotation]
    assert annotations and not [a for a in annotations if "RobotModel" in a]


def _same(a, b) -> bool:
    if isinstance(a, RobotModel):
        return type(a) is type(b) and a.equals(b) and a.name == b.name
    if isinstance(a, dict):
        return a == b
    return np.array_equal(a, b)


def test_the_methods_are_a_facade_over_the_free_functions(mimic, floating):
    """The 8 configuration methods and the 5 builder methods give what the functions give."""
    q = np.array([0.3, -0.7])
    calls = {
        "check_q": ((q,), {}), "home_configuration": ((), {}), "random_configuration": ((4,), {"rng": 2}),
        "clamp": ((q * 10,), {}), "within_limits": ((q,), {"tolerance": 0.1}),
        "q_from_dict": (({"wheel_joint": 0.25},), {}), "q_to_dict": ((q,), {}), "all_joint_values": ((q,), {}),
    }
    for name, (args, kwargs) in calls.items():
        assert _same(getattr(mimic, name)(*args, **kwargs), getattr(configuration, name)(mimic, *args, **kwargs)), name
    edits = {
        "add_body": ((mimic.root_link, "extra_joint", "revolute", "extra"), {"limits": (-1.0, 1.0)}),
        "remove_subtree": ((mimic.link_names[-1],), {}), "rename_base": (("world",), {}),
        "replace_joint": (("wheel_joint", "revolute"), {"limits": (-2.0, 2.0)}),
        "set_fixed_transform": ((mimic.all_joint_names[0],), {"parent_to_joint": np.eye(4)}),
    }
    for name, (args, kwargs) in edits.items():
        assert _same(getattr(mimic, name)(*args, **kwargs), getattr(builder, name)(mimic, *args, **kwargs)), name
    assert floating.to_urdf() == urdf_writer.model_to_urdf(floating)


def test_the_builder_returns_a_model_of_the_class_it_was_given(mimic):
    """The builder makes its result with the class's own ``create`` (the EditableModel contract)."""

    @dataclasses.dataclass(frozen=True, eq=False)
    class Tagged(RobotModel):
        pass

    tagged = Tagged.create(urdf_fields((FIXTURES / "prismatic_continuous_mimic.urdf").read_text()))
    renamed = builder.rename_base(tagged, "world")
    assert type(renamed) is Tagged and renamed.root_link == "world"
    assert type(tagged.remove_subtree(tagged.link_names[-1])) is Tagged


def test_the_numbers_are_checked_before_any_model_exists():
    """``model_arrays`` refuses the record itself: nothing of the model class is made or needed."""
    fields = urdf_fields((FIXTURES / "branched.urdf").read_text())
    origins = np.array(fields.joint_origins, float)
    origins[1, 0, 3] = np.nan
    with pytest.raises(ModelError, match=rf"joint {fields.joint_names[1]!r}: origin is not finite"):
        model_arrays(dataclasses.replace(fields, joint_origins=origins))
    with pytest.raises(ModelError, match="names must not contain control characters"):
        model_arrays(dataclasses.replace(fields, link_names=[*fields.link_names[:-1], "bad\nname"]))
    assert set(model_arrays(fields)) == {f.name for f in dataclasses.fields(RobotModel)}
