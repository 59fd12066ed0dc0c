//===- BenchTool.cpp - what tile-bench's three benchmarks share -----------===//
//
// The event-timed alternating steps of the MLP benchmarks, and the JSON
// envelope of every benchmark (benchmarks/README.md, "Results"):
//
//   {"schema": "tile-benchmark/1", "benchmark": ..., "device": ...,
//    "date": ISO-8601 (UTC), "git": the build's revision or null,
//    "command": [argv],
//    "settings": {...}, "results": [{"case": ..., ..., "ms": ...}],
//    "extra": {...}}
//
//===----------------------------------------------------------------------===//

#include "BenchTool.h"

#include "tile/Runtime/HostFloat.h"
#include "tile/Version/Version.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>

using namespace tile;

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

rt::Status fillRandom(rt::DeviceBuffer &buffer, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<uint16_t> block(8 << 20);
  for (uint16_t &value : block)
    value = rt::toBF16(uniform(rng));
  size_t blockBytes = block.size() * 2;
  for (size_t at = 0; at < buffer.size(); at += blockBytes)
    if (rt::Status s = buffer.copyFromHost(
            block.data(), std::min(blockBytes, buffer.size() - at), at);
        !s)
      return s;
  return rt::Status::ok();
}

rt::StatusOr<std::vector<std::optional<double>>>
alternatingMedians(const rt::Device &device, int iterations,
                   const std::vector<std::function<rt::Status()>> &steps) {
  auto timer = rt::EventTimer::create(device);
  if (!timer)
    return timer.takeStatus();
  std::vector<std::vector<double>> samples(steps.size());
  for (int i = 0; i < iterations; ++i)
    for (size_t which = 0; which < steps.size(); ++which) {
      if (!steps[which])
        continue;
      if (rt::Status s = timer->start(); !s)
        return s;
      if (rt::Status s = steps[which](); !s)
        return s;
      auto ms = timer->stop();
      if (!ms)
        return ms.takeStatus();
      samples[which].push_back(*ms);
    }
  std::vector<std::optional<double>> medians(steps.size());
  for (size_t which = 0; which < steps.size(); ++which) {
    std::vector<double> &times = samples[which];
    if (times.empty())
      continue;
    std::sort(times.begin(), times.end());
    medians[which] = times[times.size() / 2];
  }
  return medians;
}

namespace {
std::vector<std::string> commandLine;

/// Now, as 2026-11-25T10:00:00+00:00 (what Python's isoformat writes).
std::string isoDate() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S+00:00", &utc);
  return text;
}

/// The revision of the sources built (git describe, as --version prints
/// it), or null where the build had none.
llvm::json::Value revisionValue() {
  std::string revision = tile::gitRevision();
  if (revision == "unknown")
    return nullptr;
  return revision;
}

/// `value` into `json`, numbers that are not integers with 12 significant
/// digits (non-finite ones as null), an object's keys in sorted order.
void writeValue(llvm::json::OStream &json, const llvm::json::Value &value) {
  if (const llvm::json::Array *array = value.getAsArray()) {
    json.array([&] {
      for (const llvm::json::Value &element : *array)
        writeValue(json, element);
    });
    return;
  }
  if (const llvm::json::Object *object = value.getAsObject()) {
    std::vector<std::string> keys;
    for (const auto &field : *object)
      keys.push_back(field.first.str());
    std::sort(keys.begin(), keys.end());
    json.object([&] {
      for (const std::string &key : keys) {
        json.attributeBegin(key);
        writeValue(json, *object->get(key));
        json.attributeEnd();
      }
    });
    return;
  }
  if (value.kind() == llvm::json::Value::Number && !value.getAsInteger()) {
    double number = *value.getAsNumber();
    if (!std::isfinite(number))
      json.value(nullptr);
    else
      json.rawValue(
          [&](llvm::raw_ostream &os) { os << llvm::format("%.12g", number); });
    return;
  }
  json.value(value);
}

void writeFields(llvm::json::OStream &json, const JsonFields &fields) {
  json.object([&] {
    for (const auto &[key, value] : fields) {
      json.attributeBegin(key);
      writeValue(json, value);
      json.attributeEnd();
    }
  });
}
} // namespace

void setCommandLine(int argc, char **argv) {
  commandLine.assign(argv, argv + argc);
}

rt::Status writeReport(const std::string &path, const BenchReport &report) {
  std::error_code error;
  llvm::raw_fd_ostream os(path, error);
  if (error)
    return rt::Status::error("cannot write " + path + ": " + error.message());
  llvm::json::Array command;
  for (const std::string &argument : commandLine)
    command.push_back(argument);
  JsonFields envelope;
  envelope.emplace_back("schema", "tile-benchmark/1");
  envelope.emplace_back("benchmark", report.benchmark);
  envelope.emplace_back("device", report.device);
  envelope.emplace_back("date", isoDate());
  envelope.emplace_back("git", revisionValue());
  envelope.emplace_back("command", std::move(command));
  llvm::json::OStream json(os, /*IndentSize=*/1);
  json.object([&] {
    for (const auto &[key, value] : envelope) {
      json.attributeBegin(key);
      writeValue(json, value);
      json.attributeEnd();
    }
    json.attributeBegin("settings");
    writeFields(json, report.settings);
    json.attributeEnd();
    json.attributeArray("results", [&] {
      for (const JsonFields &row : report.results)
        writeFields(json, row);
    });
    if (!report.extra.empty()) {
      json.attributeBegin("extra");
      writeFields(json, report.extra);
      json.attributeEnd();
    }
  });
  os << "\n";
  os.close();
  if (os.has_error())
    return rt::Status::error("cannot write " + path + ": " +
                             os.error().message());
  return rt::Status::ok();
}
