"""numba source of one configuration's self-collision check, generated per collision model.

The generated module defines ``check(q, mode, poses, index) -> (n_hit, n_todo)``: in one
compiled call, the forward kinematics of the links that carry geometry (the model's generated
FK body, :func:`robokin_ros.kernels.fk_codegen.generate_link_poses_source`), the world pose of
every geometry, and a verdict per checked pair:

* bounding spheres, then (pairs left to coal) bounding capsules and world boxes, as
  :meth:`robokin_ros.collision.CollisionModel.bound_gaps`: a pair whose lower bound of the
  distance exceeds :data:`BOUND_MARGIN` is free;
* pairs of primitives with an exact closed form (:data:`NARROW_KINDS`: sphere, capsule,
  sphere-cylinder, sphere-box, box-box by the separating axes) get their signed separation;
  beyond :data:`DEFER_BAND` either side of touching it is the verdict, within it coal decides;
* a cylinder with a cylinder or a capsule is bracketed first: apart when the capsules around
  the cylinders are apart by more than the band, in collision when the capsules inside them
  (radius ``min(r, h)``, segment half length ``h - min(r, h)``) overlap by more than it;
* what the brackets leave, and a box with a cylinder or a capsule, goes to GJK on the shapes'
  support functions (``convex_verdict``): apart when a separating plane proves a distance above
  the band, in collision when the shapes shrunk by the band come within the band of each other
  (so the shapes share a ball of radius half the band); else (within about the band of
  touching, or :data:`GJK_ITERATIONS` spent) coal decides;
* every other pair whose bounds overlap (anything with a mesh, ...) is tested once more, by
  the separating axes of the shapes' local bounding boxes (coal's, oriented with them): apart
  by more than the band, it is free; else it goes to coal (as every deferred pair): its index
  into ``todo``, deepest bound first.

``check_batch(qb (B, n_q), mode, poses (B, G, 3, 4), index (B, 2, P), counts (B, 2))`` runs it
on each configuration of a batch (``counts[b]``: its ``(n_hit, n_todo)``).

``mode``: :data:`EVERY` pair; :data:`FIRST`: return at the first pair found in collision
(``n_hit = 1``, nothing for coal); :data:`POSES`: every pair, and every geometry's pose
written (else only those of the pairs whose bounding spheres overlap).
A configuration with a non-finite entry, or whose geometry poses are not finite (a mimic
joint's value overflowing), returns ``n_hit = -1`` and decides nothing.

Outputs (few arguments: each costs time in numba's dispatch): ``poses (G, 3, 4)`` world poses
``[R | p]`` of the geometries (coal's transforms), ``index (2, P)`` int64: ``index[0]`` the
state of each pair (:data:`FREE`, :data:`HIT`, :data:`COAL`), ``index[1, :n_todo]`` the pairs
for coal. The geometry data are constants of the module (so the call takes
only its outputs), and the module is named by the hash of its text (see
:func:`robokin_ros.kernels.accel.load_function`).
"""

from __future__ import annotations

import numpy as np

from .convex_source import CONVEX_SOURCE, GJK_ITERATIONS

#: Pair states written by the kernel.
FREE, HIT, COAL = 0, 1, 2
#: Modes of the kernel.
EVERY, FIRST, POSES = 0, 1, 2
#: [m] Bounds closer than this send a pair on (the bounds' rounding; as the batched path).
BOUND_MARGIN = 1e-6
#: [m] A compiled separation within this band of touching is left to coal (covers coal's GJK
#: tolerance, 1e-6, and rounding), so the compiled verdicts equal coal's.
DEFER_BAND = 1e-5

#: Shape codes, by coal class name (anything else: OTHER).
SHAPE_CODES = {"Sphere": 0, "Capsule": 1, "Cylinder": 2, "Box": 3}
OTHER = 4
#: Narrow phases compiled, by the unordered shape codes of a pair -> (kind, code of the first role).
#: Kinds 7 (capsule-cylinder) and 8 (cylinder-cylinder) bracket coal: apart when the
#: circumscribed capsules are, in collision when the inscribed ones are (else coal decides).
NARROW_KINDS = {(0, 0): (1, 0), (0, 1): (2, 0), (1, 1): (3, 1), (0, 2): (4, 0), (0, 3): (5, 0), (3, 3): (6, 3),
                (1, 2): (7, 1), (2, 2): (8, 2), (1, 3): (9, 1), (2, 3): (9, 2)}
#: Kind of the pairs left to coal.
COAL_KIND = 0

_HELPERS = '''
EPS = 1e-18


@numba.njit(cache=True, nogil=True, error_model='numpy')
def clamp01(x):
    return 0.0 if x < 0.0 else 1.0 if x > 1.0 else x


@numba.njit(cache=True, nogil=True, error_model='numpy')
def closest_parameters(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z):
    """Parameters (s, t) in [0, 1] of the closest points p1 + s (q1 - p1), p2 + t (q2 - p2) of
    two segments (Ericson 5.1.9, as geometry.segment_distances)."""
    d1x, d1y, d1z = q1x - p1x, q1y - p1y, q1z - p1z
    d2x, d2y, d2z = q2x - p2x, q2y - p2y, q2z - p2z
    rx, ry, rz = p1x - p2x, p1y - p2y, p1z - p2z
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    b = d1x * d2x + d1y * d2y + d1z * d2z
    c = d1x * rx + d1y * ry + d1z * rz
    f = d2x * rx + d2y * ry + d2z * rz
    if a <= EPS and e <= EPS:
        s, t = 0.0, 0.0
    elif a <= EPS:
        s, t = 0.0, clamp01(f / e)
    elif e <= EPS:
        s, t = clamp01(-c / a), 0.0
    else:
        denom = a * e - b * b
        s = clamp01((b * f - c * e) / denom) if denom > EPS * max(a * e, EPS) else 0.0
        t = (b * s + f) / e
        if t < 0.0:
            s, t = clamp01(-c / a), 0.0
        elif t > 1.0:
            s, t = clamp01((b - c) / a), 1.0
    return s, t


@numba.njit(cache=True, nogil=True, error_model='numpy')
def segment_offset(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z):
    """Closest point of segment [p1, q1] minus closest point of [p2, q2]."""
    s, t = closest_parameters(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z)
    return (p1x + (q1x - p1x) * s - p2x - (q2x - p2x) * t, p1y + (q1y - p1y) * s - p2y - (q2y - p2y) * t,
            p1z + (q1z - p1z) * s - p2z - (q2z - p2z) * t)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def segment_distance(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z):
    """Distance between segments [p1, q1] and [p2, q2]."""
    x, y, z = segment_offset(p1x, p1y, p1z, q1x, q1y, q1z, p2x, p2y, p2z, q2x, q2y, q2z)
    return np.sqrt(x * x + y * y + z * z)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def in_frame(rot, pos, g, x, y, z):
    """World point (x, y, z) in geometry g's frame."""
    dx, dy, dz = x - pos[g, 0], y - pos[g, 1], z - pos[g, 2]
    return (rot[g, 0, 0] * dx + rot[g, 1, 0] * dy + rot[g, 2, 0] * dz,
            rot[g, 0, 1] * dx + rot[g, 1, 1] * dy + rot[g, 2, 1] * dz,
            rot[g, 0, 2] * dx + rot[g, 1, 2] * dy + rot[g, 2, 2] * dz)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def cylinder_distance(rot, pos, g, size, x, y, z):
    """Signed distance of the world point (x, y, z) to the solid cylinder g of sizes (r, h)."""
    x, y, z = in_frame(rot, pos, g, x, y, z)
    dr, dz = np.sqrt(x * x + y * y) - size[0], abs(z) - size[1]
    return np.sqrt(max(dr, 0.0) ** 2 + max(dz, 0.0) ** 2) + min(max(dr, dz), 0.0)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def box_box(rot, a, b, ha, hb, tx, ty, tz):
    """Largest separation of two boxes with the axes of geometries a and b, half extents ha,
    hb, centre of b minus centre of a t, along the 15 separating axes (> 0: apart by at least
    that; < 0: every axis overlaps, they intersect)."""
    best = -np.inf
    for k in range(15):
        if k < 3:
            lx, ly, lz = rot[a, 0, k], rot[a, 1, k], rot[a, 2, k]
        elif k < 6:
            lx, ly, lz = rot[b, 0, k - 3], rot[b, 1, k - 3], rot[b, 2, k - 3]
        else:
            i, j = (k - 6) // 3, (k - 6) % 3
            ux, uy, uz = rot[a, 0, i], rot[a, 1, i], rot[a, 2, i]
            vx, vy, vz = rot[b, 0, j], rot[b, 1, j], rot[b, 2, j]
            lx, ly, lz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
            n = np.sqrt(lx * lx + ly * ly + lz * lz)
            if n < 1e-9:   # parallel edges: the face axes decide
                continue
            lx, ly, lz = lx / n, ly / n, lz / n
        ra = 0.0
        rb = 0.0
        for c in range(3):
            ra += ha[c] * abs(lx * rot[a, 0, c] + ly * rot[a, 1, c] + lz * rot[a, 2, c])
            rb += hb[c] * abs(lx * rot[b, 0, c] + ly * rot[b, 1, c] + lz * rot[b, 2, c])
        best = max(best, abs(lx * tx + ly * ty + lz * tz) - ra - rb)
    return best


@numba.njit(cache=True, nogil=True, error_model='numpy')
def local_boxes_gap(rot, pos, a, b):
    """Separation of the local bounding boxes of a and b (coal's, oriented with them): a lower
    bound of the distance of any shapes, meshes included, when it is positive."""
    ax, ay, az = box_centre(rot, pos, a)
    bx, by, bz = box_centre(rot, pos, b)
    return box_box(rot, a, b, BOX_HALVES[a], BOX_HALVES[b], bx - ax, by - ay, bz - az)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def box_centre(rot, pos, g):
    """World centre of geometry g's local bounding box."""
    x, y, z = BOX_CENTRES[g, 0], BOX_CENTRES[g, 1], BOX_CENTRES[g, 2]
    return (rot[g, 0, 0] * x + rot[g, 0, 1] * y + rot[g, 0, 2] * z + pos[g, 0],
            rot[g, 1, 0] * x + rot[g, 1, 1] * y + rot[g, 1, 2] * z + pos[g, 1],
            rot[g, 2, 0] * x + rot[g, 2, 1] * y + rot[g, 2, 2] * z + pos[g, 2])


@numba.njit(cache=True, nogil=True, error_model='numpy')
def separation(kind, rot, pos, a, b, sa, sb):
    """Signed separation of geometries a (the first role) and b of a compiled narrow phase
    ``kind``, sizes sa, sb: sphere (r), capsule and cylinder (r, half length), box (halves)."""
    if kind <= 3:   # spheres and capsules (a sphere: a capsule of half length 0)
        return capsule_separation(rot, pos, a, sa, False, b, sb, False)
    if kind == 4:   # sphere - cylinder: signed distance of the centre to the solid cylinder
        return cylinder_distance(rot, pos, b, sb, pos[a, 0], pos[a, 1], pos[a, 2]) - sa[0]
    if kind == 5:   # sphere - box: signed distance of the centre to the solid box
        x, y, z = in_frame(rot, pos, b, pos[a, 0], pos[a, 1], pos[a, 2])
        dx, dy, dz = abs(x) - sb[0], abs(y) - sb[1], abs(z) - sb[2]
        outside = np.sqrt(max(dx, 0.0) ** 2 + max(dy, 0.0) ** 2 + max(dz, 0.0) ** 2)
        return outside + min(max(dx, max(dy, dz)), 0.0) - sa[0]
    if kind == 6:
        return box_box(rot, a, b, sa, sb, pos[b, 0] - pos[a, 0], pos[b, 1] - pos[a, 1], pos[b, 2] - pos[a, 2])
    if kind == 9:
        return convex_verdict(rot, pos, a, b, sa, sb)
    return bracket(rot, pos, a, b, sa, sb, kind == 8)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def axis_capsule(rot, pos, g, radius, half, inner):
    """(segment ends, radius) of the capsule around (``inner``: inside) a cylinder, or of a
    capsule itself (``inner`` for a capsule is the capsule)."""
    rho = min(radius, half) if inner else radius
    h = half - rho if inner else half
    return (pos[g, 0] - h * rot[g, 0, 2], pos[g, 1] - h * rot[g, 1, 2], pos[g, 2] - h * rot[g, 2, 2],
            pos[g, 0] + h * rot[g, 0, 2], pos[g, 1] + h * rot[g, 1, 2], pos[g, 2] + h * rot[g, 2, 2], rho)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def capsule_separation(rot, pos, a, sa, inner_a, b, sb, inner_b):
    a0, a1, a2, a3, a4, a5, ra = axis_capsule(rot, pos, a, sa[0], sa[1], inner_a)
    b0, b1, b2, b3, b4, b5, rb = axis_capsule(rot, pos, b, sb[0], sb[1], inner_b)
    return segment_distance(a0, a1, a2, a3, a4, a5, b0, b1, b2, b3, b4, b5) - ra - rb


@numba.njit(cache=True, nogil=True, error_model='numpy')
def support(rot, g, size, cylinder, lx, ly, lz):
    """Half width of a capsule (or ``cylinder``) g of sizes (r, h) along the unit axis l."""
    c = abs(lx * rot[g, 0, 2] + ly * rot[g, 1, 2] + lz * rot[g, 2, 2])
    return size[1] * c + (size[0] * np.sqrt(max(0.0, 1.0 - c * c)) if cylinder else size[0])


@numba.njit(cache=True, nogil=True, error_model='numpy')
def axis_gap(rot, pos, a, b, sa, sb, a_cylinder, lx, ly, lz):
    """Gap between the projections of a and b on the axis l (normalised here; -inf if ~0)."""
    n = np.sqrt(lx * lx + ly * ly + lz * lz)
    if n < 1e-12:
        return -np.inf
    lx, ly, lz = lx / n, ly / n, lz / n
    t = abs(lx * (pos[b, 0] - pos[a, 0]) + ly * (pos[b, 1] - pos[a, 1]) + lz * (pos[b, 2] - pos[a, 2]))
    return t - support(rot, a, sa, a_cylinder, lx, ly, lz) - support(rot, b, sb, True, lx, ly, lz)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def bracket(rot, pos, a, b, sa, sb, a_cylinder):
    """Kinds 7, 8: a (capsule, or cylinder when ``a_cylinder``) and b (a cylinder): a
    separation above BAND when the outer capsules are apart or when one of a few axes separates
    them (a's and b's axes, their cross product, the line between the closest points of the
    axes, the centres' line: each gap is a lower bound of the distance), below -BAND when the
    inner capsules overlap, else 0 (coal decides)."""
    a0, a1, a2, a3, a4, a5, ra = axis_capsule(rot, pos, a, sa[0], sa[1], False)
    b0, b1, b2, b3, b4, b5, rb = axis_capsule(rot, pos, b, sb[0], sb[1], False)
    s, t = closest_parameters(a0, a1, a2, a3, a4, a5, b0, b1, b2, b3, b4, b5)
    px, py, pz = a0 + (a3 - a0) * s, a1 + (a4 - a1) * s, a2 + (a5 - a2) * s   # on a's axis
    qx, qy, qz = b0 + (b3 - b0) * t, b1 + (b4 - b1) * t, b2 + (b5 - b2) * t   # on b's axis
    x, y, z = px - qx, py - qy, pz - qz
    outer = np.sqrt(x * x + y * y + z * z) - ra - rb
    if outer > BAND:
        return outer
    ux, uy, uz = rot[a, 0, 2], rot[a, 1, 2], rot[a, 2, 2]
    vx, vy, vz = rot[b, 0, 2], rot[b, 1, 2], rot[b, 2, 2]
    gap = max(axis_gap(rot, pos, a, b, sa, sb, a_cylinder, ux, uy, uz),
              axis_gap(rot, pos, a, b, sa, sb, a_cylinder, vx, vy, vz))
    cx, cy, cz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    gap = max(gap, axis_gap(rot, pos, a, b, sa, sb, a_cylinder, cx, cy, cz))
    gap = max(gap, axis_gap(rot, pos, a, b, sa, sb, a_cylinder, x, y, z))
    cx, cy, cz = pos[b, 0] - pos[a, 0], pos[b, 1] - pos[a, 1], pos[b, 2] - pos[a, 2]
    gap = max(gap, axis_gap(rot, pos, a, b, sa, sb, a_cylinder, cx, cy, cz))
    if gap > BAND:
        return gap
    inner = capsule_separation(rot, pos, a, sa, a_cylinder, b, sb, True)
    if inner < -BAND:
        return inner
    # points of a inside b: a's axis point closest to b's axis, and it moved towards b by a's radius
    depth = min(cylinder_distance(rot, pos, b, sb, px, py, pz),
                cylinder_distance(rot, pos, b, sb, *towards(rot, a, a_cylinder, px, py, pz, qx, qy, qz, sa[0])))
    # and points of b inside a
    x, y, z = towards(rot, b, True, qx, qy, qz, px, py, pz, sb[0])
    if a_cylinder:
        depth = min(depth, cylinder_distance(rot, pos, a, sa, qx, qy, qz), cylinder_distance(rot, pos, a, sa, x, y, z))
    else:
        depth = min(depth, segment_distance(a0, a1, a2, a3, a4, a5, x, y, z, x, y, z) - sa[0])
    return depth if depth < -BAND else convex_verdict(rot, pos, a, b, sa, sb)


@numba.njit(cache=True, nogil=True, error_model='numpy')
def towards(rot, g, cylinder, px, py, pz, qx, qy, qz, radius):
    """The point ``p`` of g's axis moved by ``radius`` towards ``q`` (across the axis for a
    ``cylinder``, so that it stays in its disc): still in g."""
    wx, wy, wz = qx - px, qy - py, qz - pz
    if cylinder:
        c = wx * rot[g, 0, 2] + wy * rot[g, 1, 2] + wz * rot[g, 2, 2]
        wx, wy, wz = wx - c * rot[g, 0, 2], wy - c * rot[g, 1, 2], wz - c * rot[g, 2, 2]
    n = np.sqrt(wx * wx + wy * wy + wz * wz)
    if n < 1e-12:
        return px, py, pz
    f = radius / n
    return px + f * wx, py + f * wy, pz + f * wz


@numba.njit(cache=True, nogil=True, error_model='numpy')
def capsule_end(rot, pos, g, end):
    """World position of end ``end`` of geometry g's bounding capsule segment."""
    x, y, z = CAPSULE_ENDS[g, end, 0], CAPSULE_ENDS[g, end, 1], CAPSULE_ENDS[g, end, 2]
    return (rot[g, 0, 0] * x + rot[g, 0, 1] * y + rot[g, 0, 2] * z + pos[g, 0],
            rot[g, 1, 0] * x + rot[g, 1, 1] * y + rot[g, 1, 2] * z + pos[g, 1],
            rot[g, 2, 0] * x + rot[g, 2, 1] * y + rot[g, 2, 2] * z + pos[g, 2])


@numba.njit(cache=True, nogil=True, error_model='numpy')
def bound_gap(rot, pos, a, b, gap):
    """The batched path's bound of a pair left to coal: the bounding spheres' gap ``gap``, and
    where it is small, the largest of it, the capsules' and the world boxes' gaps."""
    if gap > MARGIN:
        return gap
    ax, ay, az = capsule_end(rot, pos, a, 0)
    bx, by, bz = capsule_end(rot, pos, a, 1)
    cx, cy, cz = capsule_end(rot, pos, b, 0)
    dx, dy, dz = capsule_end(rot, pos, b, 1)
    capsules = segment_distance(ax, ay, az, bx, by, bz, cx, cy, cz, dx, dy, dz) - CAPSULE_RADII[a] - CAPSULE_RADII[b]
    boxes = -np.inf
    for r in range(3):
        ca, cb = pos[a, r], pos[b, r]
        ha, hb = 0.0, 0.0
        for c in range(3):
            ca += rot[a, r, c] * BOX_CENTRES[a, c]
            cb += rot[b, r, c] * BOX_CENTRES[b, c]
            ha += abs(rot[a, r, c]) * BOX_HALVES[a, c]
            hb += abs(rot[b, r, c]) * BOX_HALVES[b, c]
        boxes = max(boxes, abs(ca - cb) - ha - hb)
    return max(gap, max(capsules, boxes))


@numba.njit(cache=True, nogil=True, error_model='numpy')
def place(lp, rot, pos, g):
    """World pose of geometry g from the link poses lp (rows [R | p] of 3 x 4 per link)."""
    o = 12 * GEOMETRY_SLOTS[g]
    for r in range(3):
        l0, l1, l2, lt = lp[o + 4 * r], lp[o + 4 * r + 1], lp[o + 4 * r + 2], lp[o + 4 * r + 3]
        for c in range(3):
            rot[g, r, c] = l0 * PLACEMENTS[g, 0, c] + l1 * PLACEMENTS[g, 1, c] + l2 * PLACEMENTS[g, 2, c]
        pos[g, r] = l0 * PLACEMENTS[g, 0, 3] + l1 * PLACEMENTS[g, 1, 3] + l2 * PLACEMENTS[g, 2, 3] + lt


@numba.njit(cache=True, nogil=True, error_model='numpy')
def check(q, mode, poses, index):
    if q.shape[0] != N_Q or poses.shape[0] != N_GEOMETRIES or index.shape[1] != N_PAIRS:
        raise ValueError('check: bad shapes')
    rot, pos, state, todo = poses[:, :, :3], poses[:, :, 3], index[0], index[1]
    total = 0.0
    for i in range(N_Q):
        total += q[i]
    if not np.isfinite(total):
        return -1, 0
    lp = np.empty(N_LINK_VALUES)
    link_poses(q, lp)
    centres = np.empty((N_GEOMETRIES, 3))   # of the bounding spheres, from the link poses
    for g in range(N_GEOMETRIES):
        o = 12 * GEOMETRY_SLOTS[g]
        for r in range(3):
            centres[g, r] = (lp[o + 4 * r] * SPHERE_IN_LINK[g, 0] + lp[o + 4 * r + 1] * SPHERE_IN_LINK[g, 1]
                             + lp[o + 4 * r + 2] * SPHERE_IN_LINK[g, 2] + lp[o + 4 * r + 3])
            total += centres[g, r]
    if not np.isfinite(total):
        return -1, 0
    placed = np.zeros(N_GEOMETRIES, np.bool_)   # geometry poses computed when a pair needs them
    if mode == 2:
        for g in range(N_GEOMETRIES):
            place(lp, rot, pos, g)
            placed[g] = True
    keys = np.empty(N_PAIRS)
    n_hit = 0
    n_todo = 0
    for j in range(N_PAIRS):
        k = ORDER[j]
        a, b = PAIRS[k, 0], PAIRS[k, 1]
        dx, dy, dz = centres[a, 0] - centres[b, 0], centres[a, 1] - centres[b, 1], centres[a, 2] - centres[b, 2]
        d2 = dx * dx + dy * dy + dz * dz
        state[k] = 0
        if d2 > REACH2[k]:   # the bounding spheres are apart by more than MARGIN
            continue
        gap = np.sqrt(d2) - SPHERE_RADII[a] - SPHERE_RADII[b]
        if not placed[a]:
            place(lp, rot, pos, a)
            placed[a] = True
        if not placed[b]:
            place(lp, rot, pos, b)
            placed[b] = True
        kind = KINDS[k]
        if kind == 0:
            key = bound_gap(rot, pos, a, b, gap)
            if key > MARGIN or local_boxes_gap(rot, pos, a, b) > BAND:
                continue
        else:
            g1, g2 = (b, a) if SWAPPED[k] else (a, b)
            key = separation(kind, rot, pos, g1, g2, SIZES[g1], SIZES[g2])
            if key > BAND:
                continue
            if key < -BAND:
                state[k] = 1
                n_hit += 1
                if mode == 1:   # the pairs after k are not looked at
                    return n_hit, 0
                continue
        state[k] = 2
        i = n_todo   # insertion by key: the deepest overlap first
        while i > 0 and keys[i - 1] > key:
            keys[i] = keys[i - 1]
            todo[i] = todo[i - 1]
            i -= 1
        keys[i] = key
        todo[i] = k
        n_todo += 1
    return n_hit, n_todo


@numba.njit(cache=True, nogil=True, error_model='numpy')
def check_batch(qb, mode, poses, index, counts):
    for b in range(qb.shape[0]):
        counts[b, 0], counts[b, 1] = check(qb[b], mode, poses[b], index[b])
'''


def _array(name: str, values: np.ndarray, dtype: str) -> str:
    """A module-level constant array (exact float reprs)."""
    flat = ", ".join(repr(float(x)) if dtype == "np.float64" else str(int(x)) for x in values.reshape(-1))
    return f"{name} = np.array([{flat}], dtype={dtype}).reshape({values.shape!r})"


def pair_kinds(codes: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair ``(P, 2)`` of geometries with shape ``codes``: the narrow-phase kind (0: coal)
    and whether the second geometry takes the first role (``(P,)`` int64, bool)."""
    kinds, swapped = np.zeros(len(pairs), np.int64), np.zeros(len(pairs), bool)
    for k, (a, b) in enumerate(pairs.tolist()):
        ca, cb = int(codes[a]), int(codes[b])
        kind, first = NARROW_KINDS.get((min(ca, cb), max(ca, cb)), (COAL_KIND, None))
        kinds[k], swapped[k] = kind, kind != COAL_KIND and ca != first
    return kinds, swapped


def check_source(fk_body, fk_values, n_q: int, data: dict) -> str:
    """The module text (see the module docstring).

    Args:
        fk_body, fk_values: a generated ``"3x4"`` link-poses kernel's body lines and values
            (the links carrying geometry, in the order ``GEOMETRY_SLOTS`` refers to).
        n_q: configuration size.
        data: the geometry constants: ``GEOMETRY_SLOTS (G,)`` (row of each geometry's link in
            the FK output), ``PLACEMENTS (G, 3, 4)``, ``SIZES (G, 3)``, ``SPHERE_CENTRES (G, 3)``,
            ``SPHERE_RADII (G,)``, ``CAPSULE_ENDS (G, 2, 3)``, ``CAPSULE_RADII (G,)``,
            ``BOX_CENTRES (G, 3)``, ``BOX_HALVES (G, 3)``, ``PAIRS (P, 2)``, ``KINDS (P,)``,
            ``SWAPPED (P,)`` (see :func:`pair_kinds`), ``REACH2 (P,)`` (the squared sum of the
            pair's bounding sphere radii and :data:`BOUND_MARGIN`), ``SPHERE_IN_LINK (G, 3)``
            (the bounding spheres' centres in their link frames), ``ORDER (P,)`` (the order the
            pairs are visited in: the verdicts do not depend on it, how soon :data:`FIRST` finds
            a collision does).
    """
    lines = ["# generated by robokin_ros.collision; safe to delete (rebuilt on demand)",
             "from math import cos, inf, nan, sin",
             "import numba",
             "import numpy as np",
             "",
             f"N_Q = {n_q}",
             f"N_LINK_VALUES = {len(fk_values)}",
             f"N_GEOMETRIES = {len(data['SIZES'])}",
             f"N_PAIRS = {len(data['PAIRS'])}",
             f"MARGIN = {BOUND_MARGIN!r}",
             f"BAND = {DEFER_BAND!r}",
             f"GJK_ITERATIONS = {GJK_ITERATIONS}"]
    for name, values in data.items():
        integer = values.dtype.kind in "iub"
        lines.append(_array(name, np.asarray(values), "np.int64" if integer else "np.float64"))
    lines += ["", "", "@numba.njit(cache=True, nogil=True, error_model='numpy')", "def link_poses(q, o):"]
    lines += list(fk_body)
    lines += [f"    o[{k}] = {x!r}" if isinstance(x, float) else f"    o[{k}] = {x}" for k, x in enumerate(fk_values)]
    return "\n".join(lines) + "\n" + _HELPERS + CONVEX_SOURCE
