// bench_loadgen: idle connections, slow or segmented ClientHellos, and requests on new
// connections, for bench/run.
#include "bench/loadgen/loadgen.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  const auto o = airlock::bench::parse_options(argc, argv);
  if (!o) return 2;
  try {
    if (o->mode == "idle") return airlock::bench::run_idle(*o);
    if (o->mode == "requests") return airlock::bench::run_requests(*o);
    return airlock::bench::run_hello(*o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loadgen: %s\n", e.what());
    return 1;
  }
}
