// libFuzzer target for client_hello::parse. Besides memory safety it checks the property the proxy
// relies on when it re-parses a growing buffer: a prefix never answers differently from the whole,
// except by asking for more.
#include "proxy/client_hello.hpp"

#include <cstdint>
#include <cstdlib>

namespace ch = airlock::proxy::client_hello;

namespace {

// libFuzzer only reports what crashes, so a broken invariant must abort.
void require(bool holds) {
  if (!holds) std::abort();
}

bool same(const ch::result& a, const ch::result& b) {
  if (a.index() != b.index()) return false;
  if (const auto* fa = std::get_if<ch::failed>(&a)) return fa->why == std::get<ch::failed>(b).why;
  if (const auto* fa = std::get_if<ch::found>(&a)) {
    const auto& fb = std::get<ch::found>(b);
    return fa->sni == fb.sni && fa->has_sni == fb.has_sni && fa->alpn == fb.alpn && fa->ech == fb.ech &&
           fa->consumed == fb.consumed;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> input{reinterpret_cast<const std::byte*>(data), size};
  const auto whole = ch::parse(input);
  const auto* hello = std::get_if<ch::found>(&whole);
  if (hello != nullptr) {
    require(hello->consumed > 0 && hello->consumed <= size);
    require(hello->has_sni != hello->sni.empty());  // empty names are refused
    for (const auto& protocol : hello->alpn) require(!protocol.empty());
  }

  // A prefix answers need_more or exactly what the whole answered; found needs all its records.
  const std::size_t cuts[] = {size / 2, size == 0 ? 0 : size - 1, size == 0 ? 0 : data[0] % size};
  for (const std::size_t cut : cuts) {
    const auto part = ch::parse(input.first(cut));
    if (std::holds_alternative<ch::need_more>(part)) {
      require(hello == nullptr || cut < hello->consumed);
    } else {
      require(same(part, whole));
    }
  }

  // A smaller cap can only turn the answer into too_large.
  const auto capped = ch::parse(input, size % 600);
  const auto* capped_failure = std::get_if<ch::failed>(&capped);
  require(same(capped, whole) || (capped_failure != nullptr && capped_failure->why == ch::error::too_large));
  return 0;
}
