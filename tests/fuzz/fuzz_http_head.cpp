// libFuzzer target for http_head::parse. Besides memory safety it checks the property the proxy
// relies on when it re-parses a growing buffer: a prefix never answers differently from the whole,
// except by asking for more.
#include "proxy/http_head.hpp"

#include <cstdint>
#include <cstdlib>

namespace hh = airlock::proxy::http_head;

namespace {

// libFuzzer only reports what crashes, so a broken invariant must abort.
void require(bool holds) {
  if (!holds) std::abort();
}

bool same(const hh::result& a, const hh::result& b) {
  if (a.index() != b.index()) return false;
  if (const auto* fa = std::get_if<hh::failed>(&a)) return fa->why == std::get<hh::failed>(b).why;
  if (const auto* ra = std::get_if<hh::request>(&a)) {
    const auto& rb = std::get<hh::request>(b);
    return ra->method == rb.method && ra->target == rb.target && ra->host == rb.host && ra->port == rb.port &&
           ra->absolute_form == rb.absolute_form && ra->head_size == rb.head_size && ra->body == rb.body &&
           ra->content_length == rb.content_length && ra->upgrade == rb.upgrade;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> input{reinterpret_cast<const std::byte*>(data), size};
  const auto whole = hh::parse(input);
  const auto* req = std::get_if<hh::request>(&whole);
  if (req != nullptr) {
    require(req->head_size >= 4 && req->head_size <= size && req->head_size <= hh::default_max_size);
    require(!req->method.empty() && !req->target.empty() && !req->host.empty());
    require(!req->port || *req->port != 0);
    require(!(req->absolute_form && req->method == "CONNECT"));
  }

  // A prefix answers need_more or exactly what the whole answered; a request needs its whole head.
  const std::size_t cuts[] = {size / 2, size == 0 ? 0 : size - 1, size == 0 ? 0 : data[0] % size};
  for (const std::size_t cut : cuts) {
    const auto part = hh::parse(input.first(cut));
    if (std::holds_alternative<hh::need_more>(part)) {
      require(req == nullptr || cut < req->head_size);
    } else {
      require(same(part, whole));
    }
  }

  // A smaller cap can only turn the answer into too_large.
  const auto capped = hh::parse(input, size % 300);
  const auto* capped_failure = std::get_if<hh::failed>(&capped);
  require(same(capped, whole) || (capped_failure != nullptr && capped_failure->why == hh::error::too_large));
  return 0;
}
