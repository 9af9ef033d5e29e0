// bench_loadgen: idle connections and slow or segmented ClientHellos, for bench/run.
#include "bench/loadgen/loadgen.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  const auto o = airlock::bench::parse_options(argc, argv);
  if (!o) return 2;
  try {
    return o->mode == "idle" ? airlock::bench::run_idle(*o) : airlock::bench::run_hello(*o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_loadgen: %s\n", e.what());
    return 1;
  }
}
