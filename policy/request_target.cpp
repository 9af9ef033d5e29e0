#include "policy/request_target.hpp"

namespace airlock::policy {
namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Walks a path one decoded byte at a time.
class decoder {
 public:
  explicit decoder(std::string_view raw) noexcept : raw_(raw) {}
  bool done() const noexcept { return at_ >= raw_.size(); }
  // The next decoded byte; `encoded` says whether it was written as %XX.
  unsigned char next(bool& encoded) noexcept {
    // A '%' without two hex digits stays itself (classify_target has refused such targets).
    if (raw_[at_] == '%' && at_ + 2 < raw_.size() && hex_value(raw_[at_ + 1]) >= 0 && hex_value(raw_[at_ + 2]) >= 0) {
      encoded = true;
      const auto v = static_cast<unsigned char>(hex_value(raw_[at_ + 1]) * 16 + hex_value(raw_[at_ + 2]));
      at_ += 3;
      return v;
    }
    encoded = false;
    return static_cast<unsigned char>(raw_[at_++]);
  }

 private:
  std::string_view raw_;
  std::size_t at_ = 0;
};

}  // namespace

request_target classify_target(std::string_view target) noexcept {
  request_target out;
  // Origin-form only: absolute-form, authority-form and '*' name no path of this origin.
  if (target.empty() || target.front() != '/') return out;
  for (std::size_t i = 0; i < target.size(); ++i) {
    const auto c = static_cast<unsigned char>(target[i]);
    if (c <= 0x20 || c >= 0x7f || c == '#') return out;
    if (c == '%' && (i + 2 >= target.size() || hex_value(target[i + 1]) < 0 || hex_value(target[i + 2]) < 0))
      return out;
  }
  out.path = target.substr(0, target.find('?'));
  bool ambiguous = false;
  std::size_t segment = 0, dots = 0;  // length of the current segment, and its dots
  unsigned char prev = 0;
  for (decoder d(out.path); !d.done();) {
    bool encoded = false;
    const auto c = d.next(encoded);
    if (c < 0x20 || c == 0x7f) return out;  // %00, %0A, ...: a smuggling attempt, not a path
    if (c == '\\' || (c == '/' && encoded) || (c == '.' && prev == '.')) ambiguous = true;
    if (c == '/') {
      if (prev == '/' || (segment > 0 && segment == dots)) ambiguous = true;
      segment = dots = 0;
    } else {
      ++segment;
      if (c == '.') ++dots;
    }
    prev = c;
  }
  if (segment > 0 && segment == dots) ambiguous = true;  // a trailing "/." or "/.."
  out.shape = ambiguous ? target_shape::ambiguous : target_shape::plain;
  return out;
}

bool path_under(std::string_view raw_path, std::string_view prefix) noexcept {
  decoder d(raw_path);
  for (char p : prefix) {
    if (d.done()) return false;
    bool encoded = false;
    if (d.next(encoded) != static_cast<unsigned char>(p)) return false;
  }
  if (prefix.ends_with('/') || d.done()) return true;
  bool encoded = false;
  return d.next(encoded) == '/';
}

std::optional<std::string> check_path_prefix(std::string_view prefix) {
  if (prefix.empty() || prefix.front() != '/') return "a path starts with '/'";
  for (char ch : prefix) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) return "spaces and control characters cannot appear in a request path";
    if (c == '%') return "write the path decoded (airlock decodes the request's %-escapes before comparing)";
    if (c == '?' || c == '#') return "a path prefix ends before any '?' query or '#' fragment";
    if (c == '\\') return "a backslash is not a path separator; requests containing one are refused";
  }
  if (prefix.find("//") != std::string_view::npos || prefix.find("..") != std::string_view::npos ||
      prefix.ends_with("/.") || prefix.find("/./") != std::string_view::npos)
    return "no '//', '..' or '.' segments: requests containing them are refused, so the prefix could never match";
  return std::nullopt;
}

bool is_method_token(std::string_view method) noexcept {
  if (method.empty() || method.front() < 'A' || method.front() > 'Z') return false;
  for (char c : method)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
}

}  // namespace airlock::policy
