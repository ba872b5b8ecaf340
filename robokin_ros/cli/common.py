"""What the ``robokin`` commands share: loading a robot, its default tip, reading a
configuration (values outside their limits warned) and printing warnings."""

from __future__ import annotations

import argparse
import contextlib
import sys

import numpy as np

from ..errors import ArgumentError
from ..kernels import notices
from ..model import RobotModel
from ..model.description import read_description
from ..model.groups import derive_groups
from .arguments import count
from .peer_output import STDERR_LOCK


def add_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="URDF file (a .xacro file is expanded with xacro)")


def add_tip(parser: argparse.ArgumentParser, option: str = "--tip", what: str = "IK frame") -> None:
    parser.add_argument(option, help=f"{what} (default: the tip of the default IK group, as the node "
                                     "derives it; 'robokin check' prints it)")


def default_tip(model: RobotModel) -> tuple[str, str]:
    """The tip of the IK group the node uses when a request names none and there is no SRDF
    (:func:`robokin_ros.model.groups.derive_groups`: the main arm's tool frame, else its hand; a
    foot on a robot without arms), and why; the root link when no joint moves a link.

    Returns:
        (link name, a phrase saying why it is the default).
    """
    derived = derive_groups(model)
    return derived.groups[derived.default].tip or model.root_link, derived.reason


def tip_of(model: RobotModel, given: str | None) -> str:
    """``given``, else :func:`default_tip`."""
    return given or default_tip(model)[0]


def warn(command: str, message: str) -> None:
    """One ``robokin COMMAND: warning: ...`` line on stderr."""
    print(f"robokin {command}: warning: {message}", file=sys.stderr)


def add_configuration(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--q", nargs="+", metavar="NAME=VALUE", default=(),
                       help="joint values [rad or m]; the others stay at home")
    group.add_argument("--named", metavar="NAME",
                       help="a named configuration: 'home', or a group_state of --srdf")
    group.add_argument("--random", type=count(0, 2**63 - 1), metavar="SEED",
                       help="a random configuration within the limits (SEED >= 0)")
    parser.add_argument("--srdf", metavar="FILE", help="SRDF file for --named")


def compile_notices() -> contextlib.AbstractContextManager:
    """While a command runs: one line on stderr when a robot's kernels start compiling, one each
    time one of several compiling at once ends (how many are left, about how long), one when the
    last ends."""
    def tell(notice) -> None:
        with STDERR_LOCK:   # (a whole line, never cut by bench's switch of fd 2: cli/peer_output.py)
            print(f"robokin: {notice.line()}", file=sys.stderr, flush=True)

    return notices.subscribed(tell)


def load(path: str) -> tuple[RobotModel, str]:
    """The model of a URDF/xacro file and its text."""
    text = read_description(path)
    return RobotModel.from_urdf(text), text


def parse_values(model: RobotModel, items, argument: str = "--q") -> dict[str, float]:
    values = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ArgumentError(argument, f"{item!r} is not NAME=VALUE")
        try:
            values[name] = float(value)
        except ValueError:
            raise ArgumentError(argument, f"{name} = {value!r} is not a number") from None
    return values


def configuration(model: RobotModel, args) -> np.ndarray:
    """``(n_q,)`` from --q / --named / --random (default: home)."""
    if getattr(args, "random", None) is not None:
        return model.random_configuration(rng=args.random)
    named = getattr(args, "named", None)
    if named and named != "home":
        if not args.srdf:
            raise ArgumentError("--named", f"{named!r} needs --srdf FILE (without one, only 'home' exists)")
        from ..model.srdf import parse_srdf
        return parse_srdf(read_description(args.srdf), model).named_configuration(named)
    values = parse_values(model, getattr(args, "q", ()))
    q = model.q_from_dict(values, strict=True)
    for message in outside_limits(model, values):
        warn(args.command, message)
    return q


def outside_limits(model: RobotModel, values: dict[str, float]) -> list[str]:
    """A phrase per value of ``values`` (joint name -> value of a one-coordinate joint) outside
    its joint's limits, naming the joint, the value and the limits."""
    out = []
    for name, value in values.items():
        if name not in model.q_names:
            continue
        k = model.q_names.index(name)
        lo, hi = float(model.q_lower[k]), float(model.q_upper[k])
        if not lo <= value <= hi:
            out.append(f"{name} = {value:g} is outside its limits [{lo:.4g}, {hi:.4g}]; used as given")
    return out
