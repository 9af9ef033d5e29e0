#pragma once
// HTTPS/SVCB records (RFC 9460) as the answer filter passes them on: pure functions over
// rdata, so they are fuzzed on their own (tests/fuzz/fuzz_svcb.cpp).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::dns {

// Length of the uncompressed wire name that starts `s`, if it is well formed. No pointers
// are accepted: CNAME rdata is stored decompressed by the parser, and an SVCB TargetName
// must not be compressed at all (RFC 9460 section 2.2).
std::optional<std::size_t> uncompressed_name_length(std::string_view s) noexcept;

// The HTTPS/SVCB rdata a client may see, or nullopt when the record must go: its params
// do not parse (nothing is passed on that was not checked), or the rewrite removed a key it
// declares mandatory. Taken out: `ech` (it would hide the SNI airlock decides on), the
// address hints (addresses the A/AAAA filter never saw) and, when `drop_h3`, "h3*" ALPN
// ids. Only the structure and the keys acted on are checked; other values pass verbatim.
std::optional<std::string> filter_svcb(std::string_view rdata, bool drop_h3);

}  // namespace airlock::dns
