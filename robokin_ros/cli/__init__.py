"""The ``robokin`` command: inspect, check, draw and query a robot without ROS or RViz.

    robokin check FILE                      # like urdfdom's check_urdf, plus joints, default tip, warnings
    robokin tree FILE --format text|dot|svg|png [-o OUT] [--fold-fixed N|all|none]
    robokin show FILE [--q NAME=VALUE ...|--named NAME [--srdf FILE]|--random SEED] -o robot.png
    robokin fk FILE [--frame tool0] [--base LINK] [--q NAME=VALUE ...] [--format table|json]
    robokin ik FILE [--tip tool0] --pose X Y Z [QX QY QZ QW | --rpy R P Y] [--position-only]
               [--axis-tolerances RX RY RZ] [--solutions K] [--seed NAME=VALUE ...]   # JSON
    robokin workspace FILE [--tip tool0] -n 100000 -o ws.png
    robokin reach FILE --tip tool0 [--resolution 0.05] [--orientations 50] [--ray auto|ADDRESS] [--out map.npz]
    robokin path FILE [--tip tool0] [--from-q NAME=VALUE ...] --to X Y Z [QX QY QZ QW] [--step 0.005] [-o path.png]
    robokin bench FILE [--tip tool0]        # FK / Jacobian / IK timings, Pinocchio alongside if installed
    robokin view FILE [--srdf FILE] [--port 8080]   # 3D view in a browser (viser): sliders, IK gizmo

Also ``python -m robokin_ros ...``; ``robokin --version``. The ``robokin`` executable starts in
:func:`robokin_entry.robokin` (standard library only): ``bench``, ``ik`` and ``view`` say what they
do in a line before the imports, and a Ctrl-C during them exits 130 at once. A command's frame defaults to the
tip of the default IK group, as the node derives it (:func:`~robokin_ros.cli.common.default_tip`).
Core only: never imports rclpy. Errors print one message
(no traceback; at most :data:`~robokin_ros.cli.arguments.MAX_ERROR_LINES` lines) and exit with
status 1; a usage error, including a number outside its option's bounds (see
:mod:`robokin_ros.cli.arguments`), prints one line and exits with 2. numpy's floating-point
warnings are off: a result they would flag is an error of its own or a documented inf.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import warnings

import numpy as np

from .. import __version__
from ..errors import RobokinError
from . import draw, inspect, path, query, reach
from .arguments import Parser, capped
from .common import compile_notices


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="robokin", description=__doc__.splitlines()[0],
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                    epilog="Run 'robokin COMMAND --help' for a command's options.")
    parser.add_argument("--version", action="version", version=f"%(prog)s (robokin_ros) {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    inspect.add_commands(commands)
    draw.add_commands(commands)
    query.add_commands(commands)
    reach.add_commands(commands)
    path.add_commands(commands)
    from . import view  # robokin view (the web view; viser is imported only when it runs)
    view.add_commands(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one ``robokin`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings(), compile_notices():
            warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"numpy\.")   # "mean of empty slice"...
            return int(args.run(args) or 0)
    except BrokenPipeError:   # e.g. piped into head
        sys.stderr.close()
        return 0
    except (RobokinError, OSError, ValueError) as error:
        print(capped(f"robokin {args.command}: {error}"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def leave(code: int) -> int:
    """``code``, once the process may exit normally; while kernels still load in the background
    (threads named ``robokin_ros accel``: bench's loading, :mod:`robokin_ros.kernels.lazy_accel`),
    the process ends now with ``code`` through ``os._exit`` after flushing its output (exiting
    through the interpreter's finalisation could crash in numba; a compile left unfinished is
    lost, its process ends with this one)."""
    if any(t.name.startswith("robokin_ros accel") and t.is_alive() for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):   # closed, or a broken pipe
                pass
        os._exit(code)
    return code


def entry_point() -> None:
    """``python -m robokin_ros``'s entry point (the ``robokin`` executable's is
    :func:`robokin_entry.robokin`)."""
    sys.exit(leave(main()))
