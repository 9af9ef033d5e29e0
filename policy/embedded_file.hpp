#pragma once
// A data file compiled into the binary (cmake/embed.cmake): the default policy and the
// service families ship with airlock, so they are versioned with it and cannot go missing.
#include <span>
#include <string_view>

namespace airlock {

struct embedded_file {
  std::string_view name;  // base name without extension
  std::string_view text;
};

}  // namespace airlock
