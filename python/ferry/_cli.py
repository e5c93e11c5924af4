"""The ``ferry`` command of an installed package, and ``python -m ferry``: both start the native
CLI shipped inside the package (``ferry/bin/ferry``) with the same arguments, in place of this
process, so that its exit code, signals (Ctrl+C) and output are the CLI's own."""

from __future__ import annotations

import os
import sys
from typing import List, Optional


def executable() -> str:
    """The path of the native ``ferry`` CLI inside this package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ferry")


def main(argv: Optional[List[str]] = None) -> int:
    """Replaces this process with the native CLI; returns only when it cannot be started."""
    path = executable()
    args = sys.argv[1:] if argv is None else list(argv)
    if not os.access(path, os.X_OK):
        sys.stderr.write(f"ferry: the native CLI is missing from the package ({path}): reinstall "
                         f"ferry, or build it (`make build` puts it in build/release/python)\n")
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, ["ferry", *args])
    return 1  # not reached: execv returns only by raising


if __name__ == "__main__":
    sys.exit(main())
