"""URDF mutation fuzzing: mutate real descriptions and check that loading (and then using) each
mutant either works or raises a RobokinError -- never another exception, a hang or a wrong type.

Used two ways: ``test_fuzz_urdf.py`` draws a bounded number of mutants with hypothesis (part of
``make test``); ``make fuzz`` runs this file for a time budget::

    python test/reliability/fuzz.py --seconds 600      # prints cases/s and every finding
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import robokin_ros as rk  # noqa: E402

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


def run(seconds: float, seed: int) -> int:
    rng = random.Random(seed)
    documents = seed_documents()
    findings: dict[str, str] = {}
    cases, start = 0, time.monotonic()
    with np.errstate(all="ignore"):
        while time.monotonic() - start < seconds:
            label, text = rng.choice(documents)
            mutant = mutate(text, rng, rng.randint(1, 4))
            problem = check(mutant)
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
          f"seed documents; {len(findings)} distinct findings")
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
