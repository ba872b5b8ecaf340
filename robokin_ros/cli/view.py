"""``robokin view``: the robot in a browser (viser), with joint sliders, an IK gizmo, link frames,
self-collision colours (with coal) and SRDF states; no ROS needed.

The page is served to the URL printed (with its per-run token) and to nobody else
(:mod:`robokin_ros.web.access`); the description limits of the ``robokin`` node apply
(:mod:`robokin_ros.model.description_limits`, their defaults).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from ..errors import ArgumentError, SRDFError, shorten
from ..model import RobotModel
from ..model.description import read_description
from ..model.description_limits import DescriptionLimits, check_description
from . import common, meshes
from .arguments import count

#: [s] how often the waiting main thread wakes (a Ctrl-C is handled within it).
POLL_PERIOD = 0.2


def add_commands(commands) -> None:
    view = commands.add_parser("view", help="a 3D view in the browser: sliders, IK gizmo, collisions",
                               description=__doc__.split("\n\n")[0].replace("``robokin view``: ", ""))
    common.add_file(view)
    view.add_argument("--srdf", metavar="FILE", help="SRDF file: its group states become buttons, its groups IK tips")
    view.add_argument("--port", type=count(0, 65535), default=8080, help="HTTP port (default 8080; the next free "
                      "one if taken, said on stderr; 0: any free port)")
    view.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                      "0.0.0.0 for other machines, with a warning: the token travels unencrypted)")
    view.add_argument("--no-collisions", action="store_true", help="do not colour self-colliding links")
    view.add_argument("--reach", metavar="MAP.npz", help="a reachability map of `robokin reach` to show as a layer "
                      "(voxels coloured by their index, hung from the map's base link; off until ticked)")
    meshes.add_options(view)
    view.set_defaults(run=run_view)


def load_model(file: str, limits: DescriptionLimits) -> tuple[RobotModel, str]:
    """The model of a URDF/xacro file and its text, within ``limits`` (checked before the model is built).

    Raises:
        URDFError: unreadable, over the limits or invalid.
    """
    text = read_description(file)
    check_description(text, limits)
    return RobotModel.from_urdf(text), text


def start_view(file: str, srdf: str | None = None, port: int = 8080, host: str = "127.0.0.1",
               collisions: bool = True, reach: str | None = None, *, package_paths=(), mesh_dir: str | None = None):
    """Load ``file`` and serve its view (its meshes looked for in ``package_paths`` first, for
    ``package://`` URIs, and in ``mesh_dir`` last); returns ``(served, view)``: the
    :class:`~robokin_ros.web.access.ServedView` (server, URL with its token; it runs in the
    background) and the :class:`~robokin_ros.web.RobotView`.

    Raises:
        WebViewUnavailableError: viser is not installed.
        URDFError, SRDFError: unreadable description, or one over the description limits.
        ArgumentError: a bad ``port`` or ``host`` (named ``--port``, ``--host``); ``reach`` is
            not a reachability map. UnknownLinkError: its tip or base is not a link of the robot.
    """
    from ..web import RobotView, import_viser
    from ..web.access import serve

    viser = import_viser()
    limits = DescriptionLimits()
    model, text = load_model(file, limits)
    reach_map = None
    if reach:
        from ..reach import load_reach_map
        reach_map = load_reach_map(reach)
    semantics = None
    if srdf:
        from ..model.srdf import parse_srdf
        try:
            semantics = parse_srdf(read_description(srdf), model)
        except SRDFError as error:
            raise SRDFError(f"{shorten(srdf, 200)}: {error}") from None
    served = serve(viser, host, port, ("--host", "--port"))
    try:
        view = RobotView(served.server, model, urdf_dir=Path(file).resolve().parent, semantics=semantics,
                         collisions=collisions, limits=limits, package_paths=list(package_paths) or None,
                         mesh_dir=Path(mesh_dir).resolve() if mesh_dir else None)
        if reach_map is not None:
            from ..web.reach_layer import ReachLayer
            view.reach_layer = ReachLayer(view, reach_map, text)
            if view.reach_layer.made_for_another_robot:
                print(f"warning: {reach} was made for another robot description", file=sys.stderr)
    except BaseException:
        served.server.stop()
        raise
    return served, view


def wait_for_ctrl_c(event: threading.Event) -> None:
    """Sleep until ``event`` is set or Ctrl-C (KeyboardInterrupt), waking every :data:`POLL_PERIOD`."""
    while not event.wait(POLL_PERIOD):
        pass


def run_view(args) -> int:
    started = time.perf_counter()
    try:
        served, view = start_view(args.file, args.srdf, args.port, args.host, not args.no_collisions, args.reach,
                                  package_paths=args.package_path, mesh_dir=args.mesh_dir)
    except ArgumentError as error:
        if error.argument not in ("--host", "--port"):
            raise
        print(f"robokin view: error: {error}", file=sys.stderr)   # a usage error: one line, exit 2
        return 2
    try:
        for line in (served.port_note(), served.access.warning()):
            if line:
                print(f"robokin view: {line}", file=sys.stderr, flush=True)
        print(f"robokin view: {view.model.name} at {served.access.url()} "
              f"(ready in {time.perf_counter() - started:.2f} s; Ctrl-C to stop)", flush=True)
        wait_for_ctrl_c(view.meshes_loaded)
        for note in view.scene.notes:
            print(f"warning: {note}", file=sys.stderr)
        wait_for_ctrl_c(threading.Event())
    finally:
        served.server.stop()
    return 0
