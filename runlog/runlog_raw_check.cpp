// Checks of the raw bytes HDF5 1.10 trusts, made before HDF5 reads them.
//
// Attribute messages. Opening, or even looking up, any attribute of an object
// makes HDF5 1.10 decode every attribute message in the object's header, and
// it copies an attribute's value (elements x datatype size bytes) without
// checking that the message holds that many: a damaged size reads past the
// header (found by fuzz_runlog_read). check_attribute_messages() walks the
// header first and refuses a message whose parts or value do not fit in it, or
// whose type slowpipe never writes (only integers, floats and strings).
//
// Data layouts. Opening a chunked dataset makes HDF5 1.10 divide by each chunk
// dimension: check_object_header() also refuses a layout message that is not
// version 3 or has a chunk dimension of 0 (a SIGFPE, found by fuzz_runlog_read).
//
// Variable-length strings. Run logs written before 2026-11-25 hold every
// string attribute and blob as a variable-length string: the attribute or
// dataset stores a 16-byte reference (length, collection address, object
// index) into the file's global heap, and HDF5 1.10 trusts both the reference
// and the heap collection it points to. A damaged one makes H5HG_read copy out
// of bounds or dereference a missing object (a SEGV), and a free-space entry of
// size 0 makes the collection parser loop forever (docs/hdf5-schema.md, "Older
// logs"). New logs hold no variable-length data. check_variable_string() finds
// the reference (in the attribute message, or in a contiguous dataset's
// storage), walks the collection the way HDF5 1.10 parses it, and refuses any
// collection HDF5 would walk out of bounds or forever, and any reference to an
// object that is missing, is free space, or whose size differs from the
// reference's length.
//
// Left out: files with 4-byte addresses or lengths, a user block, version-2
// object headers, shared attribute messages, dense attribute storage, compact
// or chunked blobs. slowpipe never writes those; where the checks would need to
// read them, the object is refused rather than read unchecked. Other messages
// (a dataset's datatype and dataspace, the rest of its layout) are left to
// HDF5 and to the schema checks in runlog_read.cpp.
#include <H5Cpp.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/errors.h"
#include "runlog/internal/runlog_tables.h"

namespace slowpipe::runlog::detail {
namespace {

constexpr uint64_t kHeapIdBytes = 16;       // length (4), collection address (8), index (4)
constexpr uint64_t kCollectionHeader = 16;  // "GCOL", version, 3 reserved, size (8)
constexpr uint64_t kObjectHeader = 16;      // index (2), references (2), 4 reserved, size (8)
constexpr uint16_t kContinuationMessage = 0x10;
constexpr uint16_t kAttributeMessage = 0x0C;
constexpr uint16_t kLayoutMessage = 0x08;
constexpr int kMaxHeaderChunks = 64;

// Little-endian reads of a file region held in memory.
uint64_t le(const std::vector<uint8_t>& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b[at + static_cast<size_t>(i)];
  return v;
}

class RawFile {
 public:
  RawFile(const std::string& path, const std::string& what)
      : in_(path, std::ios::binary), what_(what) {
    in_.seekg(0, std::ios::end);
    size_ = in_ ? static_cast<uint64_t>(in_.tellg()) : 0;
  }
  uint64_t size() const { return size_; }
  // `bytes` bytes at `offset`; DataError when they are not all in the file.
  std::vector<uint8_t> read(uint64_t offset, uint64_t bytes, const char* part) {
    if (offset > size_ || bytes > size_ - offset)
      refuse(std::string(part) + " lies past the end of the file");
    std::vector<uint8_t> out(static_cast<size_t>(bytes));
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(bytes));
    if (!in_) refuse(std::string(part) + " cannot be read");
    return out;
  }
  [[noreturn]] void refuse(const std::string& why) const { throw DataError(what_ + ": " + why); }

 private:
  std::ifstream in_;
  std::string what_;
  uint64_t size_ = 0;
};

// The superblock must say: no user block (base address 0), 8-byte addresses
// and lengths, as every slowpipe log has.
void check_superblock(RawFile& file) {
  const std::vector<uint8_t> sb = file.read(0, 40, "the superblock");
  if (std::memcmp(sb.data(), "\x89HDF\r\n\x1a\n", 8) != 0) file.refuse("the file has a user block");
  const unsigned version = sb[8];
  size_t sizes_at = 0, base_at = 0;
  if (version == 0 || version == 1) {
    sizes_at = 13;
    base_at = version == 0 ? 24 : 28;
  } else if (version == 2 || version == 3) {
    sizes_at = 9;
    base_at = 12;
  } else {
    file.refuse("unknown superblock version " + std::to_string(version));
  }
  if (sb[sizes_at] != 8 || sb[sizes_at + 1] != 8)
    file.refuse("the file does not use 8-byte addresses");
  if (le(sb, base_at, 8) != 0) file.refuse("the file's base address is not 0");
}

struct AttributeMessage {
  std::string name;
  std::vector<uint8_t> value;  // elements x datatype size bytes, as stored
};

uint64_t padded(unsigned version, uint64_t n) {
  return version == 1 ? (n + 7) / 8 * 8 : n;
}

// Elements of the dataspace message in `m` at [at, at + bytes); refuses a
// message whose dimensions do not fit in it.
uint64_t dataspace_elements(RawFile& file, const std::vector<uint8_t>& m, size_t at, uint64_t bytes,
                            const std::string& name) {
  if (bytes < 8) file.refuse("attribute '" + name + "' has a truncated dataspace");
  const unsigned version = m[at], rank = m[at + 1], flags = m[at + 2];
  if ((version != 1 && version != 2) || rank > 32) {
    file.refuse("attribute '" + name + "' has a dataspace slowpipe never writes");
  }
  if (version == 2 && m[at + 3] == 2) return 0;  // a null dataspace
  const uint64_t dims_at = version == 1 ? 8 : 4;
  const uint64_t dims_bytes = uint64_t{8} * rank * ((flags & 1) != 0 ? 2 : 1);
  if (dims_at + dims_bytes > bytes) {
    file.refuse("attribute '" + name + "' has a dataspace longer than its message");
  }
  uint64_t n = 1;  // rank 0: a scalar
  for (unsigned d = 0; d < rank; ++d) {
    const uint64_t dim = le(m, at + dims_at + size_t{8} * d, 8);
    if (dim != 0 && n > (uint64_t{1} << 32) / dim) {
      file.refuse("attribute '" + name + "' has more elements than a message holds");
    }
    n *= dim;
  }
  return n;
}

// A data layout message (version 3, as HDF5 1.8+ writes it): a chunked one
// must have every chunk dimension non-zero (HDF5 1.10 divides by them when it
// opens the dataset: a zero is a SIGFPE, found by fuzz_runlog_read).
void check_layout(RawFile& file, const std::vector<uint8_t>& m, size_t body, uint64_t bytes) {
  if (bytes < 2 || m[body] != 3)
    file.refuse("its data layout is not version 3 (slowpipe writes 3)");
  if (m[body + 1] != 2) return;  // compact or contiguous
  const uint64_t rank = bytes >= 3 ? m[body + 2] : 0;
  if (rank == 0 || 3 + 8 + 4 * rank > bytes) file.refuse("its chunked layout is truncated");
  for (uint64_t d = 0; d < rank; ++d) {
    if (le(m, body + 11 + 4 * d, 4) == 0) file.refuse("its chunked layout has a chunk size of 0");
  }
}

// The attribute message of `bytes` at `body` in header chunk `m` (`flags`:
// its header flags), checked to hold its parts and its whole value, with an
// integer, float or string (fixed- or variable-length) type.
AttributeMessage parse_attribute(RawFile& file, const std::vector<uint8_t>& m, size_t body,
                                 uint64_t bytes, uint64_t flags) {
  const size_t end = body + bytes;
  if (bytes < 8) file.refuse("an attribute message is truncated");
  const unsigned version = m[body];
  if (version < 1 || version > 3) file.refuse("an attribute message has an unknown version");
  if ((flags & 0x02) != 0 || (version >= 2 && (m[body + 1] & 0x03) != 0)) {
    file.refuse("an attribute message is shared (slowpipe never writes one)");
  }
  const uint64_t name_bytes = le(m, body + 2, 2), type_bytes = le(m, body + 4, 2),
                 space_bytes = le(m, body + 6, 2);
  const uint64_t name_at = body + (version >= 3 ? 9 : 8);
  const uint64_t type_at = name_at + padded(version, name_bytes);
  const uint64_t space_at = type_at + padded(version, type_bytes);
  const uint64_t data_at = space_at + padded(version, space_bytes);
  if (name_bytes == 0 || type_bytes < 8 || data_at > end) {
    file.refuse("an attribute message is shorter than its name, type and dataspace");
  }
  const char* name_chars = reinterpret_cast<const char*>(m.data() + name_at);
  AttributeMessage a;
  a.name.assign(name_chars, strnlen(name_chars, static_cast<size_t>(name_bytes)));
  const unsigned type_class = m[type_at] & 0x0F;
  const bool string = type_class == 3 || (type_class == 9 && (m[type_at + 1] & 0x0F) == 1);
  if (type_class != 0 && type_class != 1 && !string) {
    file.refuse("attribute '" + a.name + "' has a type slowpipe never writes (class " +
                std::to_string(type_class) + ")");
  }
  const uint64_t type_size = le(m, type_at + 4, 4);
  const uint64_t elements = dataspace_elements(file, m, space_at, space_bytes, a.name);
  if (type_size == 0 || elements > (end - data_at) / type_size) {
    file.refuse("attribute '" + a.name + "' claims " + std::to_string(elements) + " x " +
                std::to_string(type_size) + " bytes, more than its message holds");
  }
  a.value.assign(m.begin() + static_cast<std::ptrdiff_t>(data_at),
                 m.begin() + static_cast<std::ptrdiff_t>(data_at + elements * type_size));
  return a;
}

// Every attribute message of the version-1 object header at `header`, each
// checked by parse_attribute; a chunked layout message is checked too.
std::vector<AttributeMessage> attribute_messages(RawFile& file, uint64_t header) {
  const std::vector<uint8_t> prefix = file.read(header, 16, "the object header");
  if (prefix[0] != 1) file.refuse("its object header is not version 1 (slowpipe writes version 1)");
  std::vector<std::pair<uint64_t, uint64_t>> chunks = {{header + 16, le(prefix, 8, 4)}};
  std::set<uint64_t> seen = {header + 16};
  std::vector<AttributeMessage> out;
  for (size_t c = 0; c < chunks.size(); ++c) {
    if (c >= static_cast<size_t>(kMaxHeaderChunks)) {
      file.refuse("its object header has too many chunks");
    }
    const std::vector<uint8_t> m =
        file.read(chunks[c].first, chunks[c].second, "an object header chunk");
    for (size_t at = 0; at + 8 <= m.size();) {
      const uint64_t type = le(m, at, 2), bytes = le(m, at + 2, 2), flags = m[at + 4];
      const size_t body = at + 8;
      if (bytes > m.size() - body) file.refuse("an object header message runs past its chunk");
      at = body + bytes;  // the next message
      if (type == kContinuationMessage) {
        if (bytes < 16) file.refuse("an object header continuation is truncated");
        const uint64_t where = le(m, body, 8);
        if (seen.insert(where).second) chunks.emplace_back(where, le(m, body + 8, 8));
        continue;
      }
      if (type == kLayoutMessage) check_layout(file, m, body, bytes);
      if (type != kAttributeMessage) continue;
      out.push_back(parse_attribute(file, m, body, bytes, flags));
    }
  }
  return out;
}

// The object header address of `object`, after checking the superblock.
uint64_t header_of(RawFile& file, hid_t object) {
  check_superblock(file);
  H5O_info_t info;
  if (H5Oget_info2(object, &info, H5O_INFO_BASIC) < 0) {
    file.refuse("its object header cannot be found");
  }
  return info.addr;
}

// The name of the file holding `id`.
std::string file_name(hid_t id, const std::string& what) {
  std::vector<char> name(4096, '\0');
  const ssize_t length = H5Fget_name(id, name.data(), name.size());
  if (length <= 0 || static_cast<size_t>(length) >= name.size()) {
    throw DataError(what + ": the file's name cannot be read");
  }
  return name.data();
}

// The global heap reference in `id` (16 bytes at its start): the object must
// be one HDF5 1.10 can read without running past its collection.
void check_reference(RawFile& file, const std::vector<uint8_t>& id) {
  if (id.size() < kHeapIdBytes) file.refuse("its stored reference is shorter than 16 bytes");
  const uint64_t length = le(id, 0, 4), collection = le(id, 4, 8), index = le(id, 12, 4);
  if (collection == 0) return;  // a null string: HDF5 reads no heap
  const std::vector<uint8_t> head =
      file.read(collection, kCollectionHeader, "its global heap collection");
  if (std::memcmp(head.data(), "GCOL", 4) != 0 || head[4] != 1) {
    file.refuse("its reference does not point at a global heap collection");
  }
  const uint64_t size = le(head, 8, 8);
  if (size < kCollectionHeader) file.refuse("its global heap collection is too small");
  const std::vector<uint8_t> heap = file.read(collection, size, "its global heap collection");
  // HDF5 1.10's walk (H5HG cache deserialize): a tail shorter than an object
  // header is free space; object 0 is free space whose size includes its
  // header; any other object is a header plus its size rounded up to 8 bytes.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> objects;  // index -> (offset, size)
  for (uint64_t at = kCollectionHeader; at < size;) {
    if (size - at < kObjectHeader) break;
    const uint64_t i = le(heap, static_cast<size_t>(at), 2);
    const uint64_t bytes = le(heap, static_cast<size_t>(at) + 8, 8);
    if (bytes > size) file.refuse("a global heap object is larger than its collection");
    const uint64_t need = i > 0 ? kObjectHeader + (bytes + 7) / 8 * 8 : bytes;
    if (need == 0) file.refuse("its global heap has a free-space entry of size 0");
    if (need > size - at) file.refuse("a global heap object runs past its collection");
    objects[i] = {at, bytes};
    at += need;
  }
  const auto found = objects.find(index);
  if (index == 0 || found == objects.end()) {
    file.refuse("its global heap has no object " + std::to_string(index));
  }
  if (found->second.second != length) {
    file.refuse("its global heap object holds " + std::to_string(found->second.second) +
                " bytes, the reference says " + std::to_string(length));
  }
}

}  // namespace

void check_attribute_messages(hid_t object, const std::string& what) {
  RawFile file(file_name(object, what), what + " has a damaged object header");
  attribute_messages(file, header_of(file, object));
}

void check_object_header(hid_t parent, const std::string& name, const std::string& what) {
  RawFile file(file_name(parent, what), what + " has a damaged object header");
  check_superblock(file);
  H5O_info_t info;
  if (H5Oget_info_by_name2(parent, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    file.refuse("it cannot be found");
  }
  attribute_messages(file, info.addr);
}

void check_variable_string(hid_t owner, hid_t id, bool attribute, const std::string& what) {
  RawFile file(file_name(id, what),
               what + " is a variable-length string (older run log) that cannot be read safely");
  if (attribute) {
    const ssize_t n = H5Aget_name(id, 0, nullptr);
    std::vector<char> name(n > 0 ? static_cast<size_t>(n) + 1 : 1, '\0');
    if (n <= 0 || H5Aget_name(id, name.size(), name.data()) != n) {
      file.refuse("its name cannot be read");
    }
    bool found = false;
    for (const auto& a : attribute_messages(file, header_of(file, owner))) {
      if (a.name != name.data()) continue;
      found = true;
      check_reference(file, a.value);
    }
    if (!found) file.refuse("its value is not in its object header (dense attribute storage?)");
    return;
  }
  check_superblock(file);
  const hid_t plist = H5Dget_create_plist(id);
  const H5D_layout_t layout = plist < 0 ? H5D_LAYOUT_ERROR : H5Pget_layout(plist);
  if (plist >= 0) H5Pclose(plist);
  if (layout != H5D_CONTIGUOUS) file.refuse("it is not stored contiguously");
  const haddr_t offset = H5Dget_offset(id);
  if (offset == HADDR_UNDEF) file.refuse("it has no stored data");
  check_reference(file, file.read(offset, kHeapIdBytes, "its stored reference"));
}

}  // namespace slowpipe::runlog::detail
