#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layering of README's table of layers, checked on the sources: a file of a layer includes
only its own layer's headers and the public headers (include/loom/<layer>/) of layers its library
depends on, directly or not. The dependencies are the libraries' own (CMake writes them at
configure time: LOOM_LIBRARY_DEPS_FILE), so an include that points up or sideways fails here
even where the link would happen to succeed.

    layering_test.py SOURCE_DIR DEPS_FILE
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def library_of_path(rel):
    """The library a source or header belongs to, from its path; None for files of no library."""
    parts = rel.split("/")
    if parts[0] == "csrc" and len(parts) > 2:
        layer = parts[1]
    elif parts[:2] == ["include", "loom"] and len(parts) > 3:
        layer = parts[2]
    else:
        return None
    if layer == "backend":
        sub = parts[2] if parts[0] == "csrc" else parts[3]
        return "loom_backend_cuda" if sub == "cuda" else "loom_backend_host"
    return f"loom_{layer}"


def library_of_include(inc):
    """The library an include names: "loom/<layer>/..." (public) or "<layer>/..." (csrc-private)."""
    parts = inc.split("/")
    if parts[0] == "loom" and len(parts) > 2:
        rel = ["include"] + parts
    elif len(parts) > 1:
        rel = ["csrc"] + parts
    else:
        return None, False
    lib = library_of_path("/".join(rel))
    return lib, parts[0] != "loom"


def closure(deps):
    out = {}
    for lib in deps:
        seen, todo = set(), list(deps[lib])
        while todo:
            d = todo.pop()
            if d in seen:
                continue
            seen.add(d)
            todo.extend(deps.get(d, ()))
        out[lib] = seen
    return out


def main(argv):
    src, deps_file = argv[1], argv[2]
    deps = {}
    with open(deps_file, encoding="utf-8") as f:
        for line in f:
            if ":" not in line:
                continue
            lib, rest = line.split(":", 1)
            deps[lib.strip()] = [d for d in rest.split() if d.startswith("loom_")]
    allowed = closure(deps)
    known_layers = {d for d in deps}
    problems = []
    checked = 0
    for top in ("csrc", "include/loom"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".cuh")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, src)
                lib = library_of_path(rel)
                if lib is None or lib not in known_layers:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for inc in INCLUDE.findall(text):
                    target, private = library_of_include(inc)
                    if target is None or target not in known_layers or target == lib:
                        continue
                    checked += 1
                    if private:
                        problems.append(f"{rel}: includes {inc}, a private header of {target}")
                    elif target not in allowed[lib]:
                        problems.append(f"{rel}: includes {inc}, but {lib} does not depend on "
                                        f"{target} (its dependencies: "
                                        f"{', '.join(sorted(allowed[lib])) or 'none'})")
    for p in problems:
        print("layering:", p)
    print(f"layering: {checked} cross-layer includes checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
