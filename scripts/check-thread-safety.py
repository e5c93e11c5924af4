#!/usr/bin/python3
"""Clang's thread-safety analysis (-Wthread-safety -Werror) over everything that locks: the
libraries, the CLI, the Python module and the tests that lock annotated mutexes. The build that
make test runs is GCC's, which does not check the annotations, so this is where a broken lock rule
fails make test (the clang `fuzz` preset checks the libraries too, as it compiles them). Syntax
only, with each file's flags from the dev and release builds' compile_commands.json, two at a
time; a dev unity batch is checked whole when any source in it is wanted (a batch holds the
sources of one target: a library's or a test's).

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
    """The compile commands to check, each once: a source that a dev batch covers is not
    checked again from release, which adds what only it builds (the Python module)."""
    chosen, covered = [], set()
    for build in ("dev", "release"):
        path = os.path.join(ROOT, "build", build, "compile_commands.json")
        if not os.path.exists(path):
            sys.exit(f"check-thread-safety: {path} is missing: build the {build} preset first")
        for entry in json.load(open(path)):
            files = sources(entry["file"])
            if any(wanted(source) and source not in covered for source in files):
                chosen.append(entry)
                covered.update(files)
    return sorted(chosen, key=lambda entry: entry["file"])


UNITY_INCLUDE = re.compile(r'^#include "(.+\.cc)"$', re.M)


def sources(path):
    """The sources a compile command compiles: the file itself, or those a unity batch (the dev
    preset's, CMAKE_UNITY_BUILD) includes."""
    if "/Unity/unity_" not in path:
        return [os.path.realpath(path)]
    return [os.path.realpath(p) for p in UNITY_INCLUDE.findall(open(path).read())]


def wanted(path):
    rel = os.path.relpath(path, ROOT)
    if not rel.startswith("src/"):
        return False
    return not rel.endswith("_test.cc") or "Mutex" in open(path).read()


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
    entries = commands()
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
