#!/usr/bin/python3
"""Clang's thread-safety analysis (-Wthread-safety -Werror) over the translation units that the
`fuzz` preset (clang, which checks the library as it builds) does not compile: the CLI, the
Python module and the tests that lock annotated mutexes. Syntax only, with each file's flags from
the dev and release builds' compile_commands.json, two at a time.

    scripts/check-thread-safety.py     (after the dev and release builds: make test runs it)
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# GCC-only flags and what a syntax check has no use for.
DROP = re.compile(r"^(-Wshadow=.*|-Wno-restrict|-fsanitize.*|-MD|-c|-flto.*|-fno-fat-lto-objects)$")


def commands():
    by_file = {}
    for build in ("dev", "release"):
        path = os.path.join(ROOT, "build", build, "compile_commands.json")
        if not os.path.exists(path):
            sys.exit(f"check-thread-safety: {path} is missing: build the {build} preset first")
        for entry in json.load(open(path)):
            for source in sources(entry["file"]):
                by_file.setdefault(source, dict(entry, command=entry["command"].replace(
                    entry["file"], source), file=source))
    return by_file


UNITY_INCLUDE = re.compile(r'^#include "(.+\.cc)"$', re.M)


def sources(path):
    """The sources a compile command compiles: the file itself, or those a unity batch (the dev
    preset's, CMAKE_UNITY_BUILD) includes - each is checked on its own."""
    if "/Unity/unity_" not in path:
        return [os.path.realpath(path)]
    return [os.path.realpath(p) for p in UNITY_INCLUDE.findall(open(path).read())]


def wanted(path):
    rel = os.path.relpath(path, ROOT)
    if rel.startswith(("src/cli/", "src/python/")):
        return True
    return rel.startswith("src/") and rel.endswith("_test.cc") and "Mutex" in open(path).read()


def check(entry):
    args = shlex.split(entry["command"])
    out, skip = ["clang++"], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT"):
            skip = True
        elif not DROP.match(a):
            out.append(a)
    out += ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
            "-Wno-unknown-warning-option"]
    result = subprocess.run(out, cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], result.returncode, result.stderr


def main():
    entries = [e for f, e in sorted(commands().items()) if wanted(f)]
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for path, rc, err in pool.map(check, entries):
            if rc != 0:
                failed += 1
                print(f"{os.path.relpath(path, ROOT)}:\n{err}", file=sys.stderr)
    print(f"check-thread-safety: {len(entries)} files, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
