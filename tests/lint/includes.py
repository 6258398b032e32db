#!/usr/bin/env python3
"""Include-structure lint (ctest `include-structure`).

usage: tests/lint/includes.py [ROOT] [--exceptions FILE] [-v]
       tests/lint/includes.py --self-test
(-v also prints the known cycles it accepted.)

Scans every `#include "..."` line of the *.h, *.hpp, *.cpp and *.inc files
under compiler/, targets/, frontends/, runtime-c/, tools/ and python/ (those
that exist) of ROOT (default: the repository this script is in). A quoted
path is resolved as the preprocessor does: relative to the including file's
folder first, then to ROOT (the convention here: #include
"compiler/ir/Graph.h"), then to any folder named `include` under those trees
(public headers, e.g. compiler/driver/include for "mlcc/Compiler.h"). Paths
that resolve to no file (generated headers such as OpFamilies.inc) are left
out.

It fails (exit status 1, one line per problem) when
  (a) a file under compiler/, targets/ or frontends/ includes a file under
      tools/ (the libraries must not depend on the programs);
  (b) the files' include graph has a cycle: `include cycle: a.h -> b.h -> a.h`;
  (c) the modules' graph has a cycle, where a module is a path without its
      extension (X.h, X.cpp and X.inc are module X) and module X depends on Y
      when a file of X includes a file of Y: `module cycle: X -> Y -> X`
      (X.cpp includes Y.h and Y.cpp includes X.h), of any length.
Every elementary cycle is printed, rotated to start at its smallest name.

Known module cycles are listed in tests/lint/include-exceptions.txt (or
--exceptions FILE), one cycle per line as the script prints it (without the
`module cycle: ` prefix), a reason after `#`. Those are accepted; a listed
cycle that no longer occurs is a problem too, so that the list stays honest.

--self-test builds a small tree in a temporary folder (a file cycle, a
module cycle, a tools/ include, an exception and a stale one) and checks
that each is reported.
"""

import os
import re
import sys
import tempfile

SCAN_DIRS = ["compiler", "targets", "frontends", "runtime-c", "tools", "python"]
LIBRARY_DIRS = ("compiler/", "targets/", "frontends/")
EXTENSIONS = (".h", ".hpp", ".cpp", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
MAX_CYCLES_PER_COMPONENT = 500
MAX_STEPS_PER_COMPONENT = 1000000


def scan(root):
    """Returns (files, includes): the scanned files (paths relative to root,
    with '/') and, for each, a list of (line number, included path)."""
    files = []
    for top in SCAN_DIRS:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for folder, dirs, names in os.walk(base):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(EXTENSIONS):
                    path = os.path.relpath(os.path.join(folder, name), root)
                    files.append(path.replace(os.sep, "/"))
    include_dirs = sorted({
        f.split("/include/")[0] + "/include" for f in files if "/include/" in f})
    includes = {}
    for f in files:
        found = []
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve(root, f, m.group(1), include_dirs)
                found.append((number, m.group(1), target))
        includes[f] = found
    return files, includes


def resolve(root, including, spelled, include_dirs):
    candidates = [os.path.join(os.path.dirname(including), spelled), spelled]
    candidates += [os.path.join(d, spelled) for d in include_dirs]
    for c in candidates:
        c = os.path.normpath(c).replace(os.sep, "/")
        if c.startswith("../"):
            continue
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def module_of(path):
    return os.path.splitext(path)[0]


def strongly_connected(graph):
    """Tarjan's algorithm, iterative; components of more than one node or
    with a self-loop, each sorted."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    component.append(n)
                    if n == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    result.append(sorted(component))
    return result


def cycles(graph):
    """Every elementary cycle of graph (a dict node -> set of nodes), each a
    list of nodes starting at its smallest, at most MAX_CYCLES_PER_COMPONENT
    per strongly connected component and MAX_STEPS_PER_COMPONENT steps of
    search (then a note instead of the rest)."""
    found, notes = [], []
    for component in strongly_connected(graph):
        members = set(component)
        count = steps = 0
        # Cycles through each node s that stay among the nodes after s.
        for i, s in enumerate(component):
            allowed = set(component[i:])
            path = [s]
            stack = [iter(sorted(n for n in graph.get(s, ()) if n in allowed))]
            on_path = {s}
            while stack and count < MAX_CYCLES_PER_COMPONENT and steps < MAX_STEPS_PER_COMPONENT:
                steps += 1
                nxt = next(stack[-1], None)
                if nxt is None:
                    stack.pop()
                    on_path.discard(path.pop())
                    continue
                if nxt == s:
                    found.append(list(path))
                    count += 1
                elif nxt not in on_path:
                    path.append(nxt)
                    on_path.add(nxt)
                    stack.append(iter(sorted(n for n in graph.get(nxt, ()) if n in allowed)))
        if count >= MAX_CYCLES_PER_COMPONENT or steps >= MAX_STEPS_PER_COMPONENT:
            notes.append("too many cycles to list (%d listed) among: %s" % (
                count, " ".join(sorted(members))))
    return found, notes


def show(cycle):
    return " -> ".join(cycle + [cycle[0]])


def read_exceptions(path):
    """The known cycles: {normalized cycle text: line number}."""
    known = {}
    if path is None or not os.path.isfile(path):
        return known
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            text = line.split("#", 1)[0].strip()
            if text.startswith("module cycle:"):
                text = text[len("module cycle:"):].strip()
            if text:
                known[" -> ".join(p.strip() for p in text.split("->"))] = number
    return known


def check(root, exceptions_path, accepted_lines=None):
    """The problems of the tree at root, one line each, and a summary; the
    known cycles it accepted appended to accepted_lines when given."""
    files, includes = scan(root)
    problems = []
    file_graph = {f: set() for f in files}
    module_graph = {}
    edges = 0
    for f in files:
        module_graph.setdefault(module_of(f), set())
        for number, spelled, target in includes[f]:
            if target is None:
                # Unresolved (generated, or gone): only a spelled tools/ path
                # of a library counts.
                if f.startswith(LIBRARY_DIRS) and spelled.startswith("tools/"):
                    problems.append("tools include: %s:%d includes %s (not found; a library "
                                    "must not depend on tools/)" % (f, number, spelled))
                continue
            edges += 1
            file_graph[f].add(target)
            if f.startswith(LIBRARY_DIRS) and target.startswith("tools/"):
                problems.append("tools include: %s:%d includes %s (a library must not depend "
                                "on tools/)" % (f, number, target))
            if module_of(target) != module_of(f):
                module_graph[module_of(f)].add(module_of(target))

    file_cycles, notes = cycles(file_graph)
    for c in file_cycles:
        problems.append("include cycle: " + show(c))
    module_cycles, module_notes = cycles(module_graph)
    notes += module_notes
    problems += ["cycle problem: " + n for n in notes]

    known = read_exceptions(exceptions_path)
    accepted = 0
    seen = set()
    for c in module_cycles:
        text = show(c)
        seen.add(text)
        if text in known:
            accepted += 1
            if accepted_lines is not None:
                accepted_lines.append("known module cycle (accepted): " + text)
        else:
            problems.append("module cycle: " + text)
    where = os.path.relpath(exceptions_path, root) if exceptions_path else "exceptions"
    for text, number in sorted(known.items(), key=lambda kv: kv[1]):
        if text not in seen:
            problems.append("stale exception: %s:%d: %s no longer occurs (remove the line)"
                            % (where, number, text))
    summary = ("include-structure: %d files, %d resolved includes, %d module cycle(s) "
               "accepted as known, %d problem(s)" % (len(files), edges, accepted, len(problems)))
    return problems, summary


def self_test():
    def write(root, path, text):
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as fh:
            fh.write(text)

    failures = []
    with tempfile.TemporaryDirectory(prefix="mlcc-include-lint-") as root:
        # A file cycle (the second include relative to the including folder).
        write(root, "compiler/a/A.h", '#pragma once\n#include "compiler/a/B.h"\n')
        write(root, "compiler/a/B.h", '#pragma once\n#include "A.h"\n')
        # A module cycle of three modules: X.cpp -> Y.h, Y.cpp -> Z.h,
        # Z.cpp -> X.h (no file cycle).
        for name, other in (("X", "Y"), ("Y", "Z"), ("Z", "X")):
            write(root, "targets/m/%s.h" % name, "#pragma once\nint %s();\n" % name.lower())
            write(root, "targets/m/%s.cpp" % name,
                  '#include "targets/m/%s.h"\n  #  include "targets/m/%s.h"\n' % (name, other))
        # A library including tools/, and a tool including a library (fine).
        write(root, "frontends/f/F.cpp", '#include "tools/t/T.h"\n#include <vector>\n'
                                         '#include "tools/t/Gone.h"\n')
        write(root, "tools/t/T.h", '#pragma once\n#include "compiler/a/Leaf.h"\n')
        write(root, "compiler/a/Leaf.h", "#pragma once\n")
        # An include through a public include folder, and an unresolved one.
        write(root, "compiler/p/include/pub/P.h", '#pragma once\n#include "Generated.inc"\n')
        write(root, "compiler/p/Q.h", '#pragma once\n#include "pub/P.h"\n')
        write(root, "compiler/p/include/pub/R.cpp", '#include "compiler/p/Q.h"\n')
        # Known cycles: one that occurs (the module cycle), one that does not.
        write(root, "exceptions.txt",
              "# comment\n\n"
              "targets/m/X -> targets/m/Y -> targets/m/Z -> targets/m/X  # a reason\n"
              "compiler/gone/A -> compiler/gone/B -> compiler/gone/A  # fixed long ago\n")

        problems, summary = check(root, None)
        expected = [
            "tools include: frontends/f/F.cpp:1 includes tools/t/T.h",
            "tools include: frontends/f/F.cpp:3 includes tools/t/Gone.h (not found",
            "include cycle: compiler/a/A.h -> compiler/a/B.h -> compiler/a/A.h",
            "module cycle: compiler/a/A -> compiler/a/B -> compiler/a/A",
            "module cycle: targets/m/X -> targets/m/Y -> targets/m/Z -> targets/m/X",
        ]
        for want in expected:
            if not any(p.startswith(want) for p in problems):
                failures.append("not reported: " + want)
        # Q.h -> pub/P.h (through the include folder) and R.cpp -> Q.h are
        # resolved, but form no cycle (R is its own module).
        for p in problems:
            if "include/pub/P" in p or "compiler/p/Q" in p:
                failures.append("a false cycle: " + p)
        if len(problems) != 5:
            failures.append("%d problems (want 5): %s" % (len(problems), problems))
        # With the exceptions: the module cycle accepted, the stale one named.
        problems, summary = check(root, os.path.join(root, "exceptions.txt"))
        if any(p.startswith("module cycle: targets/m/X") for p in problems):
            failures.append("the known cycle was not accepted")
        if not any(p.startswith("stale exception: exceptions.txt:4: compiler/gone/A") for p in problems):
            failures.append("the stale exception was not reported: %s" % problems)
        if "1 module cycle(s) accepted" not in summary:
            failures.append("summary: " + summary)
        # A clean tree passes.
        clean = os.path.join(root, "clean")
        write(clean, "compiler/a/A.h", "#pragma once\n")
        write(clean, "compiler/a/A.cpp", '#include "compiler/a/A.h"\n#include "B.h"\n')
        write(clean, "compiler/a/B.h", '#pragma once\n#include "compiler/a/C.h"\n')
        write(clean, "compiler/a/B.cpp", '#include "compiler/a/B.h"\n#include "compiler/a/C.h"\n')
        write(clean, "compiler/a/C.h", "#pragma once\n")
        write(clean, "tools/t/main.cpp", '#include "compiler/a/A.h"\n')
        problems, summary = check(clean, None)
        if problems:
            failures.append("a clean tree: %s" % problems)

    for f in failures:
        print("self-test FAIL: " + f)
    if failures:
        return 1
    print("include-structure self-test: a file cycle, a module cycle, a tools/ include, "
          "a known and a stale exception all reported as expected")
    return 0


def main(argv):
    args = list(argv)
    if "--self-test" in args:
        return self_test()
    verbose = False
    if "-v" in args:
        args.remove("-v")
        verbose = True
    exceptions = None
    if "--exceptions" in args:
        i = args.index("--exceptions")
        if i + 1 >= len(args):
            print("usage: includes.py [ROOT] [--exceptions FILE] [-v] | --self-test")
            return 2
        exceptions = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print("usage: includes.py [ROOT] [--exceptions FILE] [-v] | --self-test")
        return 2
    root = os.path.abspath(args[0] if args else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    if exceptions is None:
        exceptions = os.path.join(root, "tests", "lint", "include-exceptions.txt")
    if not any(os.path.isdir(os.path.join(root, d)) for d in SCAN_DIRS):
        print("includes.py: %s has none of %s" % (root, ", ".join(d + "/" for d in SCAN_DIRS)))
        return 2
    accepted = [] if verbose else None
    problems, summary = check(root, exceptions, accepted)
    for line in (accepted or []) + problems:
        print(line)
    print(summary)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
