#include "record/packed.hpp"

#include "record/fields.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace airlock::record {
namespace {

using system_time = std::chrono::system_clock::time_point;

// Numbers as LEB128 (most are 0 or small), strings as a length and the bytes.
struct packer {
  std::string& out;
  void number(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    out.push_back(static_cast<char>(v));
  }
  void operator()(const std::string& s) {
    number(s.size());
    out.append(s);
  }
  void operator()(std::uint64_t v) { number(v); }
  void operator()(unsigned v) { number(v); }
  void operator()(system_time t) { number(static_cast<std::uint64_t>(t.time_since_epoch().count())); }
  template <typename E>
    requires std::is_enum_v<E>
  void operator()(E e) { number(static_cast<std::uint64_t>(e)); }
  template <typename T>
  void operator()(const std::optional<T>& o) {
    number(o.has_value());
    if (o) (*this)(*o);
  }
  template <typename T>
  void operator()(const std::vector<T>& v) {
    number(v.size());
    for (const auto& x : v) (*this)(x);
  }
  template <typename A, typename B>
  void operator()(const std::pair<A, B>& p) {
    (*this)(p.first);
    (*this)(p.second);
  }
};

struct unpacker {
  std::string_view in;
  std::uint64_t number() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; !in.empty() && shift < 64; shift += 7) {
      const auto b = static_cast<unsigned char>(in.front());
      in.remove_prefix(1);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    return v;
  }
  void operator()(std::string& s) {
    const auto length = number();  // first: it consumes the bytes in.size() must not count
    const auto n = std::min<std::uint64_t>(length, in.size());
    s.assign(in.substr(0, n));
    in.remove_prefix(n);
  }
  void operator()(std::uint64_t& v) { v = number(); }
  void operator()(unsigned& v) { v = static_cast<unsigned>(number()); }
  void operator()(system_time& t) { t = system_time(system_time::duration(static_cast<system_time::rep>(number()))); }
  template <typename E>
    requires std::is_enum_v<E>
  void operator()(E& e) { e = static_cast<E>(number()); }
  template <typename T>
  void operator()(std::optional<T>& o) {
    o.reset();
    if (number() != 0) (*this)(o.emplace());
  }
  template <typename T>
  void operator()(std::vector<T>& v) {
    v.clear();
    for (auto n = number(); n > 0 && !in.empty(); --n) (*this)(v.emplace_back());
  }
  template <typename A, typename B>
  void operator()(std::pair<A, B>& p) {
    (*this)(p.first);
    (*this)(p.second);
  }
};

}  // namespace

std::string pack(const decision_record& r) {
  // Built in a reused buffer, then copied once at its exact size: the copy is what a
  // relayed connection holds.
  thread_local std::string scratch;
  scratch.clear();
  packer p{scratch};
  each_field(p, r);
  return std::string(scratch);
}

decision_record unpack(std::string_view packed) {
  decision_record r;
  unpacker u{packed};
  each_field(u, r);
  return r;
}

}  // namespace airlock::record
