"""Paths used by the web view tests (a module of its own: several conftest.py exist in test/)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
