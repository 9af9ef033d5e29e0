#pragma once
// The three load shapes of bench_loadgen. Each runs on one io_context (one thread) and
// returns the process exit status after printing its counts as key=value pairs.
#include "bench/loadgen/options.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace airlock::bench {

int run_idle(const options& o);
int run_hello(const options& o);
int run_requests(const options& o);

// The first flight of a real OpenSSL 3 client naming `sni`: the bytes a proxy must sniff.
std::vector<std::uint8_t> openssl_client_hello(const std::string& sni);

}  // namespace airlock::bench
