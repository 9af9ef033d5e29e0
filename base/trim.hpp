#pragma once
// Cutting white space off a piece of text's ends.
#include <string_view>

namespace airlock::base {

// `s` without the characters of `chars` at either end: by default ASCII white space (space,
// tab, CR, LF); HTTP's optional white space is " \t".
constexpr std::string_view trim(std::string_view s, std::string_view chars = " \t\r\n") noexcept {
  const auto first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(chars) - first + 1);
}

}  // namespace airlock::base
