#!/usr/bin/env python3
"""Runs a tool on a malformed input and checks that it fails the right way.

usage: expect_error.py TOOL [ARGS...] INPUT

Passes when the tool exits with status 1 (not a signal, not an abort, not
another status) within the time limit and prints at least one diagnostic of
the form `INPUT:LINE:COL: error: ...` on stderr.
"""

import re
import subprocess
import sys

TIME_LIMIT_S = 60


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    command, path = sys.argv[1:], sys.argv[-1]
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                errors="replace", timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        print(f"FAIL: {' '.join(command)} hung for {TIME_LIMIT_S} s")
        return 1
    stderr = result.stderr
    problems = []
    if result.returncode < 0:
        problems.append(f"killed by signal {-result.returncode}")
    elif result.returncode != 1:
        problems.append(f"exit status {result.returncode}, expected 1")
    located = re.compile(re.escape(path) + r":\d+:\d+: error: ")
    if not located.search(stderr):
        problems.append("no 'FILE:LINE:COL: error:' diagnostic on stderr")
    if "Stack dump" in stderr or "PLEASE submit a bug report" in stderr:
        problems.append("crash report on stderr")
    if problems:
        print("FAIL: " + "; ".join(problems))
        print("--- stderr ---\n" + stderr)
        return 1
    first = next(line for line in stderr.splitlines() if located.search(line))
    print("ok: " + first)
    return 0


if __name__ == "__main__":
    sys.exit(main())
