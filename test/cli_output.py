"""What a ``robokin`` command told a person, less the compile notices that a cold kernel cache adds.

On a cache that has not seen a robot (CI's clean clone), any command that computes may print
``robokin: compiling kernels for ...`` and ``robokin: compiled N kernels for ... in S s`` on stderr
(:mod:`robokin_ros.kernels.notices`); whether it does depends on which tests ran before. Tests that
check a command's other stderr lines read them through :func:`without_compile_notices`.
"""

import re

#: One compile notice line, as ``robokin_ros.cli.common.compile_notices`` prints it.
NOTICE = re.compile(r"^robokin: (compiling kernels for .*|compiled \d+ kernels? for .* in [0-9.]+ s)\n", re.M)


def without_compile_notices(err: str) -> str:
    """``err`` without its compile notice lines."""
    return NOTICE.sub("", err)
