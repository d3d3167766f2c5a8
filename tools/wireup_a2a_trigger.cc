#include "wireup_a2a_trigger.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "wireup_a2a_driver.h"

extern char** environ;

namespace wireup::a2a {

ConnTrigger::ConnTrigger(const Options& o, int rank) : cmd_(o.run_cmd), after_(uint64_t(o.run_after_conns)), rank_(rank) {
  if (!cmd_.empty() && rank == o.run_rank) state_ = State::armed;
}

ConnTrigger::~ConnTrigger() {
  if (state_ == State::running) finish(0);  // reaped if it is over, else left to init
}

void ConnTrigger::poll(uint64_t established) {
  if (state_ != State::armed || established < after_) return;
  const char* argv[] = {"/bin/sh", "-c", cmd_.c_str(), nullptr};
  started_s_ = realtime_s();
  const int rc = posix_spawn(&pid_, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ);
  if (rc != 0) {
    std::fprintf(stderr, "[a2a] rank %d: --run '%s' at %llu connections: posix_spawn: %s\n", rank_, cmd_.c_str(),
                 (unsigned long long)established, std::strerror(rc));
    state_ = State::ended;
    return;
  }
  std::fprintf(stderr, "[a2a] rank %d: --run '%s' started at %llu connections established, at %.6f\n", rank_,
               cmd_.c_str(), (unsigned long long)established, started_s_);
  state_ = State::running;
}

void ConnTrigger::finish(double timeout_s) {
  if (state_ == State::armed)
    std::fprintf(stderr, "[a2a] rank %d: --run '%s' never started (fewer than %llu connections)\n", rank_, cmd_.c_str(),
                 (unsigned long long)after_);
  if (state_ != State::running) return;
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) {
      std::fprintf(stderr, "[a2a] rank %d: --run '%s': waitpid: %s\n", rank_, cmd_.c_str(), std::strerror(errno));
      state_ = State::ended;
      return;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= timeout_s) {
      // Left running: it may wait for another process of the job (`rdma link delete` for every
      // user of the device), which may wait for this one; init reaps it once we are gone.
      std::fprintf(stderr, "[a2a] rank %d: --run '%s' still running %.0f s after the close: left to run\n", rank_,
                   cmd_.c_str(), timeout_s);
      state_ = State::ended;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  state_ = State::ended;
  std::fprintf(stderr, "[a2a] rank %d: --run '%s' ended %.3f s after it started, %s %d\n", rank_, cmd_.c_str(),
               realtime_s() - started_s_, WIFEXITED(status) ? "exit" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

}  // namespace wireup::a2a
