"""Numba kernels of the Dirichlet posterior's incremental CVB0 fit (``dirichlet.py``).

Opponent moves are ``entry`` indices into a flattened ``(n - 1, num_infosets, 3)`` table, as in
``_limit_kernels.py``.
"""

from __future__ import annotations

import math

import numpy as np

from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.mbbr._limit_kernels import NUM_ACTIONS

# A Dirichlet posterior's classes, packed in two arrays (numba unboxes each argument on every call):
# ints = [classes, assignments, entries, hidden, cursor, and the capacities of the first three],
# then row_start (classes + 1), entry_start (assignments + 1), entries and hidden (classes) at
# their capacities; floats = counts (classes), resp, log weights and scores (assignments).
CURSOR = 4
REFRESH_PER_HAND = 8  # classes with hidden cards revisited after each hand, round robin
_HEADER = 8


@njit(cache=True)
def new_dirichlet_tables(classes, assignments, entries):
    """Empty packed tables with room for at least the given numbers."""
    classes, assignments, entries = max(classes, 16), max(assignments, 16), max(entries, 64)
    ints = np.zeros(_HEADER + 2 * classes + assignments + entries + 2, dtype=np.int64)
    ints[5], ints[6], ints[7] = classes, assignments, entries
    return ints, np.zeros(classes + 3 * assignments)


@njit(cache=True)
def _sections(ints, floats):
    """Every table at its capacity, then the scores scratch."""
    c, r, e = ints[5], ints[6], ints[7]
    s1, s2, s3 = _HEADER + c + 1, _HEADER + c + r + 2, _HEADER + c + r + e + 2  # tables' ends
    row_start, entry_start = ints[_HEADER:s1], ints[s1:s2]
    entries, hidden = ints[s2:s3], ints[s3 : s3 + c]
    f, w = floats, c + 2 * r
    return row_start, entry_start, entries, hidden, f[:c], f[c : c + r], f[c + r : w], f[w:]


@njit(cache=True)
def dirichlet_tables(ints, floats):
    """(row_start, entry_start, entries, hidden, counts, resp, logw), each its filled part."""
    row_start, entry_start, entries, hidden, counts, resp, logw, _ = _sections(ints, floats)
    c, r, e, h = ints[0], ints[1], ints[2], ints[3]
    head = row_start[: c + 1], entry_start[: r + 1], entries[:e], hidden[:h]
    return (*head, counts[:c], resp[:r], logw[:r])


@njit(cache=True)
def tables_with_room(ints, floats, m, moves):
    """``ints``/``floats`` if a class of ``m`` assignments of ``moves`` moves each fits in them,
    else grown tables holding what they do, with room for it."""
    if ints[0] < ints[5] and ints[1] + m <= ints[6] and ints[2] + m * moves <= ints[7]:
        return ints, floats
    grown = new_dirichlet_tables(
        2 * ints[5], max(2 * ints[6], ints[1] + m), max(2 * ints[7], ints[2] + m * moves)
    )
    grown[0][:5] = ints[:5]
    old, new = dirichlet_tables(ints, floats), dirichlet_tables(*grown)
    new[0][:], new[1][:], new[2][:] = old[0], old[1], old[2]
    new[3][:], new[4][:], new[5][:], new[6][:] = old[3], old[4], old[5], old[6]
    return grown


@njit(cache=True)
def dirichlet_observe(ints, floats, o, new, weights, alpha0, expected, scratch, profile, seats):
    """One hand of class ``o``: a step of that class adding one to its count, then steps of up to
    ``REFRESH_PER_HAND`` other classes with hidden cards, round robin from the cursor. ``new``
    (m, L), ``weights`` (m,): the class's entries and the assignments each row stands for if it
    is new (appended first, at count 0 and uniform responsibilities), else empty. Returns
    whether the hand's own step was taken (if not, nothing else changed). ``scratch``: as
    :func:`step_class` takes it."""
    row_start, entry_start, entries, hidden, counts, resp, logw, scores = _sections(ints, floats)
    if new.shape[0] > 0:
        c, r, e, h = ints[0], ints[1], ints[2], ints[3]
        m, moves = new.shape
        counts[c] = 0.0
        for i in range(m):
            entries[e + i * moves : e + (i + 1) * moves] = new[i]
            entry_start[r + 1 + i] = e + moves * (i + 1)
            resp[r + i] = 1.0 / m
            logw[r + i] = math.log(weights[i])
        row_start[c + 1] = r + m
        if m > 1:
            hidden[h] = c
            ints[3] = h + 1
        ints[0], ints[1], ints[2] = c + 1, r + m, e + m * moves
    tables = (counts, resp, logw, row_start, entry_start, entries, scores, scratch)
    if step_class(o, 1.0, alpha0, expected, profile, seats, tables) < 0.0:
        return False
    picked = tries = 0
    cursor, num_hidden = ints[CURSOR], ints[3]
    while picked < REFRESH_PER_HAND and tries < num_hidden:
        c = hidden[cursor]
        cursor = (cursor + 1) % num_hidden
        tries += 1
        if c != o:
            step_class(c, 0.0, alpha0, expected, profile, seats, tables)
            picked += 1
    ints[CURSOR] = cursor
    return True


@njit(cache=True)
def dirichlet_recount(ints, floats, expected):
    """``expected`` recomputed from scratch (the sum the steps keep up to date)."""
    row_start, entry_start, entries, _, counts, resp, _ = dirichlet_tables(ints, floats)
    expected[:] = 0.0
    for o in range(counts.shape[0]):
        for r in range(row_start[o], row_start[o + 1]):
            w = counts[o] * resp[r]
            for e in range(entry_start[r], entry_start[r + 1]):
                expected[entries[e]] += w


@njit(cache=True)
def dirichlet_converge(ints, floats, alpha0, expected, scratch, profile, seats, tolerance, most):
    """Sweeps of steps over every class with hidden cards, at most ``most``, until no entry of
    ``expected`` moved by more than ``tolerance``; returns the sweeps made."""
    row_start, entry_start, entries, hidden, counts, resp, logw, scores = _sections(ints, floats)
    tables = (counts, resp, logw, row_start, entry_start, entries, scores, scratch)
    sweeps = 0
    while ints[3] > 0 and sweeps < most:
        sweeps += 1
        change = 0.0
        for o in hidden[: ints[3]]:
            change = max(change, step_class(o, 0.0, alpha0, expected, profile, seats, tables))
        if change <= tolerance:
            break
    return sweeps


@njit(cache=True, inline="always")
def step_class(o, added, alpha0, expected, profile, seats, tables):
    """A CVB0 step of class o (seen ``counts[o]`` times; assignment r of ``row_start[o]:
    row_start[o + 1]`` makes the moves ``entries[entry_start[r]:entry_start[r + 1]]``, with
    responsibility ``resp[r]``, weight ``exp(logw[r])``): each responsibility becomes the weight
    times its moves' posterior means, one copy of the class's own contribution left out; ``added``
    joins the count, and ``expected`` and the touched rows' means (``profile``, opponent d at
    ``seats[d - 1]``) follow. Returns the largest change of ``expected``, or -1 (nothing changed)
    if not finite. ``tables``: (counts, resp, logw, row_start, entry_start, entries, scores,
    scratch), scratch (4, size of ``expected``) rows 0-1 zero and 2-3 NaN (left so). Inlined, as
    :func:`_mean_row`: a call's reference counts on its arrays cost a small class's step half."""
    counts, resp, logw, row_start, entry_start, entries, scores, scratch = tables
    own, own_row, logs, row_logs = scratch[0], scratch[1], scratch[2], scratch[3]
    first, last = row_start[o], row_start[o + 1]
    old = counts[o]
    new = old + added
    if last - first == 1:  # nothing hidden: the one explanation takes the whole count
        if added != 0.0:
            for e in range(entry_start[first], entry_start[first + 1]):
                expected[entries[e]] += added
                _mean_row(alpha0, expected, profile, seats, entries[e])
        counts[o] = new
        return abs(added)
    if old > 0.0:  # one copy's own contribution, left out of its predictive
        for r in range(first, last):
            for e in range(entry_start[r], entry_start[r + 1]):
                f = entries[e]
                own[f] += resp[r]
                own_row[f - f % NUM_ACTIONS] += resp[r]
    best = -np.inf
    for r in range(first, last):  # each move's and row's log once (assignments share them)
        s = logw[r]
        for e in range(entry_start[r], entry_start[r + 1]):
            f = entries[e]
            b = f - f % NUM_ACTIONS
            if math.isnan(logs[f]):
                logs[f] = math.log(max(alpha0[f] + expected[f] - own[f], alpha0[f]))
            if math.isnan(row_logs[b]):
                total = -own_row[b]
                floor = 0.0
                for a in range(NUM_ACTIONS):
                    total += alpha0[b + a] + expected[b + a]
                    floor += alpha0[b + a]
                row_logs[b] = math.log(max(total, floor))
            s += logs[f]
            s -= row_logs[b]
        scores[r - first] = s
        best = max(best, s)
    for e in range(entry_start[first], entry_start[last]):  # the scratch as it was
        f = entries[e]
        own[f] = own_row[f - f % NUM_ACTIONS] = 0.0
        logs[f] = row_logs[f - f % NUM_ACTIONS] = math.nan
    if not np.isfinite(best):
        return -1.0
    norm = 0.0
    for r in range(first, last):
        scores[r - first] = math.exp(scores[r - first] - best)
        norm += scores[r - first]
    change = 0.0
    for r in range(first, last):
        fresh = scores[r - first] / norm
        delta = new * fresh - old * resp[r]
        resp[r] = fresh
        if delta != 0.0:
            for e in range(entry_start[r], entry_start[r + 1]):
                expected[entries[e]] += delta
            change = max(change, abs(delta))
    for e in range(entry_start[first], entry_start[last]):
        _mean_row(alpha0, expected, profile, seats, entries[e])
    counts[o] = new
    return change


@njit(cache=True, inline="always")
def _mean_row(alpha0, expected, profile, seats, entry):
    """The posterior mean (alpha / its row's sum) of the row of ``entry``, into ``profile``."""
    num_infosets = alpha0.shape[0] // (NUM_ACTIONS * seats.shape[0])
    row = entry // NUM_ACTIONS
    b = row * NUM_ACTIONS
    target = (seats[row // num_infosets] * num_infosets + row % num_infosets) * NUM_ACTIONS
    total = 0.0
    for a in range(NUM_ACTIONS):
        total += alpha0[b + a] + expected[b + a]
    for a in range(NUM_ACTIONS):
        profile[target + a] = (alpha0[b + a] + expected[b + a]) / total
