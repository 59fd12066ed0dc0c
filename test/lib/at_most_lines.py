#!/usr/bin/env python3
"""Passes standard input through; fails if it has more than N lines.

usage: COMMAND | at_most_lines.py N
"""

import sys


def main() -> int:
    limit = int(sys.argv[1])
    text = sys.stdin.read()
    sys.stdout.write(text)
    lines = text.count("\n")
    if lines > limit:
        print(f"FAIL: {lines} lines, at most {limit} expected", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
