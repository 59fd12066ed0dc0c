# -*- Python -*-
# lit configuration for the tile project.

import os
import shutil
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "TILE"
# The internal shell: the same behaviour on every machine, no bash needed.
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tile_obj_root, "test")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt"]

config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# FileCheck, not and count live in LLVM's tool directory, which Debian does
# not put on PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

config.substitutions.append(("%tile_src", config.tile_src_root))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%tile_obj", config.tile_obj_root))
config.substitutions.append(
    ("%expect-error",
     sys.executable + " " + os.path.join(config.test_source_root, "lib",
                                          "expect_error.py")))

for helper in ["expect_status", "at_most_lines"]:
    config.substitutions.append(
        ("%" + helper.replace("_", "-"),
         sys.executable + " " + os.path.join(config.test_source_root, "lib",
                                              helper + ".py")))

tool_dirs = [config.tile_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["tile-opt", "tile-translate", "tile-run", "tile-rt-info", "tile-rt-smoke",
     "tile-embed-example", "tile-bench", "tile-gpu-tests"], tool_dirs)


def numpy_python():
    """A Python that imports numpy (lit's own may not: Debian's python3
    runs lit, pip installs into the user's), for tests that read the .npy
    files tile-run writes."""
    import shutil
    import subprocess
    for candidate in [sys.executable, shutil.which("python3")]:
        if candidate and subprocess.run(
                [candidate, "-c", "import numpy"],
                capture_output=True).returncode == 0:
            return candidate
    return None


if (python_with_numpy := numpy_python()):
    config.available_features.add("numpy")
    config.substitutions.append(("%numpy-python", python_with_numpy))



def cuda_device_present():
    """True when libcuda.so.1 loads and cuInit finds a device.

    The toolkit's stub libcuda answers cuInit with CUDA_ERROR_STUB_LIBRARY,
    so loading alone proves nothing.
    """
    import ctypes
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        if libcuda.cuInit(0) != 0:
            return False
        count = ctypes.c_int(0)
        return libcuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
    except (OSError, AttributeError):
        return False


# Tests that need a GPU say `REQUIRES: cuda`.
if config.enable_gpu_tests or cuda_device_present():
    config.available_features.add("cuda")

# The toolkit's stub libcuda lets runtime tests see how a machine without a
# driver is reported.
stub = os.path.join(cuda_root_default := (os.environ.get("CUDA_HOME") or "/usr/local/cuda"),
                    "lib64", "stubs", "libcuda.so")
if os.path.exists(stub):
    config.available_features.add("cuda-stub")
    config.substitutions.append(("%cuda_stub", stub))

# PTX tests assemble what they emit with the CUDA toolkit's ptxas, where the
# machine has one (`REQUIRES: ptxas`); the rest of each test runs anyway.
cuda_root = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
ptxas = shutil.which("ptxas") or os.path.join(cuda_root, "bin", "ptxas")
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
    config.substitutions.append(
        ("%ptx-check",
         " ".join([sys.executable,
                   os.path.join(config.test_source_root, "lib", "ptx_check.py"),
                   config.tile_tools_dir, ptxas])))
