#pragma once
// What the policy tests share: a snapshot compiled from YAML text (failing the test with
// the loader's messages), and a canonical name.
#include "policy/snapshot.hpp"

#include <doctest/doctest.h>

#include <memory>

namespace airlock::policy::test {

inline std::shared_ptr<const snapshot> compile(const char* yaml) {
  auto cfg = load_config_text(yaml, "t.yaml");
  if (!cfg.has_value()) {
    for (const auto& e : cfg.error()) MESSAGE(e.to_string());
    FAIL("policy did not load");
  }
  auto snap = snapshot::compile(*cfg);
  REQUIRE(snap.has_value());
  return *snap;
}

inline domain_name name(const char* n) {
  auto r = domain_name::parse(n);
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace airlock::policy::test
