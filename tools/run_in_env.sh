#!/usr/bin/env bash
# Run a command in the project's ROS 2 wheel environment (.venv, made by tools/bootstrap_ros_env.sh):
#   tools/run_in_env.sh python -m pytest test/node
#   tools/run_in_env.sh            # an interactive bash in the environment
# Sets: PATH (.venv/bin first), VIRTUAL_ENV, AMENT_PREFIX_PATH and CMAKE_PREFIX_PATH (= .venv),
# ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST (always: no DDS traffic may leave loopback),
# ROS_DOMAIN_ID (unless already set: one value per checkout, 102..214 from a checksum of its path,
# the same in every terminal, so a client started by a second call finds the node; the test suite
# moves itself to a random 1..101, see test/conftest.py), ROBOKIN_CHECKOUT_DOMAIN_ID (that value),
# ROS_LOG_DIR (a fresh directory under .build/ros-log unless already set),
# FASTRTPS_DEFAULT_PROFILES_FILE (the fast-discovery profile in tools/, unless already set).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
BUILD="${BUILD:-$ROOT/.build}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "run_in_env: no environment at $VENV; create it with 'make venv' (tools/bootstrap_ros_env.sh)" >&2
  exit 1
fi

export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"
# The venv is the only ament/CMake prefix: never mix in a sourced /opt/ros.
export AMENT_PREFIX_PATH="$VENV"
export CMAKE_PREFIX_PATH="$VENV"

export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
unset ROS_LOCALHOST_ONLY   # deprecated in Jazzy; LOCALHOST above replaces it
# One domain per checkout (outside the tests' 1..101 and 215..232): two terminals meet.
ROBOKIN_CHECKOUT_DOMAIN_ID=$((102 + $(printf '%s' "$ROOT" | cksum | cut -d' ' -f1) % 113))
export ROBOKIN_CHECKOUT_DOMAIN_ID
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$ROBOKIN_CHECKOUT_DOMAIN_ID}"
if [ -z "${ROS_LOG_DIR:-}" ]; then
  mkdir -p "$BUILD/ros-log"
  # Keep a day of run logs.
  find "$BUILD/ros-log" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
  ROS_LOG_DIR="$(mktemp -d "$BUILD/ros-log/run.XXXXXX")"
  export ROS_LOG_DIR
fi
export FASTRTPS_DEFAULT_PROFILES_FILE="${FASTRTPS_DEFAULT_PROFILES_FILE:-$ROOT/tools/fastdds_fast_discovery.xml}"

if [ $# -eq 0 ]; then
  echo "robokin_ros env: ROS_DOMAIN_ID=$ROS_DOMAIN_ID, venv $VENV (exit to leave)" >&2
  exec bash -i
fi
exec "$@"
