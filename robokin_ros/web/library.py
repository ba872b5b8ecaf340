"""The optional viser dependency: imported on first use, with a one-line install hint when absent."""

from __future__ import annotations

import importlib

from ..errors import RobokinError

INSTALL_HINT = "pip install 'viser==1.1.1' (or: pip install 'robokin_ros[web]'; no rosdep key exists)"


class WebViewUnavailableError(RobokinError, ImportError):
    """viser, the web view's library, is not installed; the message says how to install it."""


def import_viser():
    """The ``viser`` module.

    Raises:
        WebViewUnavailableError: viser is not installed (or fails to import: its error is kept).
    """
    try:
        return importlib.import_module("viser")
    except ImportError as error:
        raise WebViewUnavailableError(f"the web view needs viser, which is not installed ({error}): "
                                      f"{INSTALL_HINT}") from None
