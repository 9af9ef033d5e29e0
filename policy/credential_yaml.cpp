#include "policy/credential_yaml.hpp"

#include "base/errno_text.hpp"
#include "base/file_mode.hpp"
#include "base/small_file.hpp"
#include "base/unique_fd.hpp"
#include "policy/host_port.hpp"
#include "policy/request_target.hpp"
#include "policy/rule_yaml.hpp"

#include <re2/re2.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>

namespace airlock::policy::detail {
namespace {

base::result<std::string> fail(std::string message) {
  return base::result<std::string>(boost::system::in_place_error, std::move(message));
}

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// Headers that belong to one hop or frame the message: airlock (and every proxy on the
// way) rewrites or drops them, so a secret there would be lost or would break framing.
bool reserved_header(std::string_view name) {
  static constexpr std::string_view reserved[] = {"connection",
                                                  "keep-alive",
                                                  "proxy-authenticate",
                                                  "proxy-authorization",
                                                  "proxy-connection",
                                                  "te",
                                                  "trailer",
                                                  "transfer-encoding",
                                                  "upgrade",
                                                  "host",
                                                  "content-length"};
  const auto l = lower(name);
  return std::find(std::begin(reserved), std::end(reserved), l) != std::end(reserved);
}

// The allow rule with inspect: true that covers exact `host`, or nullptr.
const rule_config* inspecting_rule(const policy_config& p, const std::string& host) {
  for (const auto& rule : p.allow) {
    if (!rule.inspect) continue;
    switch (rule.type) {
      case rule_config::kind::host:
        if (rule.pattern == host) return &rule;
        break;
      case rule_config::kind::wildcard:
        if (host.size() > rule.pattern.size() && host.ends_with(rule.pattern) &&
            host[host.size() - rule.pattern.size() - 1] == '.')
          return &rule;
        break;
      case rule_config::kind::regex: {
        RE2::Options o;
        o.set_case_sensitive(false);
        o.set_log_errors(false);
        if (RE2 re(rule.pattern, o); re.ok() && RE2::FullMatch(host, re)) return &rule;
        break;
      }
      case rule_config::kind::cidr: break;
    }
  }
  return nullptr;
}

}  // namespace

base::result<std::string> read_secret_file(const std::string& path) {
  const std::string quoted = "'" + path + "'";
  if (!path.starts_with("/")) return fail(quoted + ": expected an absolute path");
  // Only a regular file is ever opened: opening a device can act (a watchdog starts, a
  // tape rewinds) and a FIFO would wait. Then the opened file is checked again, so what
  // is read is what was checked.
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) return fail(quoted + ": cannot open (" + base::errno_text() + ")");
  if (!S_ISREG(before.st_mode)) return fail(quoted + " is not a regular file");
  const base::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return fail(quoted + ": cannot open (" + base::errno_text() + ")");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(quoted + ": cannot stat (" + base::errno_text() + ")");
  if (!S_ISREG(st.st_mode) || st.st_dev != before.st_dev || st.st_ino != before.st_ino)
    return fail(quoted + " changed while it was read; try again");
  if (!base::is_private(st))
    return fail(quoted + " has mode " + base::octal_mode(st.st_mode) +
                ", open to group or others; a secret file must be private to its owner: run 'chmod 600 " + path + "'");
  // One byte past the bound tells a secret too long in this file's own words.
  auto read = base::read_file(fd.get(), max_secret_bytes + 1, base::past_limit::cut);
  if (!read) return fail(quoted + ": cannot read (" + read.error() + ")");
  std::string value = std::move(*read);
  if (value.size() > max_secret_bytes)
    return fail(quoted + " is larger than " + std::to_string(max_secret_bytes) +
                " bytes; a secret is one header value");
  if (value.ends_with("\r\n")) value.resize(value.size() - 2);
  else if (value.ends_with('\n')) value.pop_back();
  if (value.empty()) return fail(quoted + " is empty; put the header's value in it");
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    const std::string where = " at byte " + std::to_string(i + 1);
    if (c == '\r' || c == '\n')
      return fail(quoted + " has a line break" + where +
                  "; a header value is one line (only one trailing newline is dropped)");
    if (c == 0) return fail(quoted + " has a NUL byte" + where + "; a header value is text");
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return fail(quoted + " has a control character" + where + "; a header value is text");
  }
  return base::result<std::string>(boost::system::in_place_value, std::move(value));
}

std::vector<credential_config> parse_credentials(yaml_reader& r, const YAML::Node& n, const std::string& where,
                                                 const policy_config& p) {
  std::vector<credential_config> out;
  static constexpr const char* shape = "{host: NAME, path: /PREFIX (optional), header: NAME, secret_file: /PATH}";
  if (!n.IsSequence()) {
    r.error(n, where + ": expected a list of " + shape);
    return out;
  }
  std::size_t i = 0;
  for (const auto& item : n) {
    const std::string at = where + "[" + std::to_string(i++) + "]";
    if (!item.IsMap()) {
      r.error(item, at + ": expected " + std::string(shape));
      continue;
    }
    r.check_keys(item, {"host", "path", "header", "secret_file"}, at);
    if (!item["host"] || !item["header"] || !item["secret_file"]) {
      r.error(item, at + ": needs 'host', 'header' and 'secret_file' ('path' is optional)");
      continue;
    }
    credential_config c;
    c.mark = r.mark(item);
    bool ok = true;
    if (auto host = parse_host_pattern(r, item["host"], at + ".host")) {
      c.host = host->pattern;
      if (host->type != rule_config::kind::host) {
        r.error(item["host"], at + ".host: a credential names one exact host, not a wildcard");
        ok = false;
      } else if (!inspecting_rule(p, c.host)) {
        r.error(item["host"], at + ".host: no allow rule with 'inspect: true' in policy " + p.name + " covers '" +
                                  c.host +
                                  "'; credentials are only added inside TLS airlock terminates, never on "
                                  "plaintext or relayed connections");
        ok = false;
      }
    } else {
      ok = false;
    }
    if (auto path = item["path"]) {
      if (auto text = r.string_of(path, at + ".path")) {
        if (auto e = check_path_prefix(*text)) {
          r.error(path, at + ".path: '" + *text + "': " + *e);
          ok = false;
        }
        c.path = *text;
      } else {
        ok = false;
      }
    }
    if (auto header = r.string_of(item["header"], at + ".header")) {
      c.header = *header;
      if (!std::all_of(header->begin(), header->end(), is_tchar)) {
        r.error(item["header"],
                at + ".header: '" + *header + "' is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)");
        ok = false;
      } else if (reserved_header(*header)) {
        r.error(item["header"], at + ".header: '" + *header +
                                    "' is a hop-by-hop or framing header airlock controls; use the header the origin "
                                    "reads, such as Authorization");
        ok = false;
      }
    } else {
      ok = false;
    }
    if (auto file = r.string_of(item["secret_file"], at + ".secret_file")) {
      c.secret_file = *file;
      auto value = read_secret_file(*file);
      if (value.has_value()) {
        c.value = std::move(*value);
      } else {
        r.error(item["secret_file"], at + ".secret_file: " + value.error());
        ok = false;
      }
    } else {
      ok = false;
    }
    if (!ok) continue;
    for (const auto& other : out)
      if (other.host == c.host && other.path == c.path) {
        r.error(item, at + ": '" + c.host + "' under '" + c.path + "' already has a credential at line " +
                          std::to_string(other.mark.line) + "; one header per host and path");
        ok = false;
      }
    if (ok) out.push_back(std::move(c));
  }
  return out;
}

}  // namespace airlock::policy::detail
