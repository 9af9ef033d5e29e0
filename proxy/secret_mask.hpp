#pragma once
// The credentials airlock puts on a served connection's requests, kept from coming back:
// whatever of them an origin echoes is masked in the responses (headers and bodies) before
// the sandbox sees it (proxy/http_exchange.cpp).
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/message.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace airlock::proxy {

// What an origin might echo of the credentials put on this connection's requests: each
// value, the token after its scheme ("Bearer T" -> "T"), and their JSON-escaped forms.
// Masking keeps the length, so Content-Length stays true and chunk sizes honest.
class secret_mask {
 public:
  void add(std::string_view value) {
    add_form(value);
    if (const auto space = value.find(' '); space != std::string_view::npos && value.size() - space > 8)
      add_form(value.substr(space + 1));
  }
  bool empty() const noexcept { return forms_.empty(); }
  // Bytes to hold back at the end of a piece: the longest form's length less one.
  std::size_t hold() const noexcept { return longest_ == 0 ? 0 : longest_ - 1; }
  // Masks every occurrence of every form; true when something was masked.
  bool apply(std::string& text) const {
    bool any = false;
    for (const auto& f : forms_)
      for (auto at = text.find(f); at != std::string::npos; at = text.find(f, at + f.size())) {
        std::fill_n(text.begin() + static_cast<std::ptrdiff_t>(at), f.size(), '*');
        any = true;
      }
    return any;
  }

 private:
  void add_form(std::string_view v) {
    std::string escaped;
    for (char c : v) {
      if (c == '/') escaped += '\\';
      escaped += c;
    }
    for (auto form : {std::string(v), escaped})
      if (std::find(forms_.begin(), forms_.end(), form) == forms_.end()) {
        longest_ = std::max(longest_, form.size());
        forms_.push_back(std::move(form));
      }
  }
  std::vector<std::string> forms_;
  std::size_t longest_ = 0;
};

// Masks the secrets in every header value in place: a repeated field (Set-Cookie) keeps
// each of its lines, in order.
template <bool IsRequest>
bool mask_fields(boost::beast::http::header<IsRequest>& h, const secret_mask& mask) {
  if (mask.empty()) return false;
  std::vector<std::string> names;
  for (const auto& f : h) {
    std::string value(f.value());
    if (!mask.apply(value)) continue;
    const std::string name(f.name_string());
    if (std::none_of(names.begin(), names.end(), [&](const auto& n) { return boost::beast::iequals(n, name); }))
      names.push_back(name);
  }
  for (const auto& name : names) {
    std::vector<std::string> values;
    for (auto [it, end] = h.equal_range(name); it != end; ++it) {
      std::string value(it->value());
      mask.apply(value);
      values.push_back(std::move(value));
    }
    h.erase(name);
    for (const auto& v : values) h.insert(name, v);
  }
  return !names.empty();
}

}  // namespace airlock::proxy
