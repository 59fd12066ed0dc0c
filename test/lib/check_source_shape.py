#!/usr/bin/env python3
"""Checks that the compiler's sources stay small enough to hold in mind.

usage: check_source_shape.py DIR [--layered DIR]...

- no C++ or Python file of DIR over MAX_FILE_LINES lines;
- no function over MAX_FUNCTION_LINES lines (in C++ a top-level definition
  whose body opens at namespace scope; in Python any def, methods and
  nested ones included, from its decorators to its last line);
- in each --layered directory, the files' includes of each other form no
  cycle (the header and source file of one name are one node), so that no
  file calls back into another;
- a C, C++ or CUDA file's banner (`//===- Name - what it is ---===//`) is
  one line of at most 80 columns (clang-format splits a longer one in two).
"""

import ast
import os
import re
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 150
BANNER_COLUMNS = 80


def strip(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def long_functions(path, lines):
    """(name, length) of every function body longer than the limit."""
    found = []
    scopes = []  # one entry per open brace: "namespace", "type" or "function"
    start = None
    header = ""
    for number, raw in enumerate(lines, 1):
        line = strip(raw)
        for char in line:
            if char == "{":
                if "function" in scopes:
                    scopes.append("block")
                elif re.search(r"(\bnamespace\b[^;]*|\bextern\s*\"\"\s*)$", header):
                    scopes.append("namespace")
                elif re.search(r"\b(class|struct|enum|union)\b[^()]*$", header) \
                        or header.rstrip().endswith("="):
                    scopes.append("type")
                elif "type" in scopes:
                    scopes.append("block")  # an inline member: not checked
                else:
                    scopes.append("function")
                    start = (number, header.strip()[-80:])
                header = ""
            elif char == "}":
                kind = scopes.pop() if scopes else None
                if kind == "function":
                    length = number - start[0] + 1
                    if length > MAX_FUNCTION_LINES:
                        found.append((start[1], start[0], length))
                header = ""
            elif char == ";":
                header = ""
            else:
                header += char
        header += " "
    return found


def long_python_functions(path, text):
    """(name, line, length) of every def longer than the limit."""
    found = []
    for node in ast.walk(ast.parse(text, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] +
                        [d.lineno for d in node.decorator_list])
            length = node.end_lineno - first + 1
            if length > MAX_FUNCTION_LINES:
                found.append((f"def {node.name}", first, length))
    return found


def include_cycle(directory):
    """A cycle among the files of `directory` by their includes, or None."""
    graph = {}
    for name in os.listdir(directory):
        stem, ext = os.path.splitext(name)
        if ext not in (".h", ".cpp"):
            continue
        with open(os.path.join(directory, name)) as f:
            for match in re.finditer(r'^#include "([^"/]+)\.h"', f.read(), re.M):
                if match.group(1) != stem:
                    graph.setdefault(stem, set()).add(match.group(1))
    state = {}

    def visit(node, path):
        state[node] = "open"
        for next_node in sorted(graph.get(node, ())):
            if state.get(next_node) == "open":
                return path + [node, next_node]
            if next_node not in state:
                cycle = visit(next_node, path + [node])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle
    return None


def main():
    root = sys.argv[1]
    layered = [a for i, a in enumerate(sys.argv) if i > 1 and sys.argv[i - 1] == "--layered"]
    failures = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
        for name in sorted(files):
            path = os.path.join(directory, name)
            if name.endswith((".c", ".cpp", ".h", ".cu", ".cuh")):
                with open(path) as f:
                    first = f.readline().rstrip("\n")
                if first.startswith("//===-") and (
                        not first.endswith("===//") or
                        len(first) > BANNER_COLUMNS):
                    failures.append(f"{path}:1: a banner not on one line of "
                                    f"at most {BANNER_COLUMNS} columns")
            if not name.endswith((".cpp", ".h", ".py")):
                continue
            with open(path) as f:
                text = f.read()
            lines = text.splitlines()
            if len(lines) > MAX_FILE_LINES:
                failures.append(f"{path}: {len(lines)} lines (at most {MAX_FILE_LINES})")
            functions = long_python_functions(path, text) if name.endswith(".py") \
                else long_functions(path, lines)
            for header, line, length in functions:
                failures.append(f"{path}:{line}: a function of {length} lines "
                                f"(at most {MAX_FUNCTION_LINES}): {header}")
    for directory in layered:
        cycle = include_cycle(directory)
        if cycle:
            failures.append(f"{directory}: files include each other: " + " -> ".join(cycle))
    for failure in failures:
        print(failure)
    print(f"{len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
