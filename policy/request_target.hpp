#pragma once
// An HTTP request target as a `paths:` rule sees it. Sans-I/O, no allocation: the path
// is decoded on the fly while it is compared, so a prefix rule is judged on what the
// origin will read, and a target that two servers could read differently (an encoded
// slash, a dot segment, "//", a backslash) is never matched against a prefix.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::policy {

enum class target_shape : std::uint8_t {
  plain,      // origin-form; its decoded path has one reading
  ambiguous,  // well-formed, but %2F, %5C, '\', "//", ".." or a "." segment in the path
  malformed,  // not origin-form ("/..."), a byte outside visible ASCII, '#', a bad or
              // control-byte %-escape: never judged, always denied (parse_error)
};

struct request_target {
  std::string_view path;  // the raw (still %-encoded) path, before '?'
  target_shape shape = target_shape::malformed;
};

// Splits and classifies a request target as sent on the request line.
request_target classify_target(std::string_view target) noexcept;

// True when the decoded `raw_path` is `prefix` or lies under it: "/v1/" covers "/v1/" and
// "/v1/x"; "/v1" covers "/v1" and "/v1/x"; neither covers "/v1x"; "/" covers every path.
// Matching is byte-exact (paths are case-sensitive). Only meaningful for a plain target.
bool path_under(std::string_view raw_path, std::string_view prefix) noexcept;

// Checks a `paths:` (or credential `path:`) prefix as written in the config: the decoded
// form, starting with '/', without '%', '?', '#', '\', spaces, control bytes, "//", ".."
// or "." segments. nullopt when fine, else what is wrong.
std::optional<std::string> check_path_prefix(std::string_view prefix);

// A method as `methods:` lists it: an upper-case token (A-Z first, then A-Z, 0-9, '-', '_').
bool is_method_token(std::string_view method) noexcept;

}  // namespace airlock::policy
