"""``robokin view``: serves the page and says where; a missing viser or a bad file is one line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from webview_paths import ROBOTS, ROOT

from robokin_ros import RobokinError
from robokin_ros.cli import main
from robokin_ros.web import WebViewUnavailableError, import_viser

PANDA = ROBOTS / "panda.urdf"


def test_missing_viser_is_one_line_saying_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "viser", None)       # what an absent package looks like to import
    with pytest.raises(WebViewUnavailableError, match=r"pip install 'viser==") as caught:
        import_viser()
    assert isinstance(caught.value, RobokinError) and isinstance(caught.value, ImportError)
    assert main(["view", str(PANDA)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("robokin view: the web view needs viser") and "pip install" in err


def test_bad_srdf_names_the_file(capsys, tmp_path):
    pytest.importorskip("viser")
    bad = tmp_path / "bad.srdf"
    bad.write_text("<robot name='x'><group_state")
    assert main(["view", str(PANDA), "--srdf", str(bad), "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"robokin view: {str(bad)!r}: invalid SRDF: malformed XML at line 1"), err


def test_serves_the_page_says_the_url_and_stops_on_ctrl_c():
    pytest.importorskip("viser")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.Popen([sys.executable, "-m", "robokin_ros", "view", str(PANDA), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(ROOT))
    try:
        deadline, url = time.monotonic() + 60, None
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "robokin view exited before saying its URL"
            found = re.search(r"robokin view: panda at (http://127\.0\.0\.1:\d+/\?token=[\w-]+) \(ready in [\d.]+ s", line)
            url = found and found.group(1)
        assert url, "no URL line"
        with urllib.request.urlopen(url, timeout=10) as page:
            assert page.status == 200 and b"<html" in page.read().lower()
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
    assert code == 130
