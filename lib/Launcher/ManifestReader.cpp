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
#include <optional>
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

/// The first failure of `statuses` (all evaluated, in order), or ok.
Status firstError(std::initializer_list<Status> statuses) {
  for (const Status &status : statuses)
    if (!status)
      return status;
  return Status::ok();
}

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

  Status get(const char *key, std::string &out) const {
    const Json *value = field(key);
    if (!value || !value->is_string())
      return error(expected(key, "a string"));
    out = value->get<std::string>();
    return Status::ok();
  }
  Status get(const char *key, int64_t &out) const {
    const Json *value = field(key);
    if (!value || !value->is_number_integer())
      return error(expected(key, "an integer"));
    out = value->get<int64_t>();
    return Status::ok();
  }
  Status get(const char *key, bool &out) const {
    const Json *value = field(key);
    if (!value || !value->is_boolean())
      return error(expected(key, "true or false"));
    out = value->get<bool>();
    return Status::ok();
  }
  Status get(const char *key, std::vector<std::string> &out) const {
    const Json *value = field(key);
    if (!value || !value->is_array())
      return error(expected(key, "an array of strings"));
    out.clear();
    for (const Json &entry : *value) {
      if (!entry.is_string())
        return error(expected(key, "an array of strings"));
      out.push_back(entry.get<std::string>());
    }
    return Status::ok();
  }
  /// An expression, parsed once here rather than at every call.
  Status get(const char *key, Expression &out) const {
    std::string text;
    if (Status s = get(key, text); !s)
      return s;
    return parsed(key, text, out);
  }
  Status get(const char *key, std::vector<Expression> &out) const {
    std::vector<std::string> texts;
    if (Status s = get(key, texts); !s)
      return s;
    out.assign(texts.size(), Expression());
    for (size_t i = 0; i < texts.size(); ++i)
      if (Status s = parsed(key, texts[i], out[i]); !s)
        return s;
    return Status::ok();
  }
  /// `lhs == rhs` or `lhs <= rhs` each.
  Status get(const char *key, std::vector<Constraint> &out) const {
    std::vector<std::string> texts;
    if (Status s = get(key, texts); !s)
      return s;
    out.clear();
    for (const std::string &text : texts) {
      Constraint &constraint = out.emplace_back();
      size_t at = text.find("==");
      constraint.equal = at != std::string::npos;
      if (!constraint.equal)
        at = text.find("<=");
      if (at == std::string::npos)
        return error("'" + std::string(key) + "': '" + text +
                     "' is not a == b or a <= b");
      if (Status s =
              firstError({parsed(key, text.substr(0, at), constraint.lhs),
                          parsed(key, text.substr(at + 2), constraint.rhs)});
          !s)
        return s;
      constraint.text = text;
    }
    return Status::ok();
  }
  /// A storage dtype, looked up once here rather than at every call.
  Status get(const char *key, rt::DType &out) const {
    std::string name;
    if (Status s = get(key, name); !s)
      return s;
    std::optional<rt::DType> dtype = rt::dtypeNamed(name);
    if (!dtype)
      return error("unknown dtype '" + name + "'");
    out = *dtype;
    return Status::ok();
  }
  /// Each object of the array `key`, read by `read(entry)`.
  template <typename ReadFn>
  Status forEach(const char *key, ReadFn read) const {
    const Json *value = field(key);
    if (!value || !value->is_array())
      return error(expected(key, "an array"));
    for (size_t i = 0; i < value->size(); ++i) {
      Reader entry((*value)[i], (where.empty() ? "" : where + ".") + key + "[" +
                                    std::to_string(i) + "]");
      if (!(*value)[i].is_object())
        return entry.error("not an object");
      if (Status s = read(entry); !s)
        return s;
    }
    return Status::ok();
  }
  Status error(const std::string &what) const {
    return Status::error(
        "kernel manifest: " + (where.empty() ? "the manifest" : where) + ": " +
        what);
  }

private:
  Status parsed(const char *key, const std::string &text,
                Expression &out) const {
    StatusOr<Expression> expression = Expression::parse(text);
    if (!expression)
      return error("'" + std::string(key) + "': " + expression.message());
    out = std::move(*expression);
    return Status::ok();
  }
  const Json *field(const char *key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }
  static std::string expected(const char *key, const char *what) {
    return "'" + std::string(key) + "' must be " + what;
  }

  const Json &object;
  /// "functions[0].params[3]"; empty for the manifest itself.
  std::string where;
};

Status readParam(const Reader &entry, Param &param) {
  std::string of;
  if (Status s = entry.get("of", of); !s)
    return s;
  using Kind = Param::Kind;
  // Which fields each kind has: exactly what Manifest.cpp writes.
  if (of == "argument" || of == "result") {
    param.kind = of == "argument" ? Kind::Argument : Kind::Result;
    std::string kind;
    if (Status s = firstError(
            {entry.only({"of", "index", "kind", "dtype", "shape"}),
             entry.get("index", param.index), entry.get("kind", kind),
             entry.get("dtype", param.dtype)});
        !s)
      return s;
    if (param.index < 0)
      return entry.error("a negative index");
    if (kind != "buffer" && !(kind == "scalar" && param.kind == Kind::Argument))
      return entry.error("unknown kind '" + kind + "' for an " + of);
    param.buffer = kind == "buffer";
    if (!param.buffer)
      return entry.has("shape") ? entry.error("a scalar has no shape")
                                : Status::ok();
    if (Status s = entry.get("shape", param.shape); !s)
      return s;
    if (param.shape.empty() || param.shape.size() > 2)
      return entry.error("a buffer's shape has one or two sizes");
    return Status::ok();
  }
  Status fields = Status::ok();
  if (of == "rows" || of == "ctas") {
    param.kind = of == "rows" ? Kind::Rows : Kind::Ctas;
    fields = entry.only({"of", "kind"});
  } else if (of == "width") {
    param.kind = Kind::Width;
    fields = firstError({entry.only({"of", "kind", "index", "name"}),
                         entry.get("index", param.index)});
  } else if (of == "workspace") {
    param.kind = Kind::Workspace;
    param.buffer = true;
    fields = firstError(
        {entry.only({"of", "kind", "dtype"}), entry.get("dtype", param.dtype)});
    if (fields && param.dtype != rt::DType::F32)
      return entry.error("the workspace is f32");
  } else if (of == "arrivals") {
    param.kind = Kind::Arrivals;
    param.buffer = true;
    std::string dtype;
    fields = firstError(
        {entry.only({"of", "kind", "dtype"}), entry.get("dtype", dtype)});
    if (fields && dtype != "i32")
      return entry.error("the arrivals counter is i32");
  } else {
    return entry.error("unknown parameter '" + of + "'");
  }
  std::string kind;
  if (Status s = firstError({fields, entry.get("kind", kind)}); !s)
    return s;
  std::string expected = param.buffer ? "buffer" : "index";
  if (kind != expected)
    return entry.error("'" + of + "' has kind '" + kind + "', not '" +
                       expected + "'");
  return Status::ok();
}

Status readKernel(const Reader &entry, Kernel &kernel) {
  int64_t shared = 0;
  std::string after;
  if (Status s = firstError(
          {entry.only({"name", "grid", "block", "static_shared_bytes", "after",
                       "overlaps_previous", "cooperative"}),
           entry.get("name", kernel.name), entry.get("grid", kernel.grid),
           entry.get("block", kernel.block),
           entry.get("static_shared_bytes", shared),
           entry.has("after") ? entry.get("after", after) : Status::ok(),
           entry.has("overlaps_previous")
               ? entry.get("overlaps_previous", kernel.overlapsPrevious)
               : Status::ok(),
           entry.has("cooperative")
               ? entry.get("cooperative", kernel.cooperative)
               : Status::ok()});
      !s)
    return s;
  if (kernel.block < 32 || kernel.block > 1024 || kernel.block % 32)
    return entry.error("block " + std::to_string(kernel.block) +
                       " is not a multiple of 32 from 32 to 1024");
  return Status::ok();
}

Status readFunction(const Reader &entry, std::string &name,
                    Function &function) {
  if (Status s = firstError(
          {entry.only({"function", "kernels", "params", "ctas",
                       "shape_constraints", "workspace_f32_elements"}),
           entry.get("function", name), entry.get("ctas", function.ctas),
           entry.get("workspace_f32_elements", function.workspace),
           entry.get("shape_constraints", function.constraints),
           entry.forEach("kernels",
                         [&](const Reader &kernel) {
                           return readKernel(kernel,
                                             function.kernels.emplace_back());
                         }),
           entry.forEach("params",
                         [&](const Reader &param) {
                           return readParam(param,
                                            function.params.emplace_back());
                         })});
      !s)
    return s;
  if (function.kernels.empty())
    return entry.error("no kernels");
  return Status::ok();
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
  Reader top(root, "");
  if (Status s =
          top.only({"format_version", "calling_convention", "functions"});
      !s)
    return s;
  if (!top.has("format_version"))
    return top.error("no format_version: it was written by an older "
                     "compiler (this launcher reads version " +
                     std::to_string(kManifestFormatVersion) + ")");
  int64_t version = 0;
  std::string convention;
  if (Status s = firstError({top.get("format_version", version),
                             top.get("calling_convention", convention)});
      !s)
    return s;
  if (version != kManifestFormatVersion)
    return top.error("format_version " + std::to_string(version) +
                     ", but this launcher reads version " +
                     std::to_string(kManifestFormatVersion) +
                     ": compile the kernels with the same Tile");
  std::map<std::string, Function> functions;
  if (Status s = top.forEach(
          "functions",
          [&](const Reader &entry) {
            std::string name;
            Function function;
            if (Status s = readFunction(entry, name, function); !s)
              return s;
            if (!functions.emplace(name, std::move(function)).second)
              return entry.error("a second function of that name");
            return Status::ok();
          });
      !s)
    return s;
  return functions;
}

} // namespace tile::ops::manifest
