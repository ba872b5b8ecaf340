"""Real-world descriptions: every URDF of ../shared/urdf-corpus and of example-robot-data that
urdfdom (through Pinocchio) accepts loads here, and agrees with Pinocchio on the world pose and
the Jacobian (LOCAL_WORLD_ALIGNED) of every link to 1e-12."""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import LOCAL_WORLD_ALIGNED, RobotModel, URDFError, forward_kinematics, jacobians

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from peers import column_map, example_robot_data_dir, pin_configuration  # noqa: E402

pin = pytest.importorskip("pinocchio")

CORPUS = Path(__file__).resolve().parents[4] / "shared" / "urdf-corpus"
ATOL = 1e-12


def corpus_files() -> list[str]:
    return sorted(glob.glob(str(CORPUS / "*.urdf")))


def erd_files() -> list[str]:
    base = example_robot_data_dir()
    return [] if base is None else sorted(glob.glob(os.path.join(base, "**", "*.urdf"), recursive=True))


def _id(path: str) -> str:
    return Path(path).stem if str(CORPUS) in path else "erd-" + Path(path).stem


FILES = corpus_files() + erd_files()


def test_corpus_is_present():
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent (../shared is not beside this checkout)")
    assert len(corpus_files()) >= 30


def urdfdom_model(text: str):
    """Pinocchio's model of ``text`` (parsed by urdfdom), or None if urdfdom rejects it."""
    try:
        return pin.buildModelFromXML(text)
    except (RuntimeError, ValueError):
        return None


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_loads_when_urdfdom_does_and_agrees_with_pinocchio(path, capfd):
    text = Path(path).read_text(encoding="utf-8")
    pmodel = urdfdom_model(text)
    capfd.readouterr()   # urdfdom prints its complaints to stderr
    if pmodel is None:
        try:
            RobotModel.from_urdf(text)
        except URDFError:
            pass   # rejected by both: fine; any other exception type fails the test
        return
    model = RobotModel.from_urdf(text)
    pdata = pmodel.createData()
    frames = [pmodel.getFrameId(name, pin.BODY) for name in model.link_names]
    assert all(f < pmodel.nframes for f in frames)
    P = column_map(model, pmodel)
    q = model.random_configuration(2, rng=np.random.default_rng(3))
    T, J = forward_kinematics(model, q), jacobians(model, q, LOCAL_WORLD_ALIGNED)
    for qi, Ti, Ji in zip(q, T, J):
        pq = pin_configuration(model, pmodel, qi)
        pin.computeJointJacobians(pmodel, pdata, pq) if pmodel.nv else pin.forwardKinematics(pmodel, pdata, pq)
        pin.updateFramePlacements(pmodel, pdata)
        np.testing.assert_allclose(Ti, [pdata.oMf[f].homogeneous for f in frames], rtol=0, atol=ATOL)
        if pmodel.nv == 0:   # Pinocchio's getFrameJacobian crashes on a model without velocity
            assert Ji.shape == (model.n_links, 6, 0)
            continue
        expected = [pin.getFrameJacobian(pmodel, pdata, f, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED) @ P
                    for f in frames]
        np.testing.assert_allclose(Ji, expected, rtol=0, atol=ATOL)


def test_every_corpus_file_loads():
    """The issue's bar: 0 rejections of a description urdfdom accepts across the corpus."""
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent (../shared is not beside this checkout)")
    rejected = []
    for path in corpus_files():
        text = Path(path).read_text(encoding="utf-8")
        if urdfdom_model(text) is None:
            continue
        try:
            RobotModel.from_urdf(text)
        except URDFError as e:
            rejected.append(f"{Path(path).name}: {e}")
    assert not rejected, rejected
