#include "app/cli.hpp"
#include "certs/ca.hpp"

#include <cstdio>

namespace airlock::app {

int run_ca_command(args a) {
  arg_reader r("ca", a);
  const auto rest = r.positionals();
  if (rest.size() != 2 || rest[0] != "init") r.fail("expected 'init DIR'");
  if (r.failed()) return r.usage_error();
  auto made = certs::init_ca(rest[1]);
  if (!made.has_value()) {
    std::fprintf(stderr, "airlock ca: %s\n", made.error().c_str());
    return exit_error;
  }
  std::printf("created %s (give this to sandboxes to trust)\ncreated %s (mode 0600; keep it here)\n",
              made->cert.c_str(), made->key.c_str());
  return exit_ok;
}

}  // namespace airlock::app
