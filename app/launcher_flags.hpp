#pragma once
// Flags the launcher's commands (run, gc, attach, detach) share, with one default each.
#include "app/cli.hpp"
#include "launcher/state.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace airlock::app {

inline constexpr std::string_view default_control_socket = "/run/airlock/control.sock";

// --control PATH: the daemon's control socket.
inline std::string control_socket(arg_reader& r) {
  return r.value("", "--control").value_or(std::string(default_control_socket));
}

// --state-dir DIR: where sandbox records live. Separate directories are separate worlds:
// gc only sees its own, and address blocks are only unique within one.
inline std::filesystem::path state_dir(arg_reader& r) {
  return r.value("", "--state-dir").value_or(std::string(launcher::default_state_dir));
}

}  // namespace airlock::app
