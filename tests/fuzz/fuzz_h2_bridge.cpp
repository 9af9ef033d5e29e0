// libFuzzer target for airlock's side of HTTP/2 under inspection (proxy/h2_bridge.hpp): bytes
// from the sandbox and from the origin, interleaved as the input says, through the bridge,
// whose output both ways is read back by a frame reader of this file's own (HPACK decoded
// by nghttp2's inflater).
//
// Input: chunks of [side byte: even from the sandbox, odd from the origin][length, 2 bytes]
// [bytes]. Two starts are given for free, so the fuzzer spends itself on what follows: a
// sandbox chunk may begin with the client preface (the seeds do), and an origin chunk with
// the server's SETTINGS.
//
// Properties, beyond memory safety: every request airlock sends the origin names the
// connection's host in :authority (and in a Host field, if any), no trailers with pseudo-
// headers follow it, and its method and path are ones its rule allows, whatever the
// sandbox sent; and no header value or body airlock sends the sandbox holds the credential
// it injects for the origin, whatever the origin echoed, and however it split the echo.
#include "policy/snapshot.hpp"
#include "proxy/h2_bridge.hpp"
#include "proxy/limits.hpp"
#include "record/decision.hpp"

#include <nghttp2/nghttp2.h>

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <span>
#include <string>
#include <string_view>

namespace {

// Which property broke, said before the abort: the first thing a crash's triage needs.
void require_at(bool holds, int line, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz_h2_bridge.cpp:%d: %s does not hold\n", line, what);
  std::abort();
}
#define require(x) require_at((x), __LINE__, #x)

constexpr std::string_view secret = "Bearer fuzz-secret-0123456789abcdef";
constexpr std::string_view token = "fuzz-secret-0123456789abcdef";  // what an echo would hold

struct null_sink final : airlock::record::decision_sink {
  void emit(const airlock::record::decision_record&) noexcept override {}
};

std::shared_ptr<const airlock::policy::snapshot> compile_policy() {
  const std::string secret_file = "/tmp/airlock-fuzz-h2-secret";
  {
    std::ofstream f(secret_file, std::ios::trunc);
    f << secret << "\n";
  }
  ::chmod(secret_file.c_str(), 0600);
  const std::string yaml = "version: 1\ninspection:\n  ca_dir: /ca\npolicies:\n  p:\n    allow:\n"
                           "      - host: a.test\n        inspect: true\n        paths: [/ok]\n"
                           "    credentials:\n      - host: a.test\n        header: Authorization\n"
                           "        secret_file: " +
                           secret_file + "\n";
  auto cfg = airlock::policy::load_config_text(yaml, "fuzz.yaml");
  require(cfg.has_value());
  auto snap = airlock::policy::snapshot::compile(*cfg);
  require(snap.has_value());
  return *snap;
}

// :authority names a.test, in any case, with or without the root's dot and port 443 (the
// origin gets the authority as the sandbox wrote it; names compare canonically).
bool same_host(std::string authority) {
  for (auto& c : authority) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (authority.ends_with(":443")) authority.resize(authority.size() - 4);
  if (authority.ends_with('.')) authority.pop_back();
  return authority == "a.test";
}

// Reads frames out of what the bridge sent one side, decoding header blocks: on_header gets
// each block with its stream id, on_data each DATA payload.
class frame_reader {
 public:
  explicit frame_reader(bool client_side) : client_side_(client_side) { nghttp2_hd_inflate_new(&inflater_); }
  ~frame_reader() { nghttp2_hd_inflate_del(inflater_); }

  template <typename OnHeader, typename OnData>
  void take(std::string_view bytes, OnHeader on_header, OnData on_data) {
    buf_.append(bytes);
    if (!preface_done_ && client_side_) {
      constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
      if (buf_.size() < preface.size()) return;
      require(std::string_view(buf_).substr(0, preface.size()) == preface);
      buf_.erase(0, preface.size());
      preface_done_ = true;
    }
    while (buf_.size() >= 9) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(buf_.data());
      const std::size_t len = (std::size_t{p[0]} << 16) | (std::size_t{p[1]} << 8) | p[2];
      if (buf_.size() < 9 + len) return;
      const std::uint8_t type = p[3], flags = p[4];
      const std::uint32_t stream =
          ((std::uint32_t{p[5]} << 24) | (std::uint32_t{p[6]} << 16) | (std::uint32_t{p[7]} << 8) | p[8]) & 0x7fffffffu;
      std::string_view payload(buf_.data() + 9, len);
      if (type == NGHTTP2_DATA) {
        if (flags & NGHTTP2_FLAG_PADDED) payload = payload.substr(1, payload.size() - 1 - std::uint8_t(payload[0]));
        on_data(payload);
      } else if (type == NGHTTP2_HEADERS || type == NGHTTP2_CONTINUATION) {
        if (type == NGHTTP2_HEADERS) {
          block_stream_ = stream;
          std::size_t skip = 0, pad = 0;
          if (flags & NGHTTP2_FLAG_PADDED) pad = std::uint8_t(payload[0]), skip = 1;
          if (flags & NGHTTP2_FLAG_PRIORITY) skip += 5;
          payload = payload.substr(skip, payload.size() - skip - pad);
          block_.clear();
        }
        block_.append(payload);
        if (flags & NGHTTP2_FLAG_END_HEADERS) inflate(on_header);
      }
      buf_.erase(0, 9 + len);
    }
  }

 private:
  template <typename OnHeader>
  void inflate(OnHeader on_header) {
    std::vector<std::pair<std::string, std::string>> headers;
    auto* in = reinterpret_cast<std::uint8_t*>(block_.data());
    std::size_t left = block_.size();
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      const auto used = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
      require(used >= 0);  // what airlock sends decodes
      in += used;
      left -= static_cast<std::size_t>(used);
      if (flags & NGHTTP2_HD_INFLATE_EMIT)
        headers.emplace_back(std::string(reinterpret_cast<char*>(nv.name), nv.namelen),
                             std::string(reinterpret_cast<char*>(nv.value), nv.valuelen));
      if (flags & NGHTTP2_HD_INFLATE_FINAL) break;
      if (used == 0 && left == 0) break;
    }
    nghttp2_hd_inflate_end_headers(inflater_);
    on_header(block_stream_, headers);
  }

  bool client_side_;  // reads what goes to the origin: it starts with the client preface
  bool preface_done_ = false;
  nghttp2_hd_inflater* inflater_ = nullptr;
  std::string buf_, block_;
  std::uint32_t block_stream_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto snap = compile_policy();
  static const auto* policy = snap->find_policy("p");
  static const auto name = *airlock::policy::domain_name::parse("a.test");
  null_sink sink;
  airlock::policy::redirect_grants grants;
  airlock::proxy::limiter limits{airlock::policy::limits_config{}};
  auto ticket = limits.accept();
  airlock::record::decision_record connection;
  connection.session = "s";
  airlock::proxy::exchange_setup x{sink,       &grants, std::chrono::minutes(1), *policy, name, 443, true, true,
                                   connection, ticket};
  airlock::proxy::h2_bridge bridge(x);
  frame_reader to_origin(true), to_sandbox(false);
  std::set<std::uint32_t> requested;  // streams whose request head reached the origin
  std::string out;

  auto drain = [&] {
    out.clear();
    bridge.to_upstream(out);
    to_origin.take(
        out,
        [&](std::uint32_t stream, const auto& headers) {
          // A stream's later header block is its trailers: no pseudo-headers to check.
          if (!requested.insert(stream).second) {
            for (const auto& [k, v] : headers) require(!k.starts_with(':'));
            return;
          }
          std::string authority, path, method;
          for (const auto& [k, v] : headers) {
            if (k == ":authority") authority = v;
            if (k == ":path") path = v;
            if (k == ":method") method = v;
            if (k == "host") require(same_host(v));  // nor does a Host field name another
          }
          // Only the connection's host, and only what the rule allows, reaches the origin.
          require(same_host(authority));
          require(policy->decide_request(name, 443, method, path).verdict == airlock::policy::verdict::allow);
        },
        [](std::string_view) {});
    out.clear();
    bridge.to_client(out);
    to_sandbox.take(
        out,
        [](std::uint32_t, const auto& headers) {
          for (const auto& [k, v] : headers) require(v.find(token) == std::string::npos);
        },
        [](std::string_view body) { require(body.find(token) == std::string_view::npos); });
  };

  drain();
  std::size_t at = 0;
  while (at + 3 <= size) {
    const bool from_sandbox = (data[at] & 1) == 0;
    const std::size_t len = std::min<std::size_t>((std::size_t{data[at + 1]} << 8) | data[at + 2], size - at - 3);
    const std::span<const std::byte> chunk(reinterpret_cast<const std::byte*>(data + at + 3), len);
    at += 3 + len;
    const bool ok = from_sandbox ? bridge.from_client(chunk) : bridge.from_upstream(chunk);
    drain();
    if (!ok || bridge.done()) break;
  }
  bridge.client_gone();
  drain();
  return 0;
}
