"""_capi cannot drift from include/tile-c/Tile.h (issue 44): the header is
parsed here and every enum value, struct field, constant and signature the
package declares is compared with it; a function of the header the package
does not bind must be listed below with the reason. No GPU."""

import ctypes
import re
from pathlib import Path

import pytest

from tile import _capi

HEADER = Path(__file__).resolve().parents[2] / "include" / "tile-c" / "Tile.h"

# Functions of Tile.h that Python does not call, and why.
NOT_BOUND = {
    "tile_compile_options_init": "Module fills every field itself",
    "tile_module_lookup": "FunctionInfo walks tile_module_function",
    "tile_operators_destroy": "the operators live as long as the process",
    "tile_mlp_destroy": "MLP handles live as long as the process",
}

STRUCTS = {"tile_tensor": _capi.Tensor, "tile_value": _capi.Value,
           "tile_device_description": _capi.DeviceDescription,
           "tile_compile_options": _capi.CompileOptions,
           "tile_value_info": _capi.ValueInfo,
           "tile_mlp_options": _capi.MLPOptions, "tile_run": _capi.Run}
ENUM_PREFIXES = {"tile_dtype": "TILE_DTYPE_", "tile_value_kind": "TILE_VALUE_",
                 "tile_role": "TILE_ROLE_"}
SCALARS = {"int": ctypes.c_int, "int32_t": ctypes.c_int32,
           "int64_t": ctypes.c_int64, "size_t": ctypes.c_size_t,
           "double": ctypes.c_double, "float": ctypes.c_float}


def _source():
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


SOURCE = _source()
HANDLES = set(re.findall(r"typedef struct \w+ \*(\w+);", SOURCE))
ENUMS = {name: body for body, name in
         re.findall(r"typedef enum \{(.*?)\} (\w+);", SOURCE, re.S)}


def _ctype(declaration):
    """The ctypes type of a C declaration without its name."""
    text = declaration.replace("const", " ").strip()
    pointers = text.count("*")
    base = text.replace("*", " ").split()[0]
    if base == "char" and pointers == 1:
        return ctypes.c_char_p
    if base in HANDLES:
        kind, pointers = ctypes.c_void_p, pointers
    elif base == "void":
        if pointers == 0:
            return None
        kind, pointers = ctypes.c_void_p, pointers - 1
    elif base in ENUMS:
        kind = ctypes.c_int
    elif base in STRUCTS:
        kind = STRUCTS[base]
    else:
        kind = SCALARS[base]
    for _ in range(pointers):
        kind = ctypes.POINTER(kind)
    return kind


def _split(declaration):
    """(type, name) of `int64_t *shape`."""
    match = re.match(r"(.*?)(\w+)\s*$", declaration.strip(), re.S)
    return match.group(1), match.group(2)


def _functions():
    found = {}
    declarations = re.sub(r"^#[^\n]*", " ", SOURCE, flags=re.M)
    for result, name, params in re.findall(
            r"TILE_C_EXPORT\s+([^;(]*?)\b(tile_\w+)\s*\(([^)]*)\)\s*;",
            declarations, re.S):
        params = params.strip()
        arguments = [] if params == "void" else [
            _ctype(_split(p)[0]) for p in params.split(",")]
        found[name] = (arguments, _ctype(result))
    return found


FUNCTIONS = _functions()


def test_the_header_parses():
    assert len(FUNCTIONS) > 30 and "tile_mlp_backward" in FUNCTIONS
    assert set(STRUCTS) <= set(re.findall(r"\} (\w+);", SOURCE))


def test_versions_and_constants_agree():
    version = re.search(r"#define TILE_C_API_VERSION (\d+)", SOURCE)
    assert int(version.group(1)) == _capi.API_VERSION
    workspace = re.search(r"#define TILE_MATMUL_WORKSPACE_BYTES \((\d+)u << "
                          r"(\d+)\)", SOURCE)
    assert int(workspace.group(1)) << int(workspace.group(2)) == \
        _capi.MATMUL_WORKSPACE_BYTES


@pytest.mark.parametrize("enum", sorted(ENUM_PREFIXES))
def test_enum_values_agree(enum):
    prefix = ENUM_PREFIXES[enum]
    values = re.findall(r"(\w+)\s*=\s*(\d+)", ENUMS[enum])
    assert values
    for name, value in values:
        assert getattr(_capi, name[len(prefix):]) == int(value), name


@pytest.mark.parametrize("struct", sorted(STRUCTS))
def test_struct_fields_agree(struct):
    body = re.search(r"typedef struct \{([^{}]*)\} " + struct + ";",
                     SOURCE).group(1)
    header = [_split(field) for field in body.split(";") if field.strip()]
    fields = STRUCTS[struct]._fields_
    assert [name for _, name in header] == [name for name, _ in fields]
    for (declaration, name), (_, kind) in zip(header, fields):
        assert _ctype(declaration) == kind, f"{struct}.{name}"


def test_the_device_description_is_device_facts_def_in_its_order():
    """tile_device_description is the C copy of the one list of device
    facts (include/tile/Target/DeviceFacts.def; C++ checks only its size):
    each field the fact's option name in C spelling, in the list's order
    (`sms` is the C struct's `multiprocessors`)."""
    facts = re.findall(r'^TILE_DEVICE_FACT\(\w+, "([\w-]+)"',
                       (HEADER.parents[1] / "tile" / "Target" /
                        "DeviceFacts.def").read_text(), re.M)
    assert len(facts) >= 4
    body = re.search(r"typedef struct \{([^{}]*)\} tile_device_description;",
                     SOURCE).group(1)
    fields = [_split(field)[1] for field in body.split(";") if field.strip()]
    spelled = {"sms": "multiprocessors"}
    assert fields == [spelled.get(f, f.replace("-", "_")) for f in facts]


@pytest.mark.parametrize("name", sorted(_capi.SIGNATURES))
def test_signature_agrees(name):
    assert name in FUNCTIONS, f"{name} is not in Tile.h"
    arguments, result = FUNCTIONS[name]
    declared_arguments, declared_result = _capi.SIGNATURES[name]
    assert list(declared_arguments) == arguments, f"{name}'s arguments"
    assert declared_result == result, f"{name}'s result"


def test_every_function_is_bound_or_excused():
    unbound = set(FUNCTIONS) - set(_capi.SIGNATURES) - set(NOT_BOUND)
    assert not unbound, f"Tile.h functions neither bound nor excused: " \
                        f"{sorted(unbound)}"
    assert set(NOT_BOUND) <= set(FUNCTIONS), "an excuse for no function"
