#!/usr/bin/env python3
"""Runs a command and checks its exit status; passes its output through.

usage: expect_status.py STATUS COMMAND [ARGS...]

For statuses lit's `not` cannot tell apart (tile-run --device without a GPU
exits 77, a failed check 1).
"""

import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    want = int(sys.argv[1])
    result = subprocess.run(sys.argv[2:])
    if result.returncode != want:
        print(f"FAIL: exit status {result.returncode}, expected {want}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
