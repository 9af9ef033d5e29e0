# All from Debian 12 packages (deploy/install-deps.sh).
find_package(Boost 1.81.0 REQUIRED CONFIG COMPONENTS json)
find_package(OpenSSL 3 REQUIRED)
find_package(yaml-cpp REQUIRED CONFIG)
find_package(Threads REQUIRED)
find_package(prometheus-cpp REQUIRED CONFIG)  # core only: /metrics is served by our own Asio listener
find_package(PkgConfig REQUIRED)
pkg_check_modules(CARES REQUIRED IMPORTED_TARGET libcares)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
pkg_check_modules(IDN2 REQUIRED IMPORTED_TARGET libidn2)
# HTTP/2 on inspected connections (proxy/h2_bridge.hpp): the library curl and Apache use.
pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2)

# Asio: coroutines only, no deprecated interfaces, and one translation unit does not
# need to see the others' template instantiations.
add_library(airlock_asio INTERFACE)
target_link_libraries(airlock_asio INTERFACE Boost::headers Threads::Threads)
target_compile_definitions(airlock_asio INTERFACE
  BOOST_ASIO_NO_DEPRECATED BOOST_ASIO_NO_TS_EXECUTORS)
