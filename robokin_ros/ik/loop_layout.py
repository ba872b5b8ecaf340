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
#: The verdict codes :func:`finish_rows` writes (the order of
#: :data:`robokin_ros.ik.compiled_loop.VERDICTS`).
VERDICT_CONVERGED, VERDICT_SPENT, VERDICT_TIMEOUT = 0, 1, 2
INF = float("inf")


# The two functions below are compiled into both loops (their text into every generated module,
# :func:`robokin_ros.ik.compiled_loop.loop_source`; jitted by the generic one): a chunk of a batch
# is set up and read back without the GIL (numpy on a chunk of 64 problems held it 50 µs).
def start_rows(X, seeds, target, first, stride, start):
    """The states ``X (m, 2 n_q + n_t + 7)`` of problems ``start ... start + m - 1`` of a batch
    from their ``seeds (m, n_q)`` and target components ``target (m, n_t)``: ``q`` and the best
    configuration the seed, no iterations nor stall, costs inf, the restart index ``first +
    problem * stride``, errors 0."""
    n_q, n_t = seeds.shape[1], target.shape[1]
    S = 2 * n_q + n_t
    for p in range(X.shape[0]):
        for i in range(n_q):
            X[p, i] = seeds[p, i]
            X[p, n_q + n_t + i] = seeds[p, i]
        for i in range(n_t):
            X[p, n_q + i] = target[p, i]
        X[p, S + ITERATIONS], X[p, S + STALL], X[p, S + BEST_COST], X[p, S + REFERENCE] = 0.0, 0.0, INF, INF
        X[p, S + RESTART] = first + float(start + p) * stride
        X[p, S + POSITION_ERROR], X[p, S + ROTATION_ERROR] = 0.0, 0.0


def finish_rows(X, status, verdicts, results):
    """The results of the rows of :func:`start_rows`'s states ``X (m, S + 7)`` after ``run_many``
    gave them ``status (m,)``: ``verdicts (m,)`` (a ``VERDICT_*`` code) and, in ``results = (q
    (m, n_q), iterations (m,), position_error (m,), rotation_error (m,), success (m,), unfinished
    (m,))``, each row's ``q`` and iterations; a converged row's errors too, ``success`` True and
    ``unfinished`` False. A row the time budget stopped (``PAUSED``): ``VERDICT_TIMEOUT``, its
    ``q`` its best iterate and its iterations (a row never run keeps its seed and 0)."""
    q, iterations, position_error, rotation_error, success, unfinished = results
    n_q, S = q.shape[1], X.shape[1] - 7
    for p in range(X.shape[0]):
        if status[p] == PAUSED:
            verdicts[p] = VERDICT_TIMEOUT
            if X[p, S + ITERATIONS] > 0.0:
                for i in range(n_q):
                    q[p, i] = X[p, S - n_q + i]
                iterations[p] = int(X[p, S + ITERATIONS])
            continue
        for i in range(n_q):
            q[p, i] = X[p, i]
        iterations[p] = int(X[p, S + ITERATIONS])
        if status[p] == CONVERGED:
            verdicts[p] = VERDICT_CONVERGED
            position_error[p], rotation_error[p] = X[p, S + POSITION_ERROR], X[p, S + ROTATION_ERROR]
            success[p], unfinished[p] = True, False
        else:
            verdicts[p] = VERDICT_SPENT
