"""package.xml against its format-3 schema with ament_xmllint (a ROS 2 install); skipped with a
reason elsewhere, where the manifest is still checked to parse and to name this package."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_package_xml_names_the_package_and_its_build_type():
    root = ET.parse(ROOT / "package.xml").getroot()
    assert root.get("format") == "3" and root.findtext("name") == "robokin_ros"
    assert root.find("export").findtext("build_type") == "ament_python"


@pytest.mark.skipif(importlib.util.find_spec("ament_xmllint") is None,
                    reason="ament_xmllint is not installable from PyPI; runs on a ROS 2 install")
def test_xmllint():
    from ament_xmllint.main import main

    assert main(argv=[str(ROOT / "package.xml")]) == 0
