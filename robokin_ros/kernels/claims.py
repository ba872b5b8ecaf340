"""Rows claimed by the threads of one batched call, inside the compiled kernels.

A batch kernel of :mod:`robokin_ros.kernels.numba_source` (``kernel(x_1, ..., out, claims)``)
runs on every thread of the call at once (:func:`robokin_ros.kernels.parallel.run_rows`): each
takes the next ``claims[1]`` rows by an atomic add on ``claims[0]`` until none is left, adds the
rows it computed to ``claims[2]``, and returns once ``claims[2]`` reaches the batch size (every
row written, by whichever thread). The threads meet in ``claims`` only, without the GIL: a
thread the operating system wakes late takes fewer rows, and no thread waits for another to get
the GIL between chunks (on a 2-core virtual machine each such wait cost 15-50 µs, a tenth of a
10,000-configuration FK call).

:func:`fetch_add` is compiled into the generated modules (their compiling process imports this
module); it needs numba, as they do.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def fetch_add(typingctx, array, index, value):
    """``array[index] += value`` atomically (sequentially consistent) on a C-contiguous int64
    array, returning the value before the addition (``value`` 0: an atomic read)."""
    signature = types.int64(array, types.intp, types.int64)

    def codegen(context, builder, sig, args):
        array_type = sig.args[0]
        ary = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(context, builder, array_type, ary, [args[1]])
        return builder.atomic_rmw("add", pointer, args[2], "seq_cst")

    return signature, codegen
