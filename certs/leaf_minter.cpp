#include "certs/leaf_minter.hpp"

#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <utility>

namespace airlock::certs {
namespace {

using base::result;

using general_name_ptr = std::unique_ptr<GENERAL_NAME, openssl_deleter<&GENERAL_NAME_free>>;
using general_names_ptr = std::unique_ptr<GENERAL_NAMES, openssl_deleter<&GENERAL_NAMES_free>>;

// Clients whose clocks run a little behind must still accept a leaf minted just now.
constexpr std::time_t backdate_seconds = 3600;
constexpr int serial_bits = 128;
constexpr std::size_t max_name_length = 253;
constexpr std::size_t max_label_length = 63;
// ub-common-name in RFC 5280: OpenSSL refuses a longer CN, and the SAN is what clients match.
constexpr std::size_t max_common_name = 64;

bool add_name_entry(X509_NAME* name, const char* field, std::string_view value) {
  return X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(value.data()),
                                    static_cast<int>(value.size()), -1, 0) == 1;
}

x509_extension_ptr make_extension(X509V3_CTX* ctx, int nid, const char* value) {
  return x509_extension_ptr{X509V3_EXT_nconf_nid(nullptr, ctx, nid, value)};
}

// The time an ASN1_TIME names, as seconds since the epoch; false when it cannot be read.
bool to_time_t(const ASN1_TIME* when, std::time_t& out) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(when, &tm) != 1) {
    return false;
  }
  out = ::timegm(&tm);
  return true;
}

}  // namespace

// NAME as it goes into the certificate: the canonical text (also the cache key) and, for an IP
// literal, its bytes for the iPAddress SAN.
struct leaf_minter::parsed_name {
  std::string text;
  bool is_ip = false;
  std::array<unsigned char, 16> ip{};
  int ip_length = 0;

  static result<parsed_name> parse(std::string_view name) {
    const auto refuse = [&](const char* why) {
      return result<parsed_name>{boost::system::in_place_error,
                                 "cannot mint a certificate for '" + std::string{name} + "': " + why};
    };
    parsed_name out;
    const std::string copy{name};
    if (copy.find(':') != std::string::npos) {
      if (::inet_pton(AF_INET6, copy.c_str(), out.ip.data()) != 1) {
        return refuse("not an IPv6 literal");
      }
      std::array<char, INET6_ADDRSTRLEN> text{};
      ::inet_ntop(AF_INET6, out.ip.data(), text.data(), text.size());
      out.text = text.data();
      out.is_ip = true;
      out.ip_length = 16;
      return out;
    }
    if (::inet_pton(AF_INET, copy.c_str(), out.ip.data()) == 1) {
      std::array<char, INET_ADDRSTRLEN> text{};
      ::inet_ntop(AF_INET, out.ip.data(), text.data(), text.size());
      out.text = text.data();
      out.is_ip = true;
      out.ip_length = 4;
      return out;
    }
    std::string_view dns = name;
    if (!dns.empty() && dns.back() == '.') {
      dns.remove_suffix(1);
    }
    if (dns.empty()) {
      return refuse("empty name");
    }
    if (dns.size() > max_name_length) {
      return refuse("longer than 253 characters");
    }
    std::size_t label = 0;
    for (const char c : dns) {
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (c == '.') {
        if (label == 0) {
          return refuse("empty label");
        }
        label = 0;
      } else if (alnum || c == '-' || c == '_') {
        if (++label > max_label_length) {
          return refuse("label longer than 63 characters");
        }
      } else {
        return refuse("character outside letters, digits, '-', '_' and '.'");
      }
      out.text += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    if (label == 0) {
      return refuse("empty label");
    }
    return out;
  }
};

result<std::unique_ptr<leaf_minter>> leaf_minter::create(loaded_ca ca, leaf_minter_options options) {
  const auto fail = [](std::string message) {
    return result<std::unique_ptr<leaf_minter>>{boost::system::in_place_error, std::move(message)};
  };
  if (!ca.cert || !ca.key) {
    return fail("leaf minter: no CA loaded");
  }
  if (options.cache_capacity == 0) {
    return fail("leaf minter: cache capacity must be at least 1");
  }
  if (options.validity <= options.renew_before) {
    return fail("leaf minter: leaf validity must be longer than the renewal margin");
  }
  if (!options.now) {
    return fail("leaf minter: no clock");
  }
  std::unique_ptr<leaf_minter> minter{new leaf_minter(std::move(ca), std::move(options))};
  if (!to_time_t(X509_get0_notAfter(minter->ca_.cert.get()), minter->ca_not_after_)) {
    return fail("leaf minter: cannot read the CA certificate's notAfter: " + openssl_error_string());
  }
  // One key for every leaf. Key generation is most of what minting would otherwise cost, and a
  // per-leaf key buys nothing here: the private key never leaves this process, and whoever could
  // read it could read the CA key beside it. Squid (ssl_crtd) and mitmproxy do the same.
  minter->leaf_key_.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!minter->leaf_key_) {
    return fail("leaf minter: generating the P-256 leaf key failed: " + openssl_error_string());
  }
  // A throwaway certificate holding only the leaf key, so the subject key identifier can be
  // computed once; the authority key identifier comes from the CA's own.
  const x509_ptr probe{X509_new()};
  if (!probe || X509_set_pubkey(probe.get(), minter->leaf_key_.get()) != 1) {
    return fail("leaf minter: preparing the leaf extensions failed: " + openssl_error_string());
  }
  X509V3_CTX ctx{};
  X509V3_set_ctx(&ctx, minter->ca_.cert.get(), probe.get(), nullptr, nullptr, 0);
  const std::pair<int, const char*> common[] = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature"},
      {NID_ext_key_usage, "serverAuth"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"},
  };
  for (const auto& [nid, value] : common) {
    x509_extension_ptr ext = make_extension(&ctx, nid, value);
    if (!ext) {
      return fail(
          std::string{"leaf minter: building the "} + OBJ_nid2sn(nid) +
          " extension failed (does the CA certificate have a subject key identifier?): " + openssl_error_string());
    }
    minter->common_extensions_.push_back(std::move(ext));
  }
  return minter;
}

leaf_minter::leaf_minter(loaded_ca ca, leaf_minter_options options)
    : ca_{std::move(ca)}, options_{std::move(options)} {}

leaf_minter::~leaf_minter() = default;

std::size_t leaf_minter::size() const {
  const std::lock_guard lock{mutex_};
  return lru_.size();
}

bool leaf_minter::fresh(const leaf& value, std::time_t now) const noexcept {
  if (now + options_.renew_before.count() < value.not_after) {
    return true;
  }
  // Capped by the CA's own expiry: minting again would not give a longer-lived leaf.
  return value.not_after == ca_not_after_ && now < value.not_after;
}

result<std::shared_ptr<const leaf>> leaf_minter::get(std::string_view name) {
  auto parsed = parsed_name::parse(name);
  if (!parsed.has_value()) {
    return parsed.error();
  }
  const std::time_t now = options_.now();
  {
    const std::lock_guard lock{mutex_};
    if (const auto found = index_.find(parsed->text); found != index_.end() && fresh(*found->second->value, now)) {
      lru_.splice(lru_.begin(), lru_, found->second);
      hits_.fetch_add(1, std::memory_order_relaxed);
      return found->second->value;
    }
  }
  // Signing takes far longer than the lookup, so it runs unlocked: other names are served
  // meanwhile. Two threads missing on the same name both mint; the first insert wins below.
  auto minted = mint(*parsed, now);
  if (!minted.has_value()) {
    return minted;
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard lock{mutex_};
  if (const auto found = index_.find(parsed->text); found != index_.end()) {
    lru_.splice(lru_.begin(), lru_, found->second);
    if (!fresh(*found->second->value, now)) {
      found->second->value = *minted;
    }
    return found->second->value;
  }
  lru_.push_front(entry{std::move(parsed->text), *minted});
  index_.emplace(lru_.front().name, lru_.begin());
  if (lru_.size() > options_.cache_capacity) {
    index_.erase(lru_.back().name);
    lru_.pop_back();
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }
  return minted;
}

result<std::shared_ptr<const leaf>> leaf_minter::mint(const parsed_name& name, std::time_t now) const {
  const auto fail = [&](const std::string& what) {
    return result<std::shared_ptr<const leaf>>{boost::system::in_place_error,
                                               "minting a certificate for " + name.text + " failed: " + what};
  };
  if (now >= ca_not_after_) {
    return fail("the CA certificate has expired; create a new CA with 'airlock ca init'");
  }
  const std::time_t not_after = std::min(now + options_.validity.count(), ca_not_after_);

  auto value = std::make_shared<leaf>();
  value->name = name.text;
  value->not_after = not_after;
  value->cert.reset(X509_new());
  X509* c = value->cert.get();
  const bignum_ptr serial{BN_new()};
  const x509_name_ptr subject{X509_NAME_new()};
  const general_names_ptr alt_names{sk_GENERAL_NAME_new_null()};
  general_name_ptr alt{GENERAL_NAME_new()};
  if (!c || !serial || !subject || !alt_names || !alt) {
    return fail(openssl_error_string());
  }

  // The one subjectAltName: a dNSName (IA5String) or the address bytes as an iPAddress. Built
  // as structures rather than through the "DNS:..." config syntax, so no character in a name can
  // be read as syntax.
  if (name.is_ip) {
    ASN1_OCTET_STRING* ip = ASN1_OCTET_STRING_new();
    if (ip == nullptr || ASN1_OCTET_STRING_set(ip, name.ip.data(), name.ip_length) != 1) {
      ASN1_OCTET_STRING_free(ip);
      return fail(openssl_error_string());
    }
    GENERAL_NAME_set0_value(alt.get(), GEN_IPADD, ip);
  } else {
    ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
    if (dns == nullptr || ASN1_STRING_set(dns, name.text.data(), static_cast<int>(name.text.size())) != 1) {
      ASN1_IA5STRING_free(dns);
      return fail(openssl_error_string());
    }
    GENERAL_NAME_set0_value(alt.get(), GEN_DNS, dns);
  }
  if (sk_GENERAL_NAME_push(alt_names.get(), alt.get()) <= 0) {
    return fail(openssl_error_string());
  }
  alt.release();  // the stack owns it now

  const std::string_view common_name = std::string_view{name.text}.substr(0,
                                                                          std::min(name.text.size(), max_common_name));
  // BN_RAND_TOP_ONE: exactly 128 bits, never zero; a BIGNUM is never negative.
  bool ok = X509_set_version(c, X509_VERSION_3) == 1 &&
            BN_rand(serial.get(), serial_bits, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) == 1 &&
            BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(c)) != nullptr &&
            ASN1_TIME_set(X509_getm_notBefore(c), now - backdate_seconds) != nullptr &&
            ASN1_TIME_set(X509_getm_notAfter(c), not_after) != nullptr &&
            add_name_entry(subject.get(), "O", "airlock") && add_name_entry(subject.get(), "CN", common_name) &&
            X509_set_subject_name(c, subject.get()) == 1 &&
            X509_set_issuer_name(c, X509_get_subject_name(ca_.cert.get())) == 1 &&
            X509_set_pubkey(c, leaf_key_.get()) == 1 &&
            X509_add1_ext_i2d(c, NID_subject_alt_name, alt_names.get(), 0, X509V3_ADD_DEFAULT) == 1;
  for (const auto& ext : common_extensions_) {
    ok = ok && X509_add_ext(c, ext.get(), -1) == 1;
  }
  if (!ok || X509_sign(c, ca_.key.get(), EVP_sha256()) <= 0) {
    return fail(openssl_error_string());
  }

  value->chain.reset(sk_X509_new_null());
  if (!value->chain || EVP_PKEY_up_ref(leaf_key_.get()) != 1) {
    return fail(openssl_error_string());
  }
  value->key.reset(leaf_key_.get());
  if (X509_up_ref(ca_.cert.get()) != 1) {
    return fail(openssl_error_string());
  }
  if (sk_X509_push(value->chain.get(), ca_.cert.get()) <= 0) {
    X509_free(ca_.cert.get());
    return fail(openssl_error_string());
  }
  return std::shared_ptr<const leaf>{std::move(value)};
}

}  // namespace airlock::certs
