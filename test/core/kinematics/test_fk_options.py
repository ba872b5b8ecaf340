"""Output options of forward kinematics (``frames=``, ``layout="3x4"``, ``out=``, ``link_positions``)
equal the default all-links 4x4 result they are cut from, on every way FK runs (the numpy oracle,
the generic numba tier, the generated numba kernels), and their errors name the problem."""

import os

import numpy as np
import pytest
from peers import ERD_ROBOTS, erd_urdf

from robokin_ros import (
    ArgumentError,
    RobotModel,
    ShapeError,
    UnknownLinkError,
    forward_kinematics,
    link_positions,
    prepare,
)
from robokin_ros.kernels import accel
from robokin_ros.kernels.fk_codegen import compiled_fk, compiled_link_poses, generate_link_poses_source
from robokin_ros.kinematics import forward_kinematics_generic

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
#: a serial arm, a branched tree, mimic + prismatic + continuous, a floating base, a planar joint
LOCAL = [os.path.join(ROBOTS, "ur5e.urdf"), os.path.join(ROBOTS, "twin_arm_torso.urdf")] + [
    os.path.join(FIXTURES, f"{name}.urdf") for name in ("branched", "prismatic_continuous_mimic", "floating", "planar_joint")]
needs_numba = pytest.mark.skipif(not accel.available(), reason="numba is not installed (optional accelerator)")


def _models():
    for path in LOCAL:
        yield pytest.param(path, id=os.path.basename(path))
    for key in ("panda", "talos"):
        yield pytest.param(key, id=f"erd-{key}")


def _load(which: str) -> RobotModel:
    return RobotModel.from_urdf_file(erd_urdf(ERD_ROBOTS[which]) if which in ERD_ROBOTS else which)


def _frames(model: RobotModel) -> list:
    """A subset mixing names and indices (negative, repeated), in no particular order."""
    n = model.n_links
    return [model.link_names[-1], 0, -2, model.link_names[n // 2], n - 1]


def _indices(model: RobotModel, frames) -> list[int]:
    return [model.link_index(f) if isinstance(f, str) else f % model.n_links for f in frames]


def _expected(model, q, frames, layout):
    """The default result (all links, 4x4) by the generic kernel, cut to the option."""
    T = forward_kinematics_generic(model, q)
    if frames is not None:
        T = np.take(T, _indices(model, frames), axis=-3)
    return {"4x4": T, "3x4": T[..., :3, :], "position": T[..., :3, 3]}[layout]


def _call(model, q, frames, layout, out=None):
    if layout == "position":
        return link_positions(model, q, frames=frames, out=out)
    return forward_kinematics(model, q, frames=frames, layout=layout, out=out)


@pytest.fixture(params=["generic", "numpy generated", pytest.param("numba", marks=pytest.mark.slow)])
def path(run_with, request, monkeypatch, tmp_path_factory):
    """Each of our three FK kernels (the numba one skipped without numba)."""
    run_with(kind="generated" if request.param != "generic" else "generic")
    run_with(accelerated=request.param == "numba")
    if request.param == "numba":
        if not accel.available():
            pytest.skip("numba is not installed (optional accelerator)")
        monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "robokin_cache"))
    return request.param


@pytest.mark.parametrize("layout", ["4x4", "3x4", "position"])
@pytest.mark.parametrize("which", list(_models()))
def test_every_option_equals_the_default_result_cut_to_it(which, layout, path):
    model = _load(which)
    q = model.random_configuration(12, rng=7).reshape(3, 4, model.n_q)
    for frames in (None, _frames(model)):
        if path == "numba":
            prepare(model, fk_variants=[(layout, frames)])
        expected = _expected(model, q, frames, layout)
        got = _call(model, q, frames, layout)
        assert got.shape == expected.shape and got.dtype == np.float64 and got.flags.c_contiguous
        np.testing.assert_allclose(got, expected, atol=1e-12, rtol=0)
        np.testing.assert_allclose(_call(model, q[1, 2], frames, layout), expected[1, 2], atol=1e-12, rtol=0)
        out = np.full(expected.shape, np.nan)
        assert _call(model, q, frames, layout, out=out) is out
        np.testing.assert_allclose(out, expected, atol=1e-12, rtol=0)
        single = np.full(expected.shape[2:], np.nan)
        assert _call(model, q[0, 3], frames, layout, out=single) is single
        np.testing.assert_allclose(single, expected[0, 3], atol=1e-12, rtol=0)


@pytest.mark.slow   # compiles a numba kernel per variant
@pytest.mark.parametrize("layout", ["4x4", "3x4", "position"])
@pytest.mark.parametrize("which", list(_models()))
def test_the_numpy_oracle_and_numba_give_the_same_numbers(run_with, which, layout, monkeypatch, tmp_path):
    model = _load(which)
    q = model.random_configuration(accel.MIN_BATCH + 3, rng=8)
    frames = _frames(model)
    run_with(accelerated=False)
    numpy_result = _call(model, q, frames, layout)
    if not accel.available():
        pytest.skip("numba is not installed (optional accelerator)")
    run_with(accelerated=True)
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    kernel = compiled_link_poses(model, model.link_indices(frames), layout)
    if kernel is not None:
        assert kernel.accelerate()
    np.testing.assert_allclose(_call(model, q, frames, layout), numpy_result, atol=1e-12, rtol=0)


def test_without_numba_every_option_runs_on_the_numpy_oracle(monkeypatch):
    monkeypatch.setattr(accel, "available", lambda: False)   # numba not installed
    model = RobotModel.from_urdf_file(LOCAL[1])
    q = model.random_configuration(accel.MIN_BATCH, rng=9)
    for layout in ("4x4", "3x4", "position"):
        for frames in (None, _frames(model)):
            np.testing.assert_allclose(_call(model, q, frames, layout), _expected(model, q, frames, layout), atol=1e-12, rtol=0)
            kernel = compiled_link_poses(model, model.link_indices(frames), layout)
            assert not kernel.accelerate() and kernel._accelerated is None


def test_the_kernels_write_only_what_they_return():
    model = RobotModel.from_urdf_file(LOCAL[1])
    n, frames = model.n_links, (3, 5)
    assert [len(generate_link_poses_source(model, links, layout).values)
            for layout in ("4x4", "3x4", "position") for links in (None, frames)] == [16 * n, 32, 12 * n, 24, 3 * n, 6]
    generated, kernel = generate_link_poses_source(model), compiled_fk(model).generated
    assert (generated.body, generated.values) == (kernel.body, kernel.values)


def test_a_subset_computes_only_its_support():
    model = RobotModel.from_urdf_file(os.path.join(FIXTURES, "branched.urdf"))  # trunk (q0) -> left (q1) | right (q2)
    left = "\n".join(generate_link_poses_source(model, (model.link_index("left_tip"),), "position").body)
    right = "\n".join(generate_link_poses_source(model, (model.link_index("right_tip"),), "position").body)
    assert "q[0]" in left and "q[1]" in left and "q[2]" not in left
    assert "q[0]" in right and "q[2]" in right and "q[1]" not in right


def test_a_floating_base_gets_a_generated_kernel_only_for_frames_it_does_not_move():
    model = RobotModel.from_urdf_file(os.path.join(FIXTURES, "floating.urdf"))
    assert generate_link_poses_source(model) is None
    assert generate_link_poses_source(model, (model.link_index("tip"),), "3x4") is None
    assert generate_link_poses_source(model, (0,), "3x4") is not None
    q = model.random_configuration(4, rng=1)
    np.testing.assert_array_equal(forward_kinematics(model, q, frames=["world"], layout="3x4"),
                                  np.broadcast_to(np.eye(4)[:3], (4, 1, 3, 4)))


def test_out_is_reused_and_its_previous_content_does_not_matter():
    model = RobotModel.from_urdf_file(LOCAL[0])
    out = np.full((5, model.n_links, 3, 4), 1e300)
    first = forward_kinematics(model, model.random_configuration(5, rng=1), layout="3x4", out=out).copy()
    q = model.random_configuration(5, rng=2)
    forward_kinematics(model, q, layout="3x4", out=out)
    np.testing.assert_allclose(out, forward_kinematics(model, q)[..., :3, :], atol=1e-12, rtol=0)
    assert not np.allclose(first, out)


def test_empty_frames_give_an_empty_result():
    model = RobotModel.from_urdf_file(LOCAL[0])
    q = model.random_configuration(3, rng=1)
    assert forward_kinematics(model, q, frames=[]).shape == (3, 0, 4, 4)
    assert link_positions(model, q[0], frames=[]).shape == (0, 3)


@pytest.mark.parametrize("layout", ["4x4", "3x4", "position"])
def test_out_errors_name_the_problem_and_write_nothing(layout):
    model = RobotModel.from_urdf_file(os.path.join(FIXTURES, "branched.urdf"))
    q = model.random_configuration(4, rng=0)
    shape = (4, model.n_links) + {"4x4": (4, 4), "3x4": (3, 4), "position": (3,)}[layout]
    with pytest.raises(ShapeError, match=r"out must have shape \(4, 6, .*got \(3, 6"):
        _call(model, q, None, layout, out=np.zeros((3,) + shape[1:]))
    with pytest.raises(ShapeError, match="out must have shape"):
        _call(model, q, [0, 1], layout, out=np.zeros(shape))   # the shape of all links, not of the 2 asked for
    with pytest.raises(ArgumentError, match="out: must have dtype float64, got float32"):
        _call(model, q, None, layout, out=np.zeros(shape, np.float32))
    strided = np.zeros((8,) + shape[1:])[::2]
    with pytest.raises(ArgumentError, match="out: must be C-contiguous"):
        _call(model, q, None, layout, out=strided)
    with pytest.raises(ArgumentError, match="out: must be C-contiguous"):
        _call(model, q, None, layout, out=np.asfortranarray(np.zeros(shape)))
    read_only = np.zeros(shape)
    read_only.flags.writeable = False
    with pytest.raises(ArgumentError, match="out: is read-only"):
        _call(model, q, None, layout, out=read_only)
    with pytest.raises(ArgumentError, match="out: must be a numpy array, got list"):
        _call(model, q, None, layout, out=np.zeros(shape).tolist())
    assert not np.any(strided) and not np.any(read_only)
    with pytest.raises(ShapeError, match=r"out must have shape \(6, "):  # one configuration: no batch axis
        _call(model, q[0], None, layout, out=np.zeros(shape[:1] + shape))


def test_frame_and_layout_errors():
    model = RobotModel.from_urdf_file(os.path.join(FIXTURES, "branched.urdf"))
    q = model.random_configuration(2, rng=0)
    with pytest.raises(UnknownLinkError, match=r"unknown link 'left_tp'; did you mean 'left_tip'"):
        forward_kinematics(model, q, frames=["trunk", "left_tp"])
    with pytest.raises(UnknownLinkError, match="unknown link 6"):
        link_positions(model, q, frames=[6])
    with pytest.raises(UnknownLinkError, match="unknown link -7"):
        forward_kinematics(model, q, frames=[-7], layout="3x4")
    with pytest.raises(UnknownLinkError, match="unknown link True"):
        forward_kinematics(model, q, frames=[True])
    with pytest.raises(ArgumentError, match="frames: must be a sequence of link names or indices, got the str 'trunk'"):
        forward_kinematics(model, q, frames="trunk")
    with pytest.raises(ArgumentError, match="frames: must be a sequence of link names or indices, got int"):
        link_positions(model, q, frames=3)
    with pytest.raises(ArgumentError, match=r"layout: must be '4x4' or '3x4', got 'position' \(positions: link_positions\(\)\)"):
        forward_kinematics(model, q, layout="position")
    with pytest.raises(ShapeError, match=r"q must have shape"):
        forward_kinematics(model, q[:, :2], layout="3x4")


def test_numpy_integer_indices_and_arrays_of_names_are_accepted():
    model = RobotModel.from_urdf_file(os.path.join(FIXTURES, "branched.urdf"))
    q = model.random_configuration(2, rng=0)
    expected = forward_kinematics(model, q)[:, [5, 1]]
    np.testing.assert_array_equal(forward_kinematics(model, q, frames=np.array([5, 1])), expected)
    np.testing.assert_array_equal(forward_kinematics(model, q, frames=np.array(["right_tip", "trunk"])), expected)
