"""``robokin view``: the robot in a browser (viser), with joint sliders, an IK gizmo, link frames,
self-collision colours (with coal) and SRDF states; no ROS needed."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..errors import SRDFError, shorten
from ..model.description import read_description
from . import common


def add_commands(commands) -> None:
    view = commands.add_parser("view", help="a 3D view in the browser: sliders, IK gizmo, collisions",
                               description=__doc__.split("\n\n")[0].replace("``robokin view``: ", ""))
    common.add_file(view)
    view.add_argument("--srdf", metavar="FILE", help="SRDF file: its group states become buttons, its groups IK tips")
    view.add_argument("--port", type=int, default=8080, help="HTTP port (default 8080; the next free one if taken; "
                      "0: any free port)")
    view.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                      "0.0.0.0 for other machines)")
    view.add_argument("--no-collisions", action="store_true", help="do not colour self-colliding links")
    view.add_argument("--reach", metavar="MAP.npz", help="a reachability map of `robokin reach` to show as a layer "
                      "(voxels coloured by their index, hung from the map's base link)")
    view.set_defaults(run=run_view)


def start_view(file: str, srdf: str | None = None, port: int = 8080, host: str = "127.0.0.1",
               collisions: bool = True, reach: str | None = None):
    """Load ``file`` and serve its view; returns ``(server, view)`` (the server runs in the background).

    Raises:
        WebViewUnavailableError: viser is not installed.
        URDFError, SRDFError: unreadable description.
        ArgumentError: ``reach`` is not a reachability map; UnknownLinkError: its tip or base is
            not a link of the robot.
    """
    from ..web import RobotView, import_viser

    viser = import_viser()
    model, text = common.load(file)
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
    server = viser.ViserServer(host=host, port=port, verbose=False)
    try:
        view = RobotView(server, model, urdf_dir=Path(file).resolve().parent, semantics=semantics,
                         collisions=collisions)
        if reach_map is not None:
            from ..web.reach_layer import ReachLayer
            view.reach_layer = ReachLayer(view, reach_map, text)
            if view.reach_layer.made_for_another_robot:
                print(f"warning: {reach} was made for another robot description", file=sys.stderr)
    except BaseException:
        server.stop()
        raise
    return server, view


def run_view(args) -> int:
    started = time.perf_counter()
    server, view = start_view(args.file, args.srdf, args.port, args.host, not args.no_collisions, args.reach)
    host = "localhost" if args.host in ("127.0.0.1", "0.0.0.0") else args.host
    print(f"robokin view: {view.model.name} at http://{host}:{server.get_port()} "
          f"(ready in {time.perf_counter() - started:.2f} s; Ctrl-C to stop)", flush=True)
    try:
        view.meshes_loaded.wait()
        for note in view.scene.notes:
            print(f"warning: {note}", file=sys.stderr)
        while True:
            time.sleep(3600)
    finally:
        server.stop()
