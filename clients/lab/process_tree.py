"""The processes under a server and the memory and CPU time they take, from Linux's /proc.

A server's model workers are forked by multiprocessing's fork server, its child; ``serve --ray``
runs many processes (GCS, raylet, dashboard and agents, Serve's controller and proxy, the
replicas), each mapping the same interpreter and libraries. Summing their RSS counts every shared
page once per process that maps it; PSS charges a shared page to its processes in equal parts, so
the sum of PSS is what the tree takes from the machine (USS, the private pages only, is its lower
bound).
"""

from __future__ import annotations

import contextlib
import os


def descendants(pid: int) -> list[int]:
    """The live processes under ``pid`` (a server's model workers, forked by multiprocessing's
    fork server, its child), from Linux's /proc."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{task}/children", encoding="ascii") as children:
                    todo.extend(int(child) for child in children.read().split())
        except OSError:  # it (or a thread of it) exited meanwhile
            if parent == pid:
                raise
            continue
        if parent != pid:
            found.append(parent)
    return found


FIELDS = {"Rss": "rss_mb", "Pss": "pss_mb", "Private_Clean": "uss_mb", "Private_Dirty": "uss_mb"}


def tree_memory(pid: int) -> dict[str, float]:
    """Summed RSS, PSS and USS (MB) of ``pid`` and every process under it, and their count."""
    totals = dict.fromkeys(FIELDS.values(), 0.0)
    processes = 0
    for member in (pid, *descendants(pid)):
        with contextlib.suppress(OSError):  # exited meanwhile
            with open(f"/proc/{member}/smaps_rollup", encoding="ascii") as rollup:
                for line in rollup:
                    name, _, rest = line.partition(":")
                    if name in FIELDS:
                        totals[FIELDS[name]] += int(rest.split()[0]) / 1024  # kB
            processes += 1
    return {"processes": processes, **{k: round(v, 1) for k, v in totals.items()}}


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and of every live process under it (a server and its workers)."""
    cpu = process_cpu(pid)
    for child in descendants(pid):
        with contextlib.suppress(OSError):  # exited meanwhile
            cpu += process_cpu(child)
    return cpu
