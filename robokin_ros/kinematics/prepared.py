"""A prepared handle of one model for single configurations: FK, tip Jacobians and dynamics at
the cost of one compiled call.

:class:`Kinematics` binds the model's compiled single-configuration entries at construction,
without waiting for any compile: FK, Jacobians and dynamics run the generic compiled tier
(:mod:`robokin_ros.kernels.generic_tier`, :mod:`robokin_ros.kernels.generic_dynamics_tier`,
compiled once per installation) from the first call, and the model's own generated kernels
(:func:`robokin_ros.kernels.numba_source.single_source`) once they are loaded in the background
(each kernel's ``ready_single`` is replaced by one assignment:
:attr:`~robokin_ros.kernels.fk_codegen.CompiledFK.ready_single`,
:attr:`~robokin_ros.kernels.compiled_dynamics.CompiledDynamics.ready_single`). A call is:
allocate the output (unless ``out=`` is given), one call of compiled code, return. The public
functions reach the same entries through their single-configuration lane
(:mod:`robokin_ros.kernels.single_lane`: a guard and a registry lookup more).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..checks import check_out
from ..dynamics import aba, crba, gravity_torques, rnea
from ..errors import ArgumentError
from ..kernels import accel
from ..kernels.dynamics_codegen import PREPARABLE
from ..kernels.fk_codegen import compiled_fk, compiled_jacobian
from ..kernels.plan import dynamics_tree_with_inertia
from ..model import RobotModel
from .fk import forward_kinematics
from .geometric_jacobians import jacobian

Array = NDArray[np.float64]

#: The dynamics methods of :class:`Kinematics` (names of ``PREPARABLE`` kernels).
_DYNAMICS = ("rnea", "crba", "aba", "gravity_torques")


class Kinematics:
    """One model's forward kinematics, tip Jacobians and dynamics, prepared for single
    configurations (a controller's or a node's per-message calls).

    Construction compiles nothing and waits for no compile: :meth:`fk` and :meth:`jacobian` run
    the generic compiled kernels (:mod:`robokin_ros.kernels.generic_tier`) from the first call
    and the model's generated ones once loaded (they start loading in the background at
    construction); so do the dynamics methods (the generic dynamics kernels, then each call's
    generated kernel once loaded; :func:`robokin_ros.prepare` compiles them now). Each compiled
    method costs one call of compiled code plus the allocation of its result (none with ``out=``). Results are
    those of the public functions (:func:`robokin_ros.forward_kinematics`,
    :func:`robokin_ros.jacobian`, :func:`robokin_ros.rnea`, ...), to the last bit where the
    public function runs the same compiled kernel. The handle never changes: the accelerator
    switch (:data:`robokin_ros.kernels.accel.enabled`) is read at construction only.

    What a method checks and what it skips, for one configuration:

    - checked in the compiled call, nearly free: each input's length and ``out``'s shape, that
      the inputs are finite (no NaN or inf) and that every mimic joint's value is. A failed check
      reruns the call through the public function, which raises its typed error
      (:class:`~robokin_ros.errors.ShapeError`, :class:`~robokin_ros.errors.NonFiniteError`).
    - checked by numba's dispatch: inputs that are not 1-D C-contiguous float64 arrays (lists,
      other dtypes, strided views, batches ``(..., n_q)``) and an ``out`` that is not a
      writeable C-contiguous float64 array also take the public function (which accepts
      batches and lists, and raises :class:`~robokin_ros.errors.ArgumentError` for a bad
      ``out``), after numba's refusal (slow: pass batches to the public functions).
    - skipped: that ``out`` of :meth:`fk` and :meth:`jacobian` does not overlap ``q`` (they
      write it while still reading ``q``: the result is then undefined; the dynamics methods
      read every input first, so ``out`` may be one of them); joint limits (the public
      functions do not check them either).

    Without numba (or with :data:`robokin_ros.kernels.accel.enabled` False at construction), or
    for a model without generated kernels (a floating or planar joint), every method is the public
    function; so is a dynamics method not named in ``dynamics``, and ``aba`` of a model with a
    coordinate that moves no mass (the public function raises for it).

    Args:
        model: the robot.
        frames: link names whose Jacobian kernels to bind now; another frame's binds on its
            first :meth:`jacobian` call.
        dynamics: names among ``"rnea"``, ``"crba"``, ``"aba"``, ``"gravity_torques"`` to bind;
            None: all four when the model has an inertial, else none.

    Raises:
        UnknownLinkError: a frame the model does not have.
        ModelError: ``dynamics`` named for a model without any inertial.
        ArgumentError: an unknown name in ``dynamics``.
    """

    def __init__(self, model: RobotModel, frames=(), dynamics=None):
        self.model = model
        #: Whether the methods run compiled code (numba active at construction).
        self.accelerated = accel.active()
        if dynamics is None:
            dynamics = _DYNAMICS if model.link_masses.sum() > 0.0 else ()
        dynamics = tuple(dynamics)
        unknown = [name for name in dynamics if name not in _DYNAMICS]
        if unknown:
            raise ArgumentError("dynamics", f"unknown calls {unknown}; choose among {sorted(_DYNAMICS)}")
        self._fk_shape = (model.n_links, 4, 4)
        self._jacobian_shape = (6, model.n_v)
        self._vector_shape = (model.n_v,)
        self._matrix_shape = (model.n_v, model.n_v)
        #: The generated FK kernel (its :attr:`~robokin_ros.kernels.fk_codegen.CompiledFK.ready_single`
        #: is the entry :meth:`fk` calls), or None.
        self._fk = self._bind(compiled_fk(model)) if self.accelerated else None
        self._jacobians: dict = {}
        for frame in frames:
            self._jacobian_kernel(frame)
        #: The generated kernel of each dynamics method (its ``ready_single`` is the entry the
        #: method calls), or None.
        self._dynamics = {name: self._bind(self._dynamics_kernel(name)) for name in dynamics}

    @staticmethod
    def _bind(kernel):
        """``kernel`` (a generated FK, Jacobian or dynamics kernel, or None) with its compiled entry bound now:
        the generic tier's (loaded from the installation's cache, or None while that compiles),
        its own generated one loading in the background."""
        if kernel is not None:
            kernel.generic()
            kernel.load_in_background()
        return kernel

    def _jacobian_kernel(self, frame: str):
        """The generated Jacobian kernel of ``frame`` (bound on first use), or None."""
        if frame not in self._jacobians:
            kernel = compiled_jacobian(self.model, frame)   # raises UnknownLinkError first
            self._jacobians[frame] = self._bind(kernel) if self.accelerated else None
        return self._jacobians[frame]

    def _dynamics_kernel(self, name: str):
        """The generated kernel of the dynamics call ``name``, or None (not accelerated; ``aba``
        of a model with a massless coordinate, which must raise)."""
        tree = dynamics_tree_with_inertia(self.model)   # raises ModelError for a massless model
        if not self.accelerated or name == "aba" and tree.massless_coordinates:
            return None
        return PREPARABLE[name](self.model)

    def _entry(self, name: str):
        """The compiled single entry the dynamics method ``name`` calls now, or None."""
        kernel = self._dynamics.get(name)
        return None if kernel is None else kernel.ready_single

    def fk(self, q, out: Array | None = None) -> Array:
        """World pose of every link, as :func:`robokin_ros.forward_kinematics` ``(model, q)``.

        Args:
            q: one configuration ``(n_q,)`` (anything else goes through the public function).
            out: optional ``(n_links, 4, 4)`` float64 C-contiguous array to write into.

        Returns:
            ``T_world_link (n_links, 4, 4)``; ``out`` itself when given.
        """
        entry = None if self._fk is None else self._fk.ready_single
        if entry is not None:
            result = np.empty(self._fk_shape) if out is None else out
            try:
                if entry(q, result) == 0:
                    return result
            except TypeError:
                pass
        return forward_kinematics(self.model, q, out=out)

    def jacobian(self, q, frame: str, out: Array | None = None) -> Array:
        """Geometric Jacobian of ``frame``, LOCAL_WORLD_ALIGNED (world axes, frame origin), as
        :func:`robokin_ros.jacobian` ``(model, q, frame)``.

        Args:
            q: one configuration ``(n_q,)``.
            frame: link name.
            out: optional ``(6, n_v)`` float64 C-contiguous array to write into.

        Returns:
            ``J (6, n_v)``, rows [linear; angular]; ``out`` itself when given.

        Raises:
            UnknownLinkError: an unknown frame (its kernel is built on the first call).
        """
        kernel = self._jacobians.get(frame)
        if kernel is None:
            kernel = self._jacobian_kernel(frame)
        entry = None if kernel is None else kernel.ready_single
        if entry is not None:
            result = np.empty(self._jacobian_shape) if out is None else out
            try:
                if entry(q, result) == 0:
                    return result
            except TypeError:
                pass
        return _written(jacobian(self.model, q, frame), out)

    def rnea(self, q, v, a, out: Array | None = None) -> Array:
        """Inverse dynamics ``tau (n_v,)`` as :func:`robokin_ros.rnea` ``(model, q, v, a)``
        (standard gravity, no external force); ``out``: optional ``(n_v,)`` array."""
        entry = self._entry("rnea")
        if entry is not None:
            result = np.empty(self._vector_shape) if out is None else out
            try:
                if entry(q, v, a, result) == 0:
                    return result
            except TypeError:
                pass
        return _written(rnea(self.model, q, v, a), out)

    def crba(self, q, out: Array | None = None) -> Array:
        """Joint-space inertia matrix ``M (n_v, n_v)`` (both triangles) as
        :func:`robokin_ros.crba` ``(model, q)``; ``out``: optional ``(n_v, n_v)`` array."""
        entry = self._entry("crba")
        if entry is not None:
            result = np.empty(self._matrix_shape) if out is None else out
            try:
                if entry(q, result) == 0:
                    return result
            except TypeError:
                pass
        return _written(crba(self.model, q), out)

    def aba(self, q, v, tau, out: Array | None = None) -> Array:
        """Forward dynamics ``a (n_v,)`` as :func:`robokin_ros.aba` ``(model, q, v, tau)``
        (standard gravity); ``out``: optional ``(n_v,)`` array."""
        entry = self._entry("aba")
        if entry is not None:
            result = np.empty(self._vector_shape) if out is None else out
            try:
                if entry(q, v, tau, result) == 0:
                    return result
            except TypeError:
                pass
        return _written(aba(self.model, q, v, tau), out)

    def gravity_torques(self, q, out: Array | None = None) -> Array:
        """Gravity torques ``g(q) (n_v,)`` as :func:`robokin_ros.gravity_torques` ``(model, q)``
        (standard gravity); ``out``: optional ``(n_v,)`` array."""
        entry = self._entry("gravity_torques")
        if entry is not None:
            result = np.empty(self._vector_shape) if out is None else out
            try:
                if entry(q, result) == 0:
                    return result
            except TypeError:
                pass
        return _written(gravity_torques(self.model, q), out)


def _written(result: Array, out: Array | None) -> Array:
    """``result``, or copied into ``out`` (checked like the public functions' ``out=``).

    Raises:
        ShapeError, ArgumentError: a bad ``out`` (see :func:`robokin_ros.checks.check_out`).
    """
    if out is None:
        return result
    check_out(out, result.shape)
    out[...] = result
    return out
