#pragma once

// A throwaway CA for the certs tests: init_ca into a fresh temporary directory, removed again
// when the object goes away.

#include "certs/ca.hpp"

#include <doctest/doctest.h>

#include <openssl/pem.h>

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

namespace airlock::certs::testing {

class test_ca {
 public:
  test_ca() {
    std::string pattern = (std::filesystem::temp_directory_path() / "airlock_certs_test.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp");
    }
    root_ = pattern;
    const auto files = init_ca(root_ / "ca");
    REQUIRE_MESSAGE(files.has_value(), files.error());
    cert_file_ = files->cert.string();
  }
  test_ca(const test_ca&) = delete;
  test_ca& operator=(const test_ca&) = delete;
  ~test_ca() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // A fresh copy of the CA (certificate and key), as the proxy would load it.
  loaded_ca load() const {
    auto ca = load_ca(root_ / "ca");
    REQUIRE_MESSAGE(ca.has_value(), ca.error());
    return std::move(*ca);
  }
  // ca.crt, the file a client puts in its trust store.
  const std::string& cert_file() const { return cert_file_; }
  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;
  std::string cert_file_;
};

}  // namespace airlock::certs::testing
