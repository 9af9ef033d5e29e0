// `airlock approve`: be the approver of the running daemon's held denials (GET
// /v1/approvals), answering each question at a terminal prompt or by a program's verdict.
#include "app/cli.hpp"
#include "app/launcher_flags.hpp"
#include "base/trim.hpp"
#include "control/api_call.hpp"
#include "control/line_stream.hpp"
#include "evidence/approval_prompt.hpp"

#include <boost/json/serialize.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace airlock::app {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using evidence::approval_question;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void say(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// Lines from a descriptor, each waited for until a deadline (stdin may be a terminal, a
// pipe of scripted answers, or a program's output).
class line_reader {
 public:
  explicit line_reader(int fd) : fd_(fd) {}
  bool ended() const { return ended_ && buffer_.empty(); }
  bool at_end() const { return ended_; }

  // Takes what is there to read now (it is readable): kept for the next line.
  void take_available() {
    char chunk[512];
    const auto n = ::read(fd_, chunk, sizeof chunk);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) ended_ = true;
    else if (n > 0) buffer_.append(chunk, static_cast<std::size_t>(n));
  }

  // The next line (without its newline), or nothing at `deadline_ms` or the end.
  std::optional<std::string> next(std::int64_t deadline_ms) {
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (ended_) {
        if (buffer_.empty()) return std::nullopt;
        return std::exchange(buffer_, {});
      }
      const auto left = deadline_ms - now_ms();
      if (left <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 60'000)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;  // timed out: the loop checks the deadline
      char chunk[512];
      const auto n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ended_ = true;
      else buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buffer_;
  bool ended_ = false;
};

// A person at the terminal (or what stdin carries): asked again until the reply is one of
// the answers; nothing when the question's time is up first.
std::optional<std::string> ask_person(const approval_question& q, line_reader& in, bool colour) {
  say(evidence::approval_prompt(q, colour));
  for (;;) {
    auto typed = in.next(q.expires_at_ms);
    if (!typed) {
      say(in.ended() ? "\n" : "\nairlock: no answer in time: the denial stood\n");
      return std::nullopt;
    }
    if (auto answer = evidence::parse_approval_reply(*typed)) return answer;
    say("  o, s or d? ");
  }
}

// A program's verdict: it reads the question's line on stdin (AIRLOCK_APPROVAL_ID,
// AIRLOCK_SESSION, AIRLOCK_NAME and AIRLOCK_PORT in its environment) and prints
// allow-once, allow-session or deny. It is killed when the question's time is up; a
// program that fails or says anything else is a deny.
std::optional<std::string> ask_program(const std::string& command, const approval_question& q) {
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0) return std::nullopt;
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return std::nullopt;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    ::setenv("AIRLOCK_APPROVAL_ID", q.id.c_str(), 1);
    ::setenv("AIRLOCK_SESSION", q.session.c_str(), 1);
    ::setenv("AIRLOCK_NAME", q.name.c_str(), 1);
    ::setenv("AIRLOCK_PORT", std::to_string(q.port).c_str(), 1);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (pid < 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    return std::nullopt;
  }
  const std::string input = q.line + "\n";
  [[maybe_unused]] const auto written = ::write(to_child[1], input.data(), input.size());
  ::close(to_child[1]);
  line_reader out(from_child[0]);
  auto said = out.next(q.expires_at_ms);
  ::close(from_child[0]);
  int status = 0;
  if (!said && !out.ended()) ::kill(pid, SIGKILL);  // out of time: the program we started, by its pid
  ::waitpid(pid, &status, 0);
  if (!said) {
    std::fprintf(stderr, "airlock approve: %s: the program said nothing in time\n", q.id.c_str());
    return out.ended() && WIFEXITED(status) ? std::optional<std::string>("deny") : std::nullopt;
  }
  const auto word = std::string(base::trim(*said));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      (word != "allow-once" && word != "allow-session" && word != "deny")) {
    std::fprintf(stderr, "airlock approve: %s: the program exited %d saying '%s': deny\n", q.id.c_str(),
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1, word.c_str());
    return "deny";
  }
  return word;
}

}  // namespace

int run_approve_command(args a) {
  arg_reader r("approve", a);
  const auto socket = control_socket(r);
  const auto session = r.value("", "--session");
  const auto exec = r.value("", "--exec");
  auto by = r.value("", "--by");
  const bool as_json = r.flag("--json");
  if (auto rest = r.positionals(); !rest.empty()) r.fail("unexpected argument '" + rest.front() + "'");
  if (session && session->empty()) r.fail("--session: expected a session id");
  if (exec && exec->empty()) r.fail("--exec: expected a command");
  if (r.failed()) return r.usage_error();
  if (!by) {
    const char* user = std::getenv("SUDO_USER");
    if (!user || !*user) user = std::getenv("USER");
    by = exec ? "exec:" + *exec : std::string(user && *user ? user : "terminal");
  }

  std::signal(SIGPIPE, SIG_IGN);
  const char* no_colour = std::getenv("NO_COLOR");
  const bool colour = !exec && isatty(STDOUT_FILENO) && (!no_colour || !*no_colour);
  line_reader terminal(STDIN_FILENO);
  std::string target = "/v1/approvals";
  if (session) target += "?session=" + control::percent_encoded(*session);
  if (!exec)
    say("airlock approve: answering for " + (session ? "session " + *session : "every session") + " as '" + *by +
        "'; waiting for questions\n");

  bool stdin_done = false;
  auto streamed = control::stream_lines(
      socket, target, std::chrono::seconds(30),
      [&](std::string_view line) {
        if (as_json) say(std::string(line) + "\n");
        auto q = evidence::parse_approval_question(line);
        if (!q) return true;  // an end, or a line of a newer daemon
        q->expires_in_ms = q->expires_at_ms - now_ms();
        if (q->expires_in_ms <= 0) return true;  // its time passed while an earlier one was asked
        auto answer = exec ? ask_program(*exec, *q) : ask_person(*q, terminal, colour);
        if (!exec && terminal.ended()) {
          stdin_done = true;
          if (!answer) return false;
        }
        if (!answer) return !stdin_done;
        const auto body = json::serialize(json::object{{"answer", *answer}, {"by", *by}});
        auto done = control::api_call(socket, http::verb::post, "/v1/approvals/" + q->id, body);
        if (!done.has_value()) {
          say("airlock: " + q->id + ": " + done.error() + "\n");
        } else if (as_json) {
          say(json::serialize(*done) + "\n");
        } else {
          const auto& o = done->as_object();
          std::string text = "airlock: " + q->id + " " + std::string(o.at("answer").as_string());
          if (const auto* g = o.if_contains("grant"); g && g->is_string())
            text += " (grant " + std::string(g->as_string()) + ")";
          text += "; " + json::serialize(o.at("held")) + " held let go";
          if (const auto* n = o.if_contains("note"); n && n->is_string()) text += "; " + std::string(n->as_string());
          say(text + "\n");
        }
        return !stdin_done;
      },
      // Between questions too: the end of stdin stops the approver (typed-ahead answers are kept).
      exec ? control::stream_watch{} : control::stream_watch{STDIN_FILENO, [&] {
                                                               terminal.take_available();
                                                               stdin_done = terminal.at_end();
                                                               return !stdin_done;
                                                             }});
  if (stdin_done) {
    std::fprintf(stderr, "airlock approve: no more answers on stdin; stopping\n");
    return exit_ok;
  }
  if (!streamed) {
    std::fprintf(stderr, "airlock approve: %s\n", streamed.error().c_str());
    return exit_error;
  }
  return exit_ok;
}

}  // namespace airlock::app
