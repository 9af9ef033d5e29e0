# Warnings for our own targets only; dependencies come in as SYSTEM includes.
add_library(airlock_warnings INTERFACE)
target_compile_options(airlock_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wimplicit-fallthrough -Werror
  # GCC 12 misreads Asio's coroutine frame allocator as a new/delete mismatch.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>
  # GCC 12 at -O2 reports impossible overlaps inside std::string (GCC PR 105329).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>
  # At -O3 GCC 12 reports maybe-uninitialized inside Boost's result/variant2; keep the
  # warning visible but do not fail a user's Release build on it.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-error=maybe-uninitialized>)
