#include "policy/domain_name.hpp"

#include <idn2.h>

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <memory>

namespace airlock::policy {
namespace {

constexpr std::size_t max_name_length = 253;  // text form, without the trailing dot
constexpr std::size_t max_label_length = 63;

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Letters, digits and hyphen are the hostname alphabet; underscore is admitted because
// real DNS names use it (_dmarc, SRV owners) and it cannot change which host matches.
bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; }

}  // namespace

std::string_view to_string(name_error e) noexcept {
  switch (e) {
    case name_error::empty: return "empty name";
    case name_error::too_long: return "name longer than 253 characters";
    case name_error::empty_label: return "empty label";
    case name_error::label_too_long: return "label longer than 63 characters";
    case name_error::bad_character: return "character outside the hostname alphabet";
    case name_error::bad_idna: return "invalid internationalised name";
  }
  return "invalid name";
}

boost::system::result<domain_name, name_error> domain_name::parse(std::string_view text) noexcept {
  try {
    if (!text.empty() && text.back() == '.') text.remove_suffix(1);
    if (text.empty()) return name_error::empty;
    // Bound the work before IDNA: no valid name is this long even in UTF-8.
    if (text.size() > 4 * max_name_length) return name_error::too_long;

    std::string ascii;
    if (is_ascii(text)) {
      ascii.assign(text);
    } else {
      std::string input(text);
      char* out = nullptr;
      int rc = idn2_to_ascii_8z(input.c_str(), &out, IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
      std::unique_ptr<char, decltype(&idn2_free)> owned(out, &idn2_free);
      if (rc != IDN2_OK || out == nullptr) return name_error::bad_idna;
      ascii.assign(out);
    }
    std::transform(ascii.begin(), ascii.end(), ascii.begin(), lower);

    if (ascii.size() > max_name_length) return name_error::too_long;
    std::size_t label = 0;
    for (char c : ascii) {
      if (c == '.') {
        if (label == 0) return name_error::empty_label;
        label = 0;
        continue;
      }
      if (!is_name_char(c)) return name_error::bad_character;
      if (++label > max_label_length) return name_error::label_too_long;
    }
    if (label == 0) return name_error::empty_label;
    return domain_name(std::move(ascii));
  } catch (...) {  // std::bad_alloc only; a name that cannot be built is not a name
    return name_error::too_long;
  }
}

bool is_ip_literal(std::string_view text) noexcept {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() > 64) return false;
  std::array<char, 65> buf{};
  std::copy(text.begin(), text.end(), buf.begin());
  std::array<unsigned char, 16> out{};
  return inet_pton(AF_INET, buf.data(), out.data()) == 1 || inet_pton(AF_INET6, buf.data(), out.data()) == 1;
}

}  // namespace airlock::policy
