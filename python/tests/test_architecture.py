"""The package's shape (issue 44): its modules form one chain, each
importing only those below it; only the C layer touches ctypes or the
library; no module reaches into another's private names; each imports
alone. Read from the sources (and, for the last, in fresh interpreters):
no GPU."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tile"

# The C layer: the only modules that touch ctypes or the library.
C_LAYER = ["_capi", "_capi_functions", "_capi_operators"]
# Bottom to top: a module may import the ones before it, never after.
LAYERS = [*C_LAYER, "shape_expressions", "custom_ops", "autograd", "distributed", "kernel_launch",
          "kernel_autograd", "kernel", "operators", "gemm", "mlp_checks",
          "mlp_reference", "mlp", "moe", "losses", "head_chunks", "head",
          "ops", "nn", "families", "lm_loss", "transformers", "__init__"]


def _tree(name):
    return ast.parse((PACKAGE / f"{name}.py").read_text(), f"{name}.py")


def _package_imports(tree):
    """(module, names) of every import of a tile module in `tree`:
    `from . import x` gives (x, []), `from .x import a, b` (x, [a, b])."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module is None:
                found.extend((alias.name, []) for alias in node.names)
            else:
                found.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith("tile."):
            found.append((node.module[5:], [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((a.name[5:], []) for a in node.names
                         if a.name.startswith("tile."))
    return found


def test_every_module_is_a_layer():
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == sorted(LAYERS)


@pytest.mark.parametrize("name", LAYERS)
def test_imports_only_go_down(name):
    below = set(LAYERS[:LAYERS.index(name)])
    for module, _ in _package_imports(_tree(name)):
        assert module in below, (
            f"{name}.py imports {module}, which is not below it in "
            f"{' -> '.join(LAYERS)}")


@pytest.mark.parametrize("name", LAYERS[len(C_LAYER):])
def test_only_the_c_layer_touches_c(name):
    tree = _tree(name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(a.name != "ctypes" for a in node.names), \
                f"{name}.py imports ctypes"
        if isinstance(node, ast.ImportFrom):
            assert node.module != "ctypes", f"{name}.py imports ctypes"
            if node.module == "_capi":
                assert "lib" not in [a.name for a in node.names], \
                    f"{name}.py imports the library handle"
        if isinstance(node, ast.Attribute) and node.attr == "lib":
            assert not (isinstance(node.value, ast.Name) and
                        node.value.id == "_capi"), \
                f"{name}.py:{node.lineno} calls the library itself"


@pytest.mark.parametrize("name", LAYERS)
def test_no_reach_into_private_names(name):
    tree = _tree(name)
    modules = set()  # the names tile modules are bound to here
    for module, names in _package_imports(tree):
        for imported in names:
            assert not imported.startswith("_") or imported.startswith("__"), \
                f"{name}.py imports {module}.{imported}, a private name"
        if not names:
            modules.add(module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and \
                isinstance(node.value, ast.Name) and \
                node.value.id in modules and node.attr.startswith("_"):
            pytest.fail(f"{name}.py:{node.lineno} reaches into "
                        f"{node.value.id}.{node.attr}")


@pytest.mark.parametrize("name", LAYERS[:-1])
def test_each_module_imports_alone(name):
    """The module and what it imports, without the package's __init__
    importing the rest first: nothing leans on an import order."""
    # The tile this process imports (the source tree or an installed
    # package, which holds libtile.so beside its modules).
    import tile
    installed = str(Path(tile.__file__).resolve().parent)
    program = (
        "import importlib, sys, types\n"
        f"package = types.ModuleType('tile')\n"
        f"package.__path__ = [{installed!r}]\n"
        "sys.modules['tile'] = package\n"
        f"importlib.import_module('tile.{name}')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('tile.'))\n"
        "print(' '.join(loaded))\n")
    done = subprocess.run([sys.executable, "-c", program], env=os.environ,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = {m[5:] for m in done.stdout.split()}
    below = set(LAYERS[:LAYERS.index(name) + 1])
    assert loaded <= below, f"importing {name} loaded {loaded - below}"


def test_nn_holds_modules_only():
    """tile.nn is modules: a step with its own backward (an
    autograd.Function) belongs to the ops below it, where tile.ops and the
    modules share it."""
    for node in ast.walk(_tree("nn")):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(base) for base in node.bases]
            assert not any(base.endswith("Function") for base in bases), \
                f"nn.py:{node.lineno}: {node.name}({', '.join(bases)})"


# What only custom_ops may ask or do: whether a call is traced, and
# defining an op.
_TRACING_QUESTIONS = ("is_compiling", "_is_functional_tensor", "FakeTensor",
                      "is_current_stream_capturing", "custom_op",
                      "register_fake", "Library")


@pytest.mark.parametrize("name", [n for n in LAYERS if n != "custom_ops"])
def test_only_custom_ops_asks_whether_a_call_is_traced(name):
    """One op helper (issue 61): every branch on tracing is one of
    custom_ops' named rules, every op defined through define_op."""
    for node in ast.walk(_tree(name)):
        called = node.attr if isinstance(node, ast.Attribute) else \
            node.id if isinstance(node, ast.Name) else None
        assert called not in _TRACING_QUESTIONS, \
            f"{name}.py:{node.lineno} uses {called}: ask custom_ops"
        if isinstance(node, ast.FunctionDef):
            assert node.name != "tracing", f"{name}.py:{node.lineno}"


def test_every_op_is_defined_through_the_helper():
    import torch
    import tile  # noqa: F401  (defines the ops)
    from tile.custom_ops import OPS
    names = {n.split("::")[1].split(".")[0]
             for n in torch._C._dispatch_get_all_op_names()
             if n.startswith("tile::")}
    assert names == set(OPS), names ^ set(OPS)
    assert {"launch", "matmul_into", "chunked_head", "chunked_head_into",
            "swiglu_mlp", "swiglu_mlp_untiled", "swiglu_mlp_backward",
            "moe_experts_forward", "moe_experts_backward"} <= names
