# Warnings for our own targets only; dependencies come in as SYSTEM includes. They fail
# the build only where we choose the compiler and flags (the dev and fuzz presets, so CI):
# a packager's or a user's build with another compiler, other flags or -O3 must not stop on
# a warning that compiler adds.
option(AIRLOCK_WERROR "Treat warnings in airlock's own code as errors (the dev and fuzz presets turn it on)" OFF)
add_library(airlock_warnings INTERFACE)
target_compile_options(airlock_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wimplicit-fallthrough
  $<$<BOOL:${AIRLOCK_WERROR}>:-Werror>
  # GCC 12 misreads Asio's coroutine frame allocator as a new/delete mismatch.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>
  # GCC 12 at -O2 reports impossible overlaps inside std::string (GCC PR 105329).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>
  # At -O3 GCC 12 reports maybe-uninitialized inside Boost's result/variant2: visible, but
  # not an error even with AIRLOCK_WERROR.
  $<$<CXX_COMPILER_ID:GNU>:-Wno-error=maybe-uninitialized>)
