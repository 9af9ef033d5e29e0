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
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
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
    error(n,
          std::string(what) + ": expected a string, found nothing (YAML reads null, NULL and ~ as nothing; quote it)");
    return std::nullopt;
  }
  if (!n.IsScalar() || n.Scalar().empty()) {
    error(n, std::string(what) + ": expected a non-empty string");
    return std::nullopt;
  }
  return n.Scalar();
}

std::vector<std::uint16_t> yaml_reader::ports(const YAML::Node& n, std::string_view where,
                                              std::vector<port_protocol_entry>* protocols) {
  std::vector<std::uint16_t> out;
  std::vector<std::uint16_t> plain;  // listed as a bare number: the port's default protocol
  auto number = [&](const YAML::Node& item, std::string_view at) -> std::optional<std::uint16_t> {
    unsigned value = 0;
    const std::string text = item.IsScalar() ? item.Scalar() : std::string();
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty() || value < 1 || value > 65535) {
      error(item, std::string(at) + ": bad port '" + scalar_text(item) + "'; expected a number 1..65535");
      return std::nullopt;
    }
    return static_cast<std::uint16_t>(value);
  };
  std::size_t index = 0;
  auto one = [&](const YAML::Node& item) {
    const std::string at = std::string(where) + "[" + std::to_string(index++) + "]";
    if (!item.IsMap()) {
      if (auto port = number(item, where)) {
        out.push_back(*port);
        plain.push_back(*port);
      }
      return;
    }
    if (protocols == nullptr)
      return error(item, std::string(where) + ": a deny rule covers every protocol on its ports; list plain numbers");
    check_keys(item, {"port", "protocol"}, at);
    const auto port_node = item["port"];
    const auto protocol_node = item["protocol"];
    if (!port_node || !protocol_node) return error(item, at + ": expected {port: N, protocol: tls|http|any}");
    const auto port = number(port_node, at + ".port");
    const auto protocol = parse_port_protocol(scalar_text(protocol_node));
    if (!protocol)
      return error(protocol_node, at + ".protocol: '" + scalar_text(protocol_node) +
                                      "'; expected tls (a TLS hello naming an allowed host), http (a request "
                                      "naming one) or any (whatever is spoken; no name needed)");
    if (!port) return;
    out.push_back(*port);
    protocols->push_back({*port, *protocol});
  };
  if (n.IsSequence()) {
    for (const auto& item : n) one(item);
    if (n.size() == 0) error(n, std::string(where) + ": empty port list; leave 'ports' out for the default");
  } else {
    one(n);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (protocols != nullptr) {
    std::stable_sort(protocols->begin(), protocols->end(),
                     [](const port_protocol_entry& a, const port_protocol_entry& b) { return a.port < b.port; });
    for (std::size_t i = 1; i < protocols->size(); ++i)
      if ((*protocols)[i].port == (*protocols)[i - 1].port && !((*protocols)[i] == (*protocols)[i - 1]))
        error(n, std::string(where) + ": port " + std::to_string((*protocols)[i].port) +
                     " is given two protocols; write it once");
    protocols->erase(std::unique(protocols->begin(), protocols->end()), protocols->end());
    for (const auto& e : *protocols)
      if (e.protocol != default_protocol(e.port) && std::find(plain.begin(), plain.end(), e.port) != plain.end())
        error(n, std::string(where) + ": port " + std::to_string(e.port) + " is listed alone (" +
                     std::string(to_string(default_protocol(e.port))) + ") and as protocol " +
                     std::string(to_string(e.protocol)) + "; write it once");
  }
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
