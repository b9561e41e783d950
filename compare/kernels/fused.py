"""Private jitted kernels: every metric of one tensor pair in (at most) two passes.

Inputs are two 1-D C-contiguous arrays ``x`` (left, "my output") and ``y`` (right, "ground
truth") of float32 or float64, in any combination; numba compiles one specialisation per
combination on first use (and caches it on disk). Every element is widened to float64 on load
and every accumulation is float64. The kernels never raise and never allocate: they return
tuples of floats/bools which :func:`compare.kernels.compare_arrays` turns into metric values and
edge-case notes. Do not call them directly; the public wrapper checks and prepares the arrays.

NaN semantics follow numpy's (what the reference tool uses): a NaN anywhere reaching a sum or a
max makes that result NaN. The running maxima therefore use ``v > m or v != v`` so that a NaN,
once taken, sticks (``nan > m`` and ``m > nan`` are both False).
"""

from __future__ import annotations

import math

import numpy as np

from . import EPS32, EPS64
from ._jit import jit

# Indices of the tuple returned by _pass1 (kept here, next to the kernel that fills it).
P1_SXY = 0  # sum x*y
P1_SXX = 1  # sum x*x
P1_SYY = 2  # sum y*y
P1_MAXABS = 3  # max |x-y|            (0 for n == 0)
P1_SABS = 4  # sum |x-y|
P1_SSQ = 5  # sum (x-y)^2
P1_SREL = 6  # sum r_i               (r_i = |x_i/y_i - 1| if |y_i| > EPS64 else 0)
P1_MAXREL = 7  # max r_i             (0 for n == 0)
P1_MINX = 8
P1_MAXX = 9
P1_MINY = 10
P1_MAXY = 11
P1_SUMX = 12
P1_SUMY = 13
P1_FINITEX = 14  # 1.0 if every x is finite, else 0.0
P1_FINITEY = 15


@jit
def _pass1(x, y, do_rel):  # pragma: no cover - exercised through compare_arrays (JIT or not)
    """One pass over x and y: the sums, maxima and minima behind every metric but KL and std.

    ``do_rel`` (bool) enables the relative-error terms (one division per element); when False,
    the P1_SREL / P1_MAXREL slots are 0.
    """
    n = x.shape[0]
    sxy = 0.0
    sxx = 0.0
    syy = 0.0
    maxabs = 0.0
    sabs = 0.0
    ssq = 0.0
    srel = 0.0
    maxrel = 0.0
    minx = np.inf
    maxx = -np.inf
    miny = np.inf
    maxy = -np.inf
    sumx = 0.0
    sumy = 0.0
    finx = True
    finy = True
    for i in range(n):
        xi = np.float64(x[i])
        yi = np.float64(y[i])
        sxy += xi * yi
        sxx += xi * xi
        syy += yi * yi
        sumx += xi
        sumy += yi
        d = xi - yi
        ad = abs(d)
        sabs += ad
        ssq += d * d
        if ad > maxabs or ad != ad:
            maxabs = ad
        if do_rel and abs(yi) > EPS64:
            r = abs(xi / yi - 1.0)
            srel += r
            if r > maxrel or r != r:
                maxrel = r
        if xi < minx or xi != xi:
            minx = xi
        if xi > maxx or xi != xi:
            maxx = xi
        if yi < miny or yi != yi:
            miny = yi
        if yi > maxy or yi != yi:
            maxy = yi
        # x - x is 0 for finite x, NaN for NaN and +-inf.
        finx = finx and (xi - xi == 0.0)
        finy = finy and (yi - yi == 0.0)
    return (
        sxy,
        sxx,
        syy,
        maxabs,
        sabs,
        ssq,
        srel,
        maxrel,
        minx,
        maxx,
        miny,
        maxy,
        sumx,
        sumy,
        1.0 if finx else 0.0,
        1.0 if finy else 0.0,
    )


@jit
def _pass2(
    x, y, minx, maxx, miny, maxy, meanx, meany, do_kl, do_stdx, do_stdy
):  # pragma: no cover - exercised through compare_arrays (JIT or not)
    """Second pass: KL-divergence terms and centred sums for the standard deviations.

    KL (only meaningful when both sides are all-finite; the wrapper returns NaN otherwise):
    ``p_i = (x_i - minx) / (maxx - minx)`` if the range is non-zero else ``x_i``, then
    ``p_i = max(p_i, EPS32)``; likewise ``q_i`` from y. Returns ``A = sum p*log(p/q)``,
    ``Sp = sum p`` and ``Sq = sum q``; then ``KL = A/Sp + log(Sq/Sp)``, which equals
    ``sum P*log(P/Q)`` with ``P = p/Sp`` and ``Q = q/Sq``.

    Std (two-pass with the usual correction): ``sum (x-meanx)`` and ``sum (x-meanx)^2``;
    likewise for y.

    Returns ``(A, Sp, Sq, sdx, sdx2, sdy, sdy2)``.
    """
    n = x.shape[0]
    rngx = maxx - minx
    rngy = maxy - miny
    normx = rngx != 0.0
    normy = rngy != 0.0
    a = 0.0
    sp = 0.0
    sq = 0.0
    sdx = 0.0
    sdx2 = 0.0
    sdy = 0.0
    sdy2 = 0.0
    for i in range(n):
        xi = np.float64(x[i])
        yi = np.float64(y[i])
        if do_kl:
            p = (xi - minx) / rngx if normx else xi
            q = (yi - miny) / rngy if normy else yi
            if p < EPS32:  # NaN stays NaN, as np.maximum would keep it
                p = EPS32
            if q < EPS32:
                q = EPS32
            sp += p
            sq += q
            a += p * math.log(p / q)
        if do_stdx:
            dx = xi - meanx
            sdx += dx
            sdx2 += dx * dx
        if do_stdy:
            dy = yi - meany
            sdy += dy
            sdy2 += dy * dy
    return a, sp, sq, sdx, sdx2, sdy, sdy2
