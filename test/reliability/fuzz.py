"""URDF and SRDF mutation fuzzing: mutate real descriptions and check that loading (and then
using) each mutant either works or raises a RobokinError -- never another exception, a hang or a
wrong type. SRDFs are mutated against a fixed robot: besides the URDF edits, deep, duplicate,
cyclic and shared subgroups, virtual and passive joints with odd names and types, group states
with huge or non-numeric values.

Used two ways: ``test_fuzz_urdf.py`` and ``test_fuzz_srdf.py`` draw a bounded number of mutants
with hypothesis (part of ``make test``); ``make fuzz`` runs this file for a time budget (half the
cases URDFs, half SRDFs)::

    python test/reliability/fuzz.py --seconds 600      # prints cases/s and every finding
"""

from __future__ import annotations

import argparse
import contextlib
import random
import re
import signal
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import robokin_ros as rk  # noqa: E402
from robokin_ros.model.srdf import parse_srdf  # noqa: E402

NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")
NAME = re.compile(r'(name|link|joint)="([^"]*)"')
ODD_NUMBERS = ["nan", "inf", "-inf", "1e308", "-1e308", "1e-320", "-0", "", "x", "1 2", "0x10", "1_0",
               "9" * 400, "1e309", "+", "."]


def seed_documents() -> list[tuple[str, str]]:
    """(label, text) of the bundled robots, the valid fixtures and the corpus (if present)."""
    paths = sorted((ROOT / "robokin_ros" / "robots").glob("*.urdf"))
    paths += [p for p in sorted((ROOT / "test" / "fixtures").glob("*.urdf")) if not p.name.startswith("bad_")]
    paths += sorted((ROOT / "test" / "fixtures" / "field").glob("*.urdf"))
    corpus = ROOT.parent / "shared" / "urdf-corpus"
    if corpus.is_dir():
        paths += sorted(p for p in corpus.glob("*.urdf") if p.stat().st_size < 200_000)
    return [(p.name, p.read_text(encoding="utf-8")) for p in paths]


def mutate(text: str, rng: random.Random, steps: int) -> str:
    """``steps`` random edits of ``text``: odd numbers, deleted / duplicated lines, swapped names,
    truncation, inserted characters."""
    for _ in range(steps):
        kind = rng.randrange(7)
        lines = text.split("\n")
        if kind == 0:   # a number becomes something odd
            spans = [m.span() for m in NUMBER.finditer(text)]
            if spans:
                a, b = rng.choice(spans)
                text = text[:a] + rng.choice(ODD_NUMBERS) + text[b:]
        elif kind == 1 and len(lines) > 2:   # delete a line (often a whole element)
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
        elif kind == 2 and lines:   # duplicate a line
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == 3:   # a name refers to another element
            names = list(NAME.finditer(text))
            if len(names) > 1:
                target, source = rng.sample(names, 2)
                a, b = target.span(2)
                text = text[:a] + source.group(2) + text[b:]
        elif kind == 4 and text:   # cut the text
            text = text[:rng.randrange(len(text))]
        elif kind == 5:   # insert characters, XML-special ones included
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(["<", ">", "&", '"', "\x00", "\ud800", "é", "<link/>", "<!--", "]]>"]) + text[i:]
        else:   # a joint type changes
            text = text.replace(rng.choice(['"revolute"', '"fixed"', '"continuous"', '"prismatic"']),
                                rng.choice(['"floating"', '"planar"', '"revolute"', '"ball"', '""']), 1)
    return text


def check(text: str) -> str | None:
    """None if ``text`` loads and works or is refused with a RobokinError; else what went wrong."""
    try:
        model = rk.RobotModel.from_urdf(text)
    except rk.RobokinError:
        return None
    except Exception:  # noqa: BLE001 - that is the finding
        return "from_urdf: " + traceback.format_exc(limit=3)
    try:
        q = model.home_configuration()
        poses = rk.forward_kinematics(model, q)
        if poses.shape != (model.n_links, 4, 4):
            return f"forward_kinematics shape {poses.shape}"
        rk.jacobians(model, q)
        model.random_configuration(3, rng=0)
        if model.n_v:
            rk.gravity_torques(model, q)
        again = rk.RobotModel.from_urdf(model.to_urdf())
        if not again.equals(model):
            return "to_urdf does not round-trip"
    except rk.RobokinError:
        return None
    except Exception:  # noqa: BLE001
        return "using the model: " + traceback.format_exc(limit=3)
    return None


# ---------------------------------------------------------------------------- SRDFs
#: A case slower than this is a finding (a parse that grows exponentially or hangs).
SLOW_SECONDS = 5.0


class _TooSlow(Exception):
    """Raised into a read that overran :data:`SLOW_SECONDS`."""


@contextlib.contextmanager
def _deadline(seconds: float):
    """Interrupt the block with :class:`_TooSlow` after ``seconds`` (SIGALRM; main thread only,
    elsewhere the block runs unbounded and the caller measures the time instead)."""
    def interrupt(signum, frame):
        raise _TooSlow
    try:
        previous = signal.signal(signal.SIGALRM, interrupt)
    except ValueError:   # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def seed_srdfs() -> list[tuple[str, rk.RobotModel, str]]:
    """(label, robot, SRDF text) of the SRDF fixtures, each with the robot it describes."""
    robots, fixtures = ROOT / "robokin_ros" / "robots", ROOT / "test" / "fixtures" / "srdf"
    panda = rk.RobotModel.from_urdf_file(robots / "panda.urdf")
    twin = rk.RobotModel.from_urdf_file(robots / "twin_arm_torso.urdf")
    pairs = [("panda.srdf", panda), ("twin_arm_mixed.srdf", twin), ("twin_arm_mobile.srdf", twin)]
    corpus = ROOT.parent / "shared" / "urdf-corpus"
    for robot in ("pr2", "baxter"):     # MoveIt's own SRDFs, when the corpus is beside this checkout
        if (corpus / f"{robot}.urdf").is_file():
            pairs.append((f"{robot}_groups.srdf", rk.RobotModel.from_urdf_file(corpus / f"{robot}.urdf")))
    return [(name, model, (fixtures / name).read_text(encoding="utf-8")) for name, model in pairs]


def _srdf_block(text: str, rng: random.Random) -> str:
    """SRDF elements that stress the reader: deep chains, cycles, duplicates and shared levels of
    subgroups; virtual and passive joints; group states with odd values."""
    names = [m.group(2) for m in NAME.finditer(text)] or ["x"]
    pick = lambda: rng.choice(names)  # noqa: E731
    kind = rng.randrange(6)
    if kind == 0:   # a deep chain of subgroups (deeper than Python's recursion limit)
        depth = rng.choice([3, 50, 1200])
        lines = [f'<group name="z0"><joint name="{pick()}"/></group>']
        lines += [f'<group name="z{i}"><group name="z{i - 1}"/></group>' for i in range(1, depth)]
        return "\n".join(lines)
    if kind == 1:   # a cycle, possibly through existing groups
        a, b = pick(), pick()
        return f'<group name="{a}"><group name="{b}"/></group><group name="{b}"><group name="{a}"/></group>'
    if kind == 2:   # each level names the previous twice (a naive reading is exponential)
        lines = [f'<group name="w{i}"><group name="w{i - 1}"/><group name="w{i - 1}"/></group>' for i in range(1, 45)]
        return f'<group name="w0"><link name="{pick()}"/></group>' + "\n".join(lines)
    if kind == 3:   # a virtual joint: odd type, frame and child
        kind_ = rng.choice(["planar", "floating", "fixed", "FLOATING", "ball", ""])
        return (f'<virtual_joint name="{pick()}" type="{kind_}" parent_frame="{rng.choice(["world", "", pick()])}" '
                f'child_link="{pick()}"/><group name="{pick()}"><joint name="{pick()}"/></group>')
    if kind == 4:   # group states with huge or non-numeric values
        values = " ".join(f'<joint name="{pick()}" value="{rng.choice(ODD_NUMBERS)}"/>' for _ in range(3))
        return f'<group_state name="{pick()}" group="{pick()}">{values}</group_state>'
    return (f'<passive_joint name="{pick()}"/><end_effector name="{pick()}" group="{pick()}" '
            f'parent_link="{pick()}"/><group name="{pick()}"><chain base_link="{pick()}" tip_link="{pick()}"/></group>')


def mutate_srdf(text: str, rng: random.Random, steps: int) -> str:
    """``steps`` random edits of an SRDF: those of :func:`mutate`, or elements from
    :func:`_srdf_block` inserted before ``</robot>``."""
    for _ in range(steps):
        if rng.random() < 0.6:
            text = mutate(text, rng, 1)
        else:
            at = text.rfind("</robot>")
            at = len(text) if at < 0 else at
            text = text[:at] + _srdf_block(text, rng) + text[at:]
    return text


def check_srdf(model: rk.RobotModel, text: str) -> str | None:
    """None if ``text`` reads against ``model`` into a usable description, or is refused with a
    RobokinError; else what went wrong (another exception, a slow read, an unusable result)."""
    start = time.monotonic()
    try:
        with _deadline(SLOW_SECONDS):
            semantic = parse_srdf(text, model)
    except _TooSlow:
        return f"parse_srdf did not finish within {SLOW_SECONDS:g} s"
    except rk.RobokinError:
        return None
    except Exception:  # noqa: BLE001 - that is the finding
        return "parse_srdf: " + traceback.format_exc(limit=3)
    if time.monotonic() - start > SLOW_SECONDS:
        return f"parse_srdf took {time.monotonic() - start:.1f} s"
    try:
        moveit = semantic.moveit_model
        q = semantic.moveit_configuration(model.home_configuration())
        if q.shape != (moveit.n_q,):
            return f"moveit_configuration shape {q.shape}"
        for group in semantic.groups.values():
            for link in (group.base, group.tip):
                moveit.link_index(link or moveit.root_link)
            for joint in group.joints:
                if joint not in moveit.joint_names:
                    return f"group {group.name!r} names {joint!r}, not an independent joint of the model"
        for group, states in semantic.group_states.items():
            for name in states:
                if not np.all(np.isfinite(semantic.named_configuration(name, group))):
                    return f"group state {name!r} is not finite"
        for line in map(str, semantic.warnings):
            if not isinstance(line, str):
                return f"a warning formats as {type(line).__name__}"
    except rk.RobokinError:
        return None
    except Exception:  # noqa: BLE001
        return "using the description: " + traceback.format_exc(limit=3)
    return None


def run(seconds: float, seed: int) -> int:
    rng = random.Random(seed)
    documents, srdfs = seed_documents(), seed_srdfs()
    findings: dict[str, str] = {}
    cases, start = 0, time.monotonic()
    with np.errstate(all="ignore"):
        while time.monotonic() - start < seconds:
            if cases % 2:
                label, model, text = rng.choice(srdfs)
                problem = check_srdf(model, mutate_srdf(text, rng, rng.randint(1, 4)))
            else:
                label, text = rng.choice(documents)
                problem = check(mutate(text, rng, rng.randint(1, 4)))
            cases += 1
            if problem is not None:
                key = problem.strip().splitlines()[-1]
                if key not in findings:
                    findings[key] = f"{label}: {problem}"
                    print(f"FINDING {len(findings)} ({label}):\n{problem}", flush=True)
            if cases % 500 == 0:
                elapsed = time.monotonic() - start
                print(f"{cases} cases in {elapsed:.0f} s ({cases / elapsed:.0f} cases/s), "
                      f"{len(findings)} findings", flush=True)
    elapsed = time.monotonic() - start
    print(f"fuzz: {cases} cases in {elapsed:.0f} s ({cases / elapsed:.1f} cases/s) from {len(documents)} "
          f"URDF and {len(srdfs)} SRDF seed documents; {len(findings)} distinct findings")
    return 1 if findings else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="time budget (default 600)")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    print(f"fuzz: seed {args.seed}, {args.seconds:g} s")
    sys.exit(run(args.seconds, args.seed))


if __name__ == "__main__":
    main()
