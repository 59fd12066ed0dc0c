//===- ManifestReader.cpp - the kernel manifest, read strictly -----------===//
//
// The manifest is the compiler's word on how to launch its kernels: a field
// the reader does not know, a missing one or a value of the wrong type means
// the two disagree (a newer compiler, a hand-edited file), and guessing
// (a default block size, an unknown parameter taken for the workspace)
// launches wrong kernels. So every one of them is an error that names the
// field. nlohmann::json is used without exceptions (the project builds with
// -fno-exceptions): every access is checked first.
//
//===----------------------------------------------------------------------===//

#include "Manifest.h"
#include "tile/Target/ManifestFormat.h"

#define JSON_NOEXCEPTION
#include <nlohmann/json.hpp>

#include <initializer_list>
#include <set>

namespace tile::ops::manifest {

using Json = nlohmann::json;
using rt::Status;
using rt::StatusOr;

namespace {
/// Records where the text stops being JSON (nlohmann's DOM parser says only
/// that it did).
struct SyntaxError : nlohmann::json_sax<Json> {
  std::string message;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string &token,
                   const nlohmann::detail::exception &error) override {
    message = error.what();
    return false;
  }
};

/// One JSON object being read: typed getters that say which field of
/// which entry is wrong, and a check that nothing else is there.
class Reader {
public:
  Reader(const Json &object, std::string where)
      : object(object), where(std::move(where)) {}

  Status only(std::initializer_list<const char *> known) const {
    std::set<std::string> names(known.begin(), known.end());
    for (auto it = object.begin(); it != object.end(); ++it)
      if (!names.count(it.key()))
        return error("unknown field '" + it.key() + "'");
    return Status::ok();
  }
  bool has(const char *key) const { return object.contains(key); }

  StatusOr<std::string> string(const char *key) const {
    const Json *value = field(key);
    if (!value || !value->is_string())
      return error(expected(key, "a string"));
    return value->get<std::string>();
  }
  StatusOr<int64_t> integer(const char *key) const {
    const Json *value = field(key);
    if (!value || !value->is_number_integer())
      return error(expected(key, "an integer"));
    return value->get<int64_t>();
  }
  StatusOr<bool> boolean(const char *key) const {
    const Json *value = field(key);
    if (!value || !value->is_boolean())
      return error(expected(key, "true or false"));
    return value->get<bool>();
  }
  StatusOr<const Json *> array(const char *key) const {
    const Json *value = field(key);
    if (!value || !value->is_array())
      return error(expected(key, "an array"));
    return value;
  }
  StatusOr<std::vector<std::string>> strings(const char *key) const {
    StatusOr<const Json *> list = array(key);
    if (!list)
      return list.takeStatus();
    std::vector<std::string> values;
    for (const Json &entry : **list) {
      if (!entry.is_string())
        return error(expected(key, "an array of strings"));
      values.push_back(entry.get<std::string>());
    }
    return values;
  }
  Status error(const std::string &what) const {
    return Status::error("kernel manifest: " + where + ": " + what);
  }

private:
  const Json *field(const char *key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  static std::string expected(const char *key, const char *what) {
    return "'" + std::string(key) + "' must be " + what;
  }

  const Json &object;
  std::string where;
};

StatusOr<Param> readParam(const Reader &entry) {
  StatusOr<std::string> of = entry.string("of");
  if (!of)
    return of.takeStatus();
  using Kind = Param::Kind;
  Param param;
  // Which fields each kind has: exactly what Manifest.cpp writes.
  if (*of == "argument" || *of == "result") {
    param.kind = *of == "argument" ? Kind::Argument : Kind::Result;
    if (Status s = entry.only({"of", "index", "kind", "dtype", "shape"}); !s)
      return s;
    StatusOr<int64_t> index = entry.integer("index");
    StatusOr<std::string> kind = entry.string("kind");
    StatusOr<std::string> dtype = entry.string("dtype");
    if (!index || !kind || !dtype)
      return !index ? index.takeStatus()
                    : (!kind ? kind.takeStatus() : dtype.takeStatus());
    if (*index < 0)
      return entry.error("a negative index");
    if (*kind != "buffer" &&
        !(*kind == "scalar" && param.kind == Kind::Argument))
      return entry.error("unknown kind '" + *kind + "' for an " + *of);
    param.index = *index;
    param.dtype = *dtype;
    param.buffer = *kind == "buffer";
    if (param.buffer) {
      StatusOr<std::vector<std::string>> shape = entry.strings("shape");
      if (!shape)
        return shape.takeStatus();
      if (shape->empty() || shape->size() > 2)
        return entry.error("a buffer's shape has one or two sizes");
      param.shape = std::move(*shape);
    } else if (entry.has("shape")) {
      return entry.error("a scalar has no shape");
    }
    return param;
  }
  if (*of == "rows" || *of == "ctas") {
    if (Status s = entry.only({"of", "kind"}); !s)
      return s;
    param.kind = *of == "rows" ? Kind::Rows : Kind::Ctas;
  } else if (*of == "width") {
    if (Status s = entry.only({"of", "kind", "index", "name"}); !s)
      return s;
    StatusOr<int64_t> index = entry.integer("index");
    if (!index)
      return index.takeStatus();
    param.kind = Kind::Width;
    param.index = *index;
  } else if (*of == "workspace") {
    if (Status s = entry.only({"of", "kind", "dtype"}); !s)
      return s;
    StatusOr<std::string> dtype = entry.string("dtype");
    if (!dtype)
      return dtype.takeStatus();
    if (*dtype != "f32")
      return entry.error("the workspace is f32, not " + *dtype);
    param.kind = Kind::Workspace;
    param.buffer = true;
    param.dtype = *dtype;
  } else {
    return entry.error("unknown parameter '" + *of + "'");
  }
  StatusOr<std::string> kind = entry.string("kind");
  if (!kind)
    return kind.takeStatus();
  std::string expected = param.kind == Kind::Workspace ? "buffer" : "index";
  if (*kind != expected)
    return entry.error("'" + *of + "' has kind '" + *kind + "', not '" +
                       expected + "'");
  return param;
}

StatusOr<Kernel> readKernel(const Reader &entry) {
  if (Status s = entry.only({"name", "grid", "block", "static_shared_bytes",
                             "after", "overlaps_previous"});
      !s)
    return s;
  Kernel kernel;
  StatusOr<std::string> name = entry.string("name");
  StatusOr<std::string> grid = entry.string("grid");
  StatusOr<int64_t> block = entry.integer("block");
  StatusOr<int64_t> shared = entry.integer("static_shared_bytes");
  if (!name)
    return name.takeStatus();
  if (!grid)
    return grid.takeStatus();
  if (!block)
    return block.takeStatus();
  if (!shared)
    return shared.takeStatus();
  if (*block < 32 || *block > 1024 || *block % 32)
    return entry.error("block " + std::to_string(*block) +
                       " is not a multiple of 32 from 32 to 1024");
  kernel.name = *name;
  kernel.grid = *grid;
  kernel.block = *block;
  if (entry.has("after")) {
    StatusOr<std::string> after = entry.string("after");
    if (!after)
      return after.takeStatus();
  }
  if (entry.has("overlaps_previous")) {
    StatusOr<bool> overlaps = entry.boolean("overlaps_previous");
    if (!overlaps)
      return overlaps.takeStatus();
    kernel.overlapsPrevious = *overlaps;
  }
  return kernel;
}

StatusOr<std::pair<std::string, Function>> readFunction(const Reader &entry,
                                                        const std::string &at) {
  if (Status s = entry.only({"function", "kernels", "params", "ctas",
                             "shape_constraints", "workspace_f32_elements"});
      !s)
    return s;
  Function function;
  StatusOr<std::string> name = entry.string("function");
  StatusOr<std::string> ctas = entry.string("ctas");
  StatusOr<std::string> workspace = entry.string("workspace_f32_elements");
  StatusOr<std::vector<std::string>> constraints =
      entry.strings("shape_constraints");
  if (!name)
    return name.takeStatus();
  if (!ctas)
    return ctas.takeStatus();
  if (!workspace)
    return workspace.takeStatus();
  if (!constraints)
    return constraints.takeStatus();
  function.ctas = *ctas;
  function.workspace = *workspace;
  function.constraints = std::move(*constraints);
  StatusOr<const Json *> kernels = entry.array("kernels");
  if (!kernels)
    return kernels.takeStatus();
  if ((*kernels)->empty())
    return entry.error("no kernels");
  for (size_t i = 0; i < (*kernels)->size(); ++i) {
    const Json &object = (**kernels)[i];
    std::string where = at + ".kernels[" + std::to_string(i) + "]";
    if (!object.is_object())
      return Reader(object, where).error("not an object");
    StatusOr<Kernel> kernel = readKernel(Reader(object, where));
    if (!kernel)
      return kernel.takeStatus();
    function.kernels.push_back(std::move(*kernel));
  }
  StatusOr<const Json *> params = entry.array("params");
  if (!params)
    return params.takeStatus();
  for (size_t i = 0; i < (*params)->size(); ++i) {
    const Json &object = (**params)[i];
    std::string where = at + ".params[" + std::to_string(i) + "]";
    if (!object.is_object())
      return Reader(object, where).error("not an object");
    StatusOr<Param> param = readParam(Reader(object, where));
    if (!param)
      return param.takeStatus();
    function.params.push_back(std::move(*param));
  }
  return std::make_pair(*name, std::move(function));
}
} // namespace

StatusOr<std::map<std::string, Function>> read(const std::string &text) {
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    SyntaxError syntax;
    Json::sax_parse(text, &syntax);
    return Status::error("kernel manifest: not JSON: " + syntax.message);
  }
  if (!root.is_object())
    return Status::error("kernel manifest: not a JSON object");
  Reader top(root, "the manifest");
  if (Status s =
          top.only({"format_version", "calling_convention", "functions"});
      !s)
    return s;
  if (!top.has("format_version"))
    return top.error("no format_version: it was written by an older "
                     "compiler (this launcher reads version " +
                     std::to_string(kManifestFormatVersion) + ")");
  StatusOr<int64_t> version = top.integer("format_version");
  if (!version)
    return version.takeStatus();
  if (*version != kManifestFormatVersion)
    return top.error("format_version " + std::to_string(*version) +
                     ", but this launcher reads version " +
                     std::to_string(kManifestFormatVersion) +
                     ": compile the kernels with the same Tile");
  StatusOr<std::string> convention = top.string("calling_convention");
  if (!convention)
    return convention.takeStatus();
  StatusOr<const Json *> functions = top.array("functions");
  if (!functions)
    return functions.takeStatus();
  std::map<std::string, Function> result;
  for (size_t i = 0; i < (*functions)->size(); ++i) {
    const Json &object = (**functions)[i];
    std::string where = "functions[" + std::to_string(i) + "]";
    if (!object.is_object())
      return Reader(object, where).error("not an object");
    auto entry = readFunction(Reader(object, where), where);
    if (!entry)
      return entry.takeStatus();
    if (!result.emplace(std::move(entry->first), std::move(entry->second))
             .second)
      return Reader(object, where).error("a second function of that name");
  }
  return result;
}

} // namespace tile::ops::manifest
