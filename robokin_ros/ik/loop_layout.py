"""The compiled IK loops' shared layout: ``run``'s return values and the offsets of the scalars
that follow the three vectors of its state ``x (2 n_q + 12 n_tips + 7,)`` (``q``, the targets'
components, the best configuration so far): the same for the generated loop
(:mod:`robokin_ros.ik.compiled_loop`) and the generic one (:mod:`robokin_ros.ik.generic_loop`),
which both drivers rely on. Imports nothing (the generic loop's compiling process imports it
while that module is still being made)."""

#: ``run``'s return values.
CONVERGED, SPENT, PAUSED, NEEDS_RESTART_INDEX = 0, 1, 2, 3
#: Offsets of the scalars after the three vectors of the state.
ITERATIONS, STALL, BEST_COST, REFERENCE, RESTART, POSITION_ERROR, ROTATION_ERROR = range(7)
