//===- Npy.cpp - NumPy .npy files in and out of the evaluator ------------===//
//
// The format (numpy.lib.format): the magic "\x93NUMPY", a major and minor
// version byte, the header's length (2 bytes in version 1, 4 after), then
// the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces to a multiple of 64 bytes and ended by a newline, then
// the elements.
//
//===----------------------------------------------------------------------===//

#include "tile/Interp/Npy.h"
#include "tile/Interp/Evaluator.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace tile::interp;

namespace {
constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

llvm::Error fileError(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

/// The text after `key` up to `end` in the header (without either).
std::optional<llvm::StringRef> field(llvm::StringRef header,
                                     llvm::StringRef key, char end) {
  size_t at = header.find(key);
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef rest = header.drop_front(at + key.size()).ltrim(" :");
  size_t close = rest.find(end, 1);
  if (close == llvm::StringRef::npos)
    return std::nullopt;
  return rest.take_front(close + 1);
}

/// How to read one little-endian element of a dtype NumPy spells `descr`
/// as a double (exact for every one listed; 64-bit integers below 2^53,
/// which every shape and index is).
struct ElementReader {
  const char *descr;
  size_t size;
  double (*read)(const char *data);
};

template <typename T> double load(const char *data) {
  T value;
  std::memcpy(&value, data, sizeof(value));
  return static_cast<double>(value);
}

double loadF16(const char *data) {
  uint16_t bits;
  std::memcpy(&bits, data, sizeof(bits));
  return f16BitsToFloat(bits);
}

constexpr ElementReader kReaders[] = {
    {"<f8", 8, load<double>},   {"<f4", 4, load<float>},
    {"<f2", 2, loadF16},        {"|b1", 1, load<uint8_t>},
    {"|u1", 1, load<uint8_t>},  {"|i1", 1, load<int8_t>},
    {"<u2", 2, load<uint16_t>}, {"<i2", 2, load<int16_t>},
    {"<u4", 4, load<uint32_t>}, {"<i4", 4, load<int32_t>},
    {"<u8", 8, load<uint64_t>}, {"<i8", 8, load<int64_t>},
};

const ElementReader *readerFor(llvm::StringRef descr) {
  for (const ElementReader &reader : kReaders)
    if (descr == reader.descr)
      return &reader;
  return nullptr;
}
} // namespace

llvm::Expected<NpyArray> tile::interp::readNpy(llvm::StringRef path) {
  // Only a regular file of a size the evaluator can hold: a FIFO, a device
  // (/dev/zero, /dev/stdin) or a terminal would be read without end.
  llvm::sys::fs::file_status status;
  if (std::error_code error = llvm::sys::fs::status(path, status))
    return fileError(path, error.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return fileError(path, "not a regular file");
  constexpr uint64_t kMaxBytes = uint64_t(kMaxElements) * 8 + (1u << 20);
  if (status.getSize() > kMaxBytes)
    return fileError(path, "holds " + llvm::Twine(status.getSize()) +
                               " bytes, more than the evaluator's limit of " +
                               llvm::Twine(kMaxElements) + " elements");
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return fileError(path, file.getError().message());
  llvm::StringRef bytes = (*file)->getBuffer();
  if (bytes.size() < kMagicSize + 4 ||
      !bytes.starts_with(llvm::StringRef(kMagic, kMagicSize)))
    return fileError(path, "not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(bytes[kMagicSize]);
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3)
    return fileError(path, "unsupported .npy version " + llvm::Twine(major));
  size_t start = kMagicSize + 2 + lengthBytes;
  if (bytes.size() < start)
    return fileError(path, "truncated header");
  size_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerLength |=
        size_t(static_cast<unsigned char>(bytes[kMagicSize + 2 + i]))
        << (8 * i);
  if (bytes.size() < start + headerLength)
    return fileError(path, "truncated header");
  llvm::StringRef header = bytes.substr(start, headerLength);

  NpyArray array;
  auto descr = field(header, "'descr'", '\'');
  auto fortran = field(header, "'fortran_order'", 'e');
  auto shape = field(header, "'shape'", ')');
  if (!descr || !fortran || !shape)
    return fileError(path, "malformed header '" + header.rtrim() + "'");
  array.descr = descr->trim("'").str();
  if (*fortran != "False")
    return fileError(path, "Fortran-order arrays are not read; save a "
                           "C-contiguous array (numpy.ascontiguousarray)");
  llvm::SmallVector<llvm::StringRef> dims;
  shape->trim("()").split(dims, ',', -1, /*KeepEmpty=*/false);
  size_t count = 1;
  for (llvm::StringRef dim : dims) {
    int64_t size;
    if (dim.trim().getAsInteger(10, size) || size < 0)
      return fileError(path, "malformed shape " + *shape);
    array.shape.push_back(size);
    count *= static_cast<size_t>(size);
  }
  const ElementReader *reader = readerFor(array.descr);
  if (!reader)
    return fileError(path, "dtype '" + array.descr +
                               "' is not read (little-endian float16/32/64, "
                               "int8-64, uint8-64 or bool are)");
  size_t size = reader->size;
  llvm::StringRef body = bytes.drop_front(start + headerLength);
  if (body.size() < count * size)
    return fileError(path, "holds " + llvm::Twine(body.size() / size) +
                               " elements; its shape says " +
                               llvm::Twine(count));
  array.values.resize(count);
  for (size_t i = 0; i < count; ++i)
    array.values[i] = reader->read(body.data() + i * size);
  return array;
}

llvm::Error tile::interp::writeNpy(llvm::StringRef path,
                                   llvm::ArrayRef<int64_t> shape,
                                   llvm::ArrayRef<double> values,
                                   StorageType storage) {
  const char *descr = storage == StorageType::F64   ? "<f8"
                      : storage == StorageType::F16 ? "<f2"
                                                    : "<f4";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (";
  for (int64_t size : shape)
    header += std::to_string(size) + ",";
  if (shape.size() > 1)
    header.pop_back(); // (3,) for rank 1, (3,4) otherwise
  header += "), }";
  // Magic, version, length, header and newline: a multiple of 64 bytes.
  size_t unpadded = kMagicSize + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  std::error_code error;
  llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_None);
  if (error)
    return fileError(path, error.message());
  os.write(kMagic, kMagicSize);
  os << '\x01' << '\x00';
  os << static_cast<char>(header.size() & 0xff)
     << static_cast<char>(header.size() >> 8);
  os << header;
  for (double value : values) {
    value = roundTo(storage, value); // what a kernel reading it sees
    if (storage == StorageType::F64) {
      os.write(reinterpret_cast<const char *>(&value), 8);
    } else if (storage == StorageType::F16) {
      uint16_t bits = floatToF16Bits(static_cast<float>(value));
      os.write(reinterpret_cast<const char *>(&bits), 2);
    } else {
      float single = static_cast<float>(value);
      os.write(reinterpret_cast<const char *>(&single), 4);
    }
  }
  os.close();
  if (os.has_error())
    return fileError(path, os.error().message());
  return llvm::Error::success();
}
