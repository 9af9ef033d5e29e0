# AIRLOCK_SANITIZE=address;undefined turns sanitizers on for our targets (and the link).
add_library(airlock_sanitizers INTERFACE)
if(AIRLOCK_SANITIZE)
  list(JOIN AIRLOCK_SANITIZE "," _airlock_san)
  target_compile_options(airlock_sanitizers INTERFACE
    -fsanitize=${_airlock_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(airlock_sanitizers INTERFACE -fsanitize=${_airlock_san})
endif()

# Every library and binary of ours takes both.
function(airlock_target target)
  target_link_libraries(${target} PRIVATE airlock_warnings airlock_sanitizers)
endfunction()
