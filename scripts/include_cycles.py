#!/usr/bin/env python3
"""Cycles in the include graph between rooms (folders) of the tree.

A unit is a header with the source file of the same name beside it
(runtime/exec/plan.h + plan.c); unit A depends on unit B when A's header or
source includes B's header. A cycle of units whose files lie in more than
one room ties those rooms together (docs/ARCHITECTURE.md: no cycles between
rooms); cycles inside one room are that room's business. The room graph
itself (room A uses some header of room B) is printed with --rooms.

With --link BUILD the units are the compiled sources of BUILD and a source
depends on those defining the functions it calls (nm): the implementers of
a header a whole room shares (runtime/kernels/kernel.h) count too. ctest runs
both forms (architecture.include_cycles, architecture.link_cycles).

Some room edges are wrong even where they close no cycle (RULES below). The
executor's rooms are layered, each using only those below it:
  runtime/comm (the communicator and channel interfaces: headers, no code)
  <- runtime/kernels (the kernel contract, kernel.h, and every opcode's kernel)
  <- runtime/fusion, runtime/custom_calls (neither uses the other)
  <- runtime/exec (plans, the walk, the dispatch table over all kernels).
The kernels reach the executor only through the kernel contract's service
table, so they include no header of runtime/exec and call none of its
functions; the communicator's backends (collectives/, channels/) stand on
runtime/comm, not on the executor or its kernels; the thread pool
(runtime/threads) stands on runtime/base alone. Either graph fails on such
an edge. runtime/CMakeLists.txt builds one library per room in this order.

Usage: scripts/include_cycles.py [--rooms] [--link BUILD] [DIR...]
  (default: runtime runner launcher collectives channels api). Exit status 1 when
  a cycle between rooms exists or a rule is broken; each is printed with the
  include lines (or calls) between rooms that close it or break it.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# room -> (rooms it must not use, rooms it may use only); docs/ARCHITECTURE.md,
# "Kernels and the executor".
EXEC_ROOMS = {"runtime/exec", "runtime/fusion", "runtime/custom_calls", "runtime/kernels"}
RULES = {
    "runtime/comm": (set(), {"runtime/base", "runtime/ir"}),
    "runtime/kernels": ({"runtime/exec", "runtime/fusion", "runtime/custom_calls"}, None),
    "runtime/fusion": ({"runtime/exec", "runtime/custom_calls"}, None),
    "runtime/custom_calls": ({"runtime/exec", "runtime/fusion"}, None),
    "collectives": (EXEC_ROOMS, None),
    "channels": (EXEC_ROOMS, None),
    "runtime/threads": (set(), {"runtime/base"}),
}
# Rules of the link graph alone: the debugging hooks implement the
# executor's observer interface (they include runtime/exec/observer.h, a
# header without code) but call nothing of the executor or what it runs, so
# hl_debug does not link them.
LINK_RULES = {
    "runtime/debug": (EXEC_ROOMS, None),
}


def scan(root, dirs):
    units = {}  # unit (path without extension) -> list of (file, included header)
    for d in dirs:
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in files:
                if not f.endswith((".c", ".h", ".inc")):
                    continue
                path = os.path.relpath(os.path.join(base, f), root)
                unit = os.path.splitext(path)[0]
                with open(os.path.join(root, path), errors="replace") as fh:
                    incs = INCLUDE.findall(fh.read())
                units.setdefault(unit, []).extend((path, i) for i in incs)
    return units


def room(unit):
    parts = unit.split("/")
    return "/".join(parts[:2]) if parts[0] == "runtime" and len(parts) > 2 else parts[0]


def broken_rules(graph, why, rules):
    """The edges between rooms that `rules` forbid."""
    out = []
    for u in sorted(graph):
        rule = rules.get(room(u))
        if not rule:
            continue
        banned, only = rule
        for t in sorted(graph[u]):
            r = room(t)
            if r == room(u):
                continue
            if r in banned or (only is not None and r not in only):
                out.append("%s (%s must not use %s)" % (why[(u, t)], room(u), r))
    return out


def sccs(graph):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out


def link_graph(root, build, dirs):
    """Unit graph from the symbols the compiled objects define and use (nm):
    a source depends on the sources defining the functions it calls, so the
    implementers of a header shared by a room (kernel.h) count too. Objects
    whose source is gone (moved or deleted since they were built) are left
    out, and of several objects of one source (a source that moved to
    another library leaves its old object behind) the newest counts; nm
    reads the objects in batches (one process per object took seconds)."""
    newest = {}  # unit -> (mtime, object path)
    for base, _, files in os.walk(build):
        for f in files:
            if not f.endswith(".c.o") or ".dir" not in base:
                continue
            cm = base.split(os.sep + "CMakeFiles" + os.sep)[0]
            rest = base.split(".dir", 1)[1].lstrip(os.sep)
            src = os.path.normpath(os.path.join(os.path.relpath(cm, build), rest, f[:-2]))
            if not any(src.startswith(d + "/") for d in dirs):
                continue
            if not os.path.exists(os.path.join(root, src)):
                continue  # stale: its source moved or was deleted
            obj = os.path.join(base, f)
            unit = os.path.splitext(src)[0]
            mtime = os.path.getmtime(obj)
            if unit not in newest or mtime > newest[unit][0]:
                newest[unit] = (mtime, obj)
    objects = {obj: unit for unit, (_, obj) in newest.items()}  # object path -> unit
    if not objects:
        sys.exit("include_cycles.py: no compiled objects of %s under %s (build it first)"
                 % (" ".join(dirs), build))
    defs, uses = {}, {}
    paths = sorted(objects)
    for i in range(0, len(paths), 256):
        out = subprocess.run(["nm", "-A", "-P"] + paths[i:i + 256], capture_output=True,
                             text=True, check=True).stdout
        for line in out.splitlines():
            obj, _, rest = line.partition(": ")
            parts = rest.split()
            if obj not in objects or len(parts) < 2:
                continue
            unit = objects[obj]
            if parts[1] in "TDBR":
                defs.setdefault(parts[0], unit)
            elif parts[1] == "U":
                uses.setdefault(unit, set()).add(parts[0])
    if not defs:
        sys.exit("include_cycles.py: no symbols in the objects under %s (LTO objects?)" % build)
    graph, why = {}, {}
    for u, syms in uses.items():
        graph.setdefault(u, set())
        for sym in sorted(syms):
            t = defs.get(sym)
            if t and t != u:
                graph[u].add(t)
                why.setdefault((u, t), "%s calls %s (%s)" % (u + ".c", sym, t + ".c"))
    for t in defs.values():
        graph.setdefault(t, set())
    return graph, why


def main(argv):
    show_rooms = "--rooms" in argv
    build = None
    if "--link" in argv:
        i = argv.index("--link")
        build = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    dirs = [a.rstrip("/") for a in argv if not a.startswith("--")] or \
        ["runtime", "runner", "launcher", "collectives", "channels", "api"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if build:
        graph, why = link_graph(root, os.path.abspath(build), dirs)
    else:
        units = scan(root, dirs)
        graph, why = {u: set() for u in units}, {}
        for u, incs in units.items():
            for path, inc in incs:
                target = os.path.splitext(inc)[0]
                if target in units and target != u:
                    graph[u].add(target)
                    why.setdefault((u, target), path + ' includes "' + inc + '"')
    bad = 0
    for comp in sccs(graph):
        rooms = sorted({room(u) for u in comp})
        if len(comp) < 2 or len(rooms) < 2:
            continue
        bad += 1
        members = set(comp)
        print("cycle between %s (%d units):" % (", ".join(rooms), len(comp)))
        for u in sorted(comp):
            for t in sorted(graph[u] & members):
                if room(u) != room(t):
                    print("  %s" % why[(u, t)])
    broken = broken_rules(graph, why, dict(RULES, **LINK_RULES) if build else RULES)
    if broken:
        bad += 1
        print("room rules broken:")
        for line in broken:
            print("  %s" % line)
    if show_rooms:
        edges = {}
        for (u, t), line in why.items():
            if room(u) != room(t):
                edges.setdefault((room(u), room(t)), []).append(line)
        for (a, b), lines in sorted(edges.items()):
            print("%s -> %s (%d)" % (a, b, len(lines)))
    if not bad:
        print("no cycle between rooms, room rules kept (%s)" % (
            "calls between compiled sources" if build else "units: header + source of one name"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
