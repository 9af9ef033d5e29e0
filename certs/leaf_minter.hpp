#pragma once

// Leaf certificates for TLS inspection: the proxy asks for a name it has already allowed and gets
// a certificate for exactly that name, signed by the local CA, from a bounded LRU cache.

#include "base/result.hpp"
#include "certs/ca.hpp"
#include "certs/openssl_ptr.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace airlock::certs {

// Owns a STACK_OF(X509) and the certificates in it.
struct x509_stack_deleter {
  void operator()(STACK_OF(X509) * stack) const noexcept { sk_X509_pop_free(stack, X509_free); }
};
using x509_stack_ptr = std::unique_ptr<STACK_OF(X509), x509_stack_deleter>;

// One minted certificate with everything a server handshake needs; immutable once built, so one
// object is shared by every connection to that name (see use_leaf in tls_contexts.hpp).
struct leaf {
  std::string name;      // the name it was minted for, canonical (lowercase DNS name or IP text)
  x509_ptr cert;         // the leaf itself
  evp_pkey_ptr key;      // its private key (a reference to the minter's shared key)
  x509_stack_ptr chain;  // what follows the leaf on the wire: the CA certificate
  std::time_t not_after = 0;
};

struct leaf_minter_options {
  std::size_t cache_capacity = 1024;            // names kept; at least 1
  std::chrono::seconds validity{24 * 60 * 60};  // from now; notBefore is always an hour back
  // A cached leaf with less than this left is minted again, so a connection never gets one that
  // expires while it is open (a connection rarely lives longer).
  std::chrono::seconds renew_before{60 * 60};
  // The clock the certificates' times come from; a seam for tests.
  std::function<std::time_t()> now = [] { return std::time(nullptr); };
};

// Mints and caches leaf certificates signed by the CA. Safe to call from several threads.
class leaf_minter {
 public:
  // Generates the shared leaf key and the extensions every leaf carries. Fails only when
  // OpenSSL does (the message says so) or when the options make no sense.
  static base::result<std::unique_ptr<leaf_minter>> create(loaded_ca ca, leaf_minter_options options = {});

  leaf_minter(const leaf_minter&) = delete;
  leaf_minter& operator=(const leaf_minter&) = delete;
  ~leaf_minter();

  // The leaf for NAME: a DNS name (its SAN is a dNSName; case and one trailing dot do not
  // matter) or an IPv4/IPv6 literal without brackets (its SAN is an iPAddress).
  // Precondition: the proxy's policy already allowed NAME; this only refuses what cannot go into
  // a certificate (empty, longer than 253, characters outside letters, digits, '-', '_', '.',
  // empty labels) and fails when the CA has expired or OpenSSL fails. The error is one line for
  // the log.
  // A cached leaf with at least renew_before left is returned as it is (a hit); otherwise one is
  // minted outside the lock (a miss) and cached, evicting the least recently used name when full.
  base::result<std::shared_ptr<const leaf>> get(std::string_view name);

  // Counters since creation, for metrics.
  std::uint64_t hits() const noexcept { return hits_.load(std::memory_order_relaxed); }
  std::uint64_t misses() const noexcept { return misses_.load(std::memory_order_relaxed); }
  std::uint64_t evictions() const noexcept { return evictions_.load(std::memory_order_relaxed); }
  std::size_t size() const;

  // The CA certificate leaves are signed with (what sandboxes must trust).
  const X509* ca_cert() const noexcept { return ca_.cert.get(); }

 private:
  struct parsed_name;
  struct entry {
    std::string name;
    std::shared_ptr<const leaf> value;
  };
  using lru_list = std::list<entry>;

  leaf_minter(loaded_ca ca, leaf_minter_options options);
  base::result<std::shared_ptr<const leaf>> mint(const parsed_name& name, std::time_t now) const;
  bool fresh(const leaf& value, std::time_t now) const noexcept;

  loaded_ca ca_;
  std::time_t ca_not_after_ = 0;
  leaf_minter_options options_;
  evp_pkey_ptr leaf_key_;
  // The extensions that are the same in every leaf (constraints, usages, key identifiers: every
  // leaf has the same key and issuer), built once; X509_add_ext copies them.
  std::vector<x509_extension_ptr> common_extensions_;

  // Guards lru_ and index_ only; minting happens outside it.
  mutable std::mutex mutex_;
  lru_list lru_;  // most recently used first
  // Keys come from sandboxes, but the map never holds more than cache_capacity of them, so a
  // flood of colliding names costs at most a bounded chain per lookup.
  std::unordered_map<std::string_view, lru_list::iterator> index_;

  std::atomic<std::uint64_t> hits_{0};
  std::atomic<std::uint64_t> misses_{0};
  std::atomic<std::uint64_t> evictions_{0};
};

}  // namespace airlock::certs
