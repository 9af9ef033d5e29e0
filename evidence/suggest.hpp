#pragma once
// From a session's lines, the smallest policy that would have allowed what the session
// did: service families where every used host of the family is covered, exact names
// otherwise, `*.suffix` only for three or more names under one registrable-looking
// suffix. Names that no policy should allow (private addresses, invalid names, the DoH
// canary, public resolvers) are listed as not suggested, with the reason. A person
// reviews the result; nothing is applied.
#include "record/event.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::evidence {

struct first_seen {
  std::string ts;
  std::string process;  // the lineage, or "an unknown process (<why>)"; empty when the line had none
};

struct suggested_family {
  std::string name;
  std::vector<std::string> hosts;  // the used names it covers
  first_seen first;
};

struct suggested_rule {
  std::string host;                  // an exact name, or "*.suffix"
  std::vector<std::uint16_t> ports;  // empty: the default [80, 443]
  std::vector<std::string> members;  // for "*.suffix": the names it stands for
  first_seen first;
};

struct not_suggested {
  std::string what;  // a name, or an address for connections that had none
  std::string why;
};

struct suggestion {
  std::string session;
  std::string policy_name = "suggested";
  std::size_t decisions = 0;  // the dns/connect/http lines looked at
  std::size_t allowed = 0, denied = 0, audit_denied = 0;
  std::vector<suggested_family> families;
  std::vector<suggested_rule> allow;
  std::vector<not_suggested> left_out;
};

suggestion suggest(const std::vector<record::event>& events);

// The policy as YAML: a `policies:` block holding one policy, with a comment per entry
// (process and first time seen) and a trailing "not suggested" comment block. Prefixed
// with `version: 1` it is a complete configuration `airlock check` accepts.
std::string render_yaml(const suggestion& s, std::string_view log_path);

}  // namespace airlock::evidence
