"""numba source of GJK (Gilbert, Johnson, Keerthi) on primitive shapes, part of the generated
self-collision check (:mod:`robokin_ros.collision.compiled_source`).

``convex_verdict(rot, pos, a, b, sa, sb)`` decides a pair of primitives (sphere, capsule,
cylinder, box: their codes ``CODES`` and sizes) that the closed forms do not: a separating
plane proves them apart, or their shapes shrunk by the defer band found within the band of
each other prove them in collision; else coal decides. Each step is a certificate (a plane of
the Minkowski difference's support function, or one of its points), so a verdict never rests
on GJK having converged: an unfinished run leaves the pair to coal.

The text uses the generated module's constants ``CODES``, ``BAND`` and ``GJK_ITERATIONS``.
"""

#: Most GJK iterations of a compiled narrow phase before coal decides the pair.
GJK_ITERATIONS = 32

CONVEX_SOURCE = '''

@numba.njit(cache=True, nogil=True, error_model='numpy')
def convex_support(rot, pos, g, code, size, erosion, dx, dy, dz):
    """World point of the primitive g (``code``: sphere, capsule, cylinder, box; sizes ``size``)
    shrunk by ``erosion`` that is farthest along the direction (dx, dy, dz)."""
    x = rot[g, 0, 0] * dx + rot[g, 1, 0] * dy + rot[g, 2, 0] * dz   # the direction in g's frame
    y = rot[g, 0, 1] * dx + rot[g, 1, 1] * dy + rot[g, 2, 1] * dz
    z = rot[g, 0, 2] * dx + rot[g, 1, 2] * dy + rot[g, 2, 2] * dz
    if code == 3:
        px = size[0] - erosion if x >= 0.0 else erosion - size[0]
        py = size[1] - erosion if y >= 0.0 else erosion - size[1]
        pz = size[2] - erosion if z >= 0.0 else erosion - size[2]
    elif code == 2:
        rho = np.sqrt(x * x + y * y)
        f = (size[0] - erosion) / rho if rho > 0.0 else 0.0
        px, py = f * x, f * y
        pz = size[1] - erosion if z >= 0.0 else erosion - size[1]
    else:   # sphere, capsule: the ball around the centre (a sphere) or the axis segment
        n = np.sqrt(x * x + y * y + z * z)
        f = (size[0] - erosion) / n if n > 0.0 else 0.0
        h = 0.0 if code == 0 else (size[1] if z >= 0.0 else -size[1])
        px, py, pz = f * x, f * y, f * z + h
    return (rot[g, 0, 0] * px + rot[g, 0, 1] * py + rot[g, 0, 2] * pz + pos[g, 0],
            rot[g, 1, 0] * px + rot[g, 1, 1] * py + rot[g, 1, 2] * pz + pos[g, 1],
            rot[g, 2, 0] * px + rot[g, 2, 1] * py + rot[g, 2, 2] * pz + pos[g, 2])


@numba.njit(cache=True, nogil=True, error_model='numpy')
def closest_on_triangle(W, i, j, k):
    """Point of the triangle (W[i], W[j], W[k]) closest to the origin and which of its corners
    span the part it lies on (Ericson, Real-Time Collision Detection, 5.1.5)."""
    ax, ay, az = W[i, 0], W[i, 1], W[i, 2]
    abx, aby, abz = W[j, 0] - ax, W[j, 1] - ay, W[j, 2] - az
    acx, acy, acz = W[k, 0] - ax, W[k, 1] - ay, W[k, 2] - az
    d1 = -(abx * ax + aby * ay + abz * az)
    d2 = -(acx * ax + acy * ay + acz * az)
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, True, False, False
    bx, by, bz = W[j, 0], W[j, 1], W[j, 2]
    d3 = -(abx * bx + aby * by + abz * bz)
    d4 = -(acx * bx + acy * by + acz * bz)
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz, False, True, False
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz, True, True, False
    cx, cy, cz = W[k, 0], W[k, 1], W[k, 2]
    d5 = -(abx * cx + aby * cy + abz * cz)
    d6 = -(acx * cx + acy * cy + acz * cz)
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz, False, False, True
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz, True, False, True
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz), False, True, True
    denominator = va + vb + vc
    v, w = vb / denominator, vc / denominator
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w, True, True, True


@numba.njit(cache=True, nogil=True, error_model='numpy')
def closest_on_simplex(W, n):
    """The point of the simplex W[:n] (1 to 4 corners) closest to the origin, and W reduced to
    the corners of the part it lies on: ``(vx, vy, vz, n)``; ``n = 4``: the origin is inside."""
    if n == 1:
        return W[0, 0], W[0, 1], W[0, 2], 1
    if n == 2:
        ex, ey, ez = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
        ee = ex * ex + ey * ey + ez * ez
        t = -(W[0, 0] * ex + W[0, 1] * ey + W[0, 2] * ez) / ee if ee > 0.0 else 0.0
        if t <= 0.0:
            return W[0, 0], W[0, 1], W[0, 2], 1
        if t >= 1.0:
            W[0] = W[1]
            return W[0, 0], W[0, 1], W[0, 2], 1
        return W[0, 0] + t * ex, W[0, 1] + t * ey, W[0, 2] + t * ez, 2
    if n == 3:
        x, y, z, ka, kb, kc = closest_on_triangle(W, 0, 1, 2)
        return x, y, z, keep(W, 0, 1, 2, ka, kb, kc)
    # a tetrahedron: the faces the origin lies outside of (on the other side from the 4th corner)
    best, bx, by, bz, faces = np.inf, 0.0, 0.0, 0.0, 0
    fi, fj, fk, ka, kb, kc = 0, 1, 2, True, True, True
    for f in range(4):
        i, j, k, o = (0, 1, 2, 3) if f == 0 else (0, 1, 3, 2) if f == 1 else (0, 2, 3, 1) if f == 2 else (1, 2, 3, 0)
        ux, uy, uz = W[j, 0] - W[i, 0], W[j, 1] - W[i, 1], W[j, 2] - W[i, 2]
        vx, vy, vz = W[k, 0] - W[i, 0], W[k, 1] - W[i, 1], W[k, 2] - W[i, 2]
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        side_origin = -(nx * W[i, 0] + ny * W[i, 1] + nz * W[i, 2])
        side_other = nx * (W[o, 0] - W[i, 0]) + ny * (W[o, 1] - W[i, 1]) + nz * (W[o, 2] - W[i, 2])
        if side_other != 0.0 and side_origin * side_other >= 0.0:
            continue   # the origin is on the inner side of this face
        faces += 1
        x, y, z, a, b, c = closest_on_triangle(W, i, j, k)
        d = x * x + y * y + z * z
        if d < best:
            best, bx, by, bz, fi, fj, fk, ka, kb, kc = d, x, y, z, i, j, k, a, b, c
    if faces == 0:
        return 0.0, 0.0, 0.0, 4
    return bx, by, bz, keep(W, fi, fj, fk, ka, kb, kc)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def keep(W, i, j, k, ka, kb, kc):
    """W's corners i < j < k that are kept, moved (in order) to its front; their count."""
    n = 0
    if ka:
        W[n] = W[i]
        n += 1
    if kb:
        W[n] = W[j]
        n += 1
    if kc:
        W[n] = W[k]
        n += 1
    return n


@numba.njit(cache=True, nogil=True, error_model='numpy')
def thicker(code, size, erosion):
    """True when the primitive of ``code`` and sizes ``size`` is thicker than 2 ``erosion``."""
    if code == 3:
        return min(size[0], min(size[1], size[2])) > erosion
    if code == 2:
        return min(size[0], size[1]) > erosion
    return size[0] > erosion


@numba.njit(cache=True, nogil=True, error_model='numpy')
def convex_gap(rot, pos, a, ca, sa, b, cb, sb, erosion, apart, overlap):
    """GJK (Gilbert, Johnson, Keerthi) on the primitives a and b shrunk by ``erosion``: 1 once a
    plane proves them apart by more than ``apart``, -1 once a point of their Minkowski
    difference lies within ``overlap`` of the origin (their distance is below it), else 0
    (undecided within GJK_ITERATIONS)."""
    W = np.empty((4, 3))
    vx, vy, vz = pos[a, 0] - pos[b, 0], pos[a, 1] - pos[b, 1], pos[a, 2] - pos[b, 2]
    if vx * vx + vy * vy + vz * vz == 0.0:
        vx = 1.0
    n = 0
    for _ in range(GJK_ITERATIONS):
        px, py, pz = convex_support(rot, pos, a, ca, sa, erosion, -vx, -vy, -vz)
        qx, qy, qz = convex_support(rot, pos, b, cb, sb, erosion, vx, vy, vz)
        wx, wy, wz = px - qx, py - qy, pz - qz   # the support point of a - b along -v
        vv = vx * vx + vy * vy + vz * vz
        vw = vx * wx + vy * wy + vz * wz
        if vw > 0.0 and vw * vw > apart * apart * vv:   # every point of a - b is beyond the plane
            return 1
        if vv - vw <= 1e-12 * vv:   # no progress: |v| is the distance to rounding
            return -1 if vv < overlap * overlap else 0
        W[n, 0], W[n, 1], W[n, 2] = wx, wy, wz
        vx, vy, vz, n = closest_on_simplex(W, n + 1)
        if n == 4 or vx * vx + vy * vy + vz * vz < overlap * overlap:
            return -1
    return 0


@numba.njit(cache=True, nogil=True, error_model='numpy')
def convex_verdict(rot, pos, a, b, sa, sb):
    """Two primitives (sphere, capsule, cylinder, box): BAND + 1 when GJK proves them apart by
    more than BAND; -BAND - 1 when it proves their shapes shrunk by BAND within BAND of each
    other (each shape holds its shrunk one grown by BAND, so the two share a ball of radius
    BAND / 2: coal finds them in collision); else 0.0 (coal decides)."""
    ca, cb = CODES[a], CODES[b]
    if convex_gap(rot, pos, a, ca, sa, b, cb, sb, 0.0, BAND, 0.0) == 1:
        return BAND + 1.0
    shrink = BAND
    if (thicker(ca, sa, shrink) and thicker(cb, sb, shrink)
            and convex_gap(rot, pos, a, ca, sa, b, cb, sb, shrink, np.inf, BAND) == -1):
        return -BAND - 1.0
    return 0.0

'''
