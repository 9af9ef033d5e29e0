#include "policy/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <set>

namespace airlock::policy {

std::string source_mark::to_string() const { return file + ":" + std::to_string(line); }

std::string config_error::to_string() const {
  if (mark.line == 0) return mark.file + ": " + message;
  return mark.file + ":" + std::to_string(mark.line) + ":" + std::to_string(mark.column) + ": " + message;
}

namespace detail {
namespace {

// Optimal string alignment distance: a swapped pair of letters ("hots") counts as one
// edit, so the suggestion is the key the user meant, not another two edits away.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string join(std::span<const std::string_view> ks) {
  std::string out;
  for (auto k : ks) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

}  // namespace

std::string_view did_you_mean(std::string_view key, std::span<const std::string_view> candidates) {
  std::string_view best;
  std::size_t best_distance = key.size() / 3 + 1;
  for (auto k : candidates) {
    const auto d = edit_distance(key, k);
    if (d < best_distance || (d == best_distance && best.empty())) best = k, best_distance = d;
  }
  return best;
}

source_mark yaml_reader::mark(const YAML::Node& n) const {
  const auto m = n.Mark();
  if (m.line < 0) return {file_, 1, 1};
  return {file_, m.line + 1, m.column + 1};
}

void yaml_reader::error(const YAML::Node& n, std::string message) { errors_.push_back({mark(n), std::move(message)}); }

void yaml_reader::check_keys(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                             std::string_view where) {
  const std::span<const std::string_view> keys(allowed.begin(), allowed.size());
  std::set<std::string> seen;
  for (const auto& kv : map) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if (!seen.insert(key).second) {
      error(kv.first, "duplicate key '" + key + "' in " + std::string(where));
      continue;
    }
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    const auto best = did_you_mean(key, keys);
    std::string message = "unknown key '" + key + "' in " + std::string(where);
    message += best.empty() ? "; expected one of: " + join(keys) : "; did you mean '" + std::string(best) + "'?";
    error(kv.first, message);
  }
}

std::optional<std::string> yaml_reader::string_of(const YAML::Node& n, std::string_view what) {
  if (n.IsNull()) {
    error(n, std::string(what) + ": expected a string, found nothing (YAML reads null, NULL and ~ as nothing; quote it)");
    return std::nullopt;
  }
  if (!n.IsScalar() || n.Scalar().empty()) {
    error(n, std::string(what) + ": expected a non-empty string");
    return std::nullopt;
  }
  return n.Scalar();
}

std::vector<std::uint16_t> yaml_reader::ports(const YAML::Node& n, std::string_view where) {
  std::vector<std::uint16_t> out;
  auto one = [&](const YAML::Node& item) {
    unsigned value = 0;
    const std::string text = item.IsScalar() ? item.Scalar() : std::string();
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || value < 1 || value > 65535)
      return error(item, std::string(where) + ": bad port '" + scalar_text(item) + "'; expected a number 1..65535");
    out.push_back(static_cast<std::uint16_t>(value));
  };
  if (n.IsSequence()) {
    for (const auto& item : n) one(item);
    if (n.size() == 0) error(n, std::string(where) + ": empty port list; leave 'ports' out for the default");
  } else {
    one(n);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<endpoint_config> yaml_reader::endpoints(const YAML::Node& n, std::string_view what, int default_port) {
  std::vector<endpoint_config> out;
  auto one = [&](const YAML::Node& item) {
    if (!item.IsScalar()) return error(item, std::string(what) + ": expected ADDRESS:PORT or a list of them");
    std::string text = item.Scalar();
    if (default_port >= 0 && text.find('/') == std::string::npos && cidr::parse(text).has_value())
      text = (text.find(':') != std::string::npos ? "[" + text + "]" : text) + ":" + std::to_string(default_port);
    auto ep = endpoint_config::parse(text);
    if (!ep.has_value()) return error(item, std::string(what) + ": " + ep.error());
    out.push_back(*ep);
  };
  if (n.IsSequence()) {
    for (const auto& item : n) one(item);
  } else {
    one(n);
  }
  return out;
}

std::vector<std::string> yaml_reader::strings(const YAML::Node& n, std::string_view what) {
  std::vector<std::string> out;
  auto one = [&](const YAML::Node& item) {
    if (auto s = string_of(item, what)) out.push_back(std::move(*s));
  };
  if (n.IsSequence()) {
    for (const auto& item : n) one(item);
  } else {
    one(n);
  }
  return out;
}

}  // namespace detail
}  // namespace airlock::policy
