"""The numba module sources (:mod:`robokin_ros.kernels.numba_source`) compute what the generated
code does: run as plain Python (numba's ``njit`` replaced by the identity), with or without
numba installed, against libm and the Python-float kernels."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from reference import run_generated

from robokin_ros import RobotModel
from robokin_ros.kernels import numba_source
from robokin_ros.kernels.fk_codegen import compiled_fk, compiled_frames

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
SMALL = [os.path.join(FIXTURES, f) for f in ("planar_2link.urdf", "prismatic_continuous_mimic.urdf", "branched.urdf")]


class _PlainNumba:
    """Stands in for numba in a generated module: ``njit`` returns the Python function, so the
    module's code runs (slowly) on plain Python and numpy, with or without numba installed."""

    @staticmethod
    def njit(*args, **kwargs):
        return lambda fn: fn


def _fetch_add(array, index, value):
    """:func:`robokin_ros.kernels.claims.fetch_add` in Python (one thread)."""
    old = int(array[index])
    array[index] += value
    return old


def _exec_plain(source: str) -> dict:
    namespace = {"numba": _PlainNumba, "fetch_add": _fetch_add}
    source = source.replace("import numba\n", "").replace("from robokin_ros.kernels.claims import fetch_add\n", "")
    with np.errstate(invalid="ignore", over="ignore"):
        exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102
    return namespace


def claims(rows_per_claim: int) -> np.ndarray:
    return np.array([0, rows_per_claim, 0], np.int64)


def _sincos_of(source_namespace, x):
    c, s = np.empty_like(x), np.empty_like(x)
    with np.errstate(invalid="ignore", over="ignore"):
        source_namespace["sincos"](x, c, s)
    return c, s


def test_the_vectorised_sine_and_cosine_match_libm():
    x = np.concatenate([np.random.default_rng(0).uniform(-r, r, 2000) for r in (0.1, 3.3, 40.0, 1e3, 99999.0)] + [
        np.arange(-8, 9) * np.pi / 4, [0.0, -0.0, 5e-9, -1e-300, 99999.99, 1e5, -1e5, 3e7, -1e300, np.inf, -np.inf, np.nan]])
    with np.errstate(invalid="ignore"):
        expected = np.cos(x), np.sin(x)
    prelude = "import numba\nimport numpy as np\nfrom numpy import cos, sin\n"  # libm through numpy: NaN for inf, as in numba
    namespaces = [_exec_plain(prelude + numba_source.SINCOS_SOURCE)]
    if importlib.util.find_spec("numba") is not None:
        import numba

        plain = _exec_plain(prelude + numba_source.SINCOS_SOURCE)
        namespaces.append({"sincos": numba.njit(plain["sincos"], error_model="numpy")})
    for namespace in namespaces:
        for got, want in zip(_sincos_of(namespace, x), expected):
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            finite = ~np.isnan(want)
            assert np.abs(got[finite] - want[finite]).max() <= 2.3e-16
            assert np.abs(got[finite]).max() <= 1.0


@pytest.mark.parametrize("path", SMALL + [os.path.join(ROBOTS, "twin_arm_torso.urdf"), os.path.join(FIXTURES, "double_pendulum.urdf")],
                         ids=os.path.basename)
def test_the_vector_trig_kernel_computes_what_the_generated_code_does(path):
    # runs the numba module's code as plain Python: the angle expressions taken out of the body
    # (mimic multipliers and offsets included) and the blocks must give the straight-line body's numbers
    model = RobotModel.from_urdf_file(path)
    kernel = compiled_fk(model)
    lines, arguments = numba_source.split_trig(kernel.generated.body)
    assert arguments and not any("cos(" in line or "sin(" in line for line in lines)
    source = numba_source.vector_trig_wrapper_source(kernel.generated.body, kernel.generated.values, model.n_q)
    q = model.random_configuration(numba_source.BLOCK + 5, rng=3)   # more than one block
    q[0] *= 1e6                                              # angles where libm takes over
    out = np.empty((len(q), kernel.generated.template.size))
    taken = claims(7)   # claims across the blocks' bounds
    _exec_plain(source)["kernel"](q, out, taken)
    expected = np.array([run_generated(kernel.generated, qi).reshape(-1) for qi in q])   # the body, interpreted
    np.testing.assert_allclose(out, expected, atol=1e-13, rtol=0)
    np.testing.assert_array_equal(out[0], expected[0])       # libm's values exactly
    assert taken[2] == len(q) and taken[0] >= len(q)         # every row written, counted once


def test_the_plain_kernel_reads_each_input_of_a_multi_input_kernel():
    # q[i] of the inputs side by side: q[0], q[1] from the first (width 2), q[2] from the second
    body = ["    r0 = q[0] * 2.0 + q[2]", "    r1 = q[1] - q[2]"]
    source = numba_source.wrapper_source(body, ["r0", "r1", 5.0], (2, 1))
    a, b = np.random.default_rng(1).normal(size=(9, 2)), np.random.default_rng(2).normal(size=(9, 1))
    out, taken = np.empty((9, 3)), claims(4)
    _exec_plain(source)["kernel"](a, b, out, taken)
    np.testing.assert_array_equal(out, np.column_stack([a[:, 0] * 2.0 + b[:, 0], a[:, 1] - b[:, 0], np.full(9, 5.0)]))
    assert taken[2] == 9
    with pytest.raises(ValueError, match="bad shapes"):
        _exec_plain(source)["kernel"](a, b[:8], out, claims(4))


def test_the_fk_kernels_use_vector_trig_and_the_frame_kernels_do_not():
    model = RobotModel.from_urdf_file(os.path.join(ROBOTS, "twin_arm_torso.urdf"))
    assert compiled_fk(model)._vector_trig
    assert not compiled_frames(model, ("left_tool0",))._vector_trig   # IK's kernels are unchanged
