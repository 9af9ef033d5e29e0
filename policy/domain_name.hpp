#pragma once
// A hostname in the one canonical form every comparison uses: ASCII (IDNA names as
// punycode), lowercase, no trailing dot. It can only be built through parse(), so
// policy, DNS and proxy never compare raw strings.
#include <boost/system/result.hpp>
#include <string>
#include <string_view>

namespace airlock::policy {

enum class name_error { empty, too_long, empty_label, label_too_long, bad_character, bad_idna };

std::string_view to_string(name_error e) noexcept;

class domain_name {
 public:
  // Canonicalises `text` (one trailing dot allowed, any case, UTF-8 IDNA or punycode).
  static boost::system::result<domain_name, name_error> parse(std::string_view text) noexcept;

  const std::string& str() const noexcept { return text_; }
  bool operator==(const domain_name&) const = default;

 private:
  explicit domain_name(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

// True when `text` is an IPv4 or IPv6 literal (with or without brackets): such a "name"
// is an address and is judged by cidr rules, never by host rules.
bool is_ip_literal(std::string_view text) noexcept;

}  // namespace airlock::policy
