# AIRLOCK_SANITIZE=address;undefined turns sanitizers on for our targets (and the link).
#
# Without UBSan's vptr check: to look at a vtable it has not seen, that check tests the memory
# through a pipe it opens, and in a process out of descriptors it cannot, so it reports every
# such virtual call as a bad object and aborts. e2e.limits puts airlock in exactly that state
# (ROBUSTNESS D1); ASan still catches a call through a freed object.
add_library(airlock_sanitizers INTERFACE)
if(AIRLOCK_SANITIZE)
  list(JOIN AIRLOCK_SANITIZE "," _airlock_san)
  set(_airlock_no_vptr "")
  if("undefined" IN_LIST AIRLOCK_SANITIZE)
    set(_airlock_no_vptr -fno-sanitize=vptr)
  endif()
  target_compile_options(airlock_sanitizers INTERFACE
    -fsanitize=${_airlock_san} ${_airlock_no_vptr} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(airlock_sanitizers INTERFACE -fsanitize=${_airlock_san})
endif()

# The fuzz preset instruments all of our code for libFuzzer's coverage, not only the fuzz
# targets' own files: libFuzzer steers by the edges it sees, and the parsers are in the
# libraries (with the targets' files alone, fuzz_client_hello saw 65 edges).
if(AIRLOCK_FUZZ)
  target_compile_options(airlock_sanitizers INTERFACE -fsanitize=fuzzer-no-link)
endif()

# Every library and binary of ours takes both.
function(airlock_target target)
  target_link_libraries(${target} PRIVATE airlock_warnings airlock_sanitizers)
endfunction()
