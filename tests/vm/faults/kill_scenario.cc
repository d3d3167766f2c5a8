// A rank SIGKILLed in the middle of wireup. One process per rank, because what matters is what
// the kernel does when a process dies with CM ids open: ucma closes them, so its established
// connections get a DREQ (DISCONNECTED at the peers), its half-open ones a REJ, and with its
// listener gone new REQs to it are refused with reason 8 (no listener).
//
// The parent forks the ranks before anything touches RDMA (verbs and fork do not mix), relays
// the addresses, SIGKILLs the victim as soon as it says `after` of its pairs are connected, then
// reads every survivor's report and checks it:
//  - survivors are connected to each other on every lane, QPNs crossed, no errors among them;
//  - for the victim, every (victim, lane) of a survivor is connected (before the kill) or
//    reported with a reason, and at least one is reported (the kill was mid-wireup);
//  - each survivor's connections to the victim ended in a DISCONNECTED on the steady channel.
#include "tests/vm/faults/kill_scenario.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "tests/vm/faults/faults_common.h"
#include "wireup/address.h"

namespace wireup::vmfaults {
namespace {

using namespace std::chrono_literals;

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) s += {d[x >> 4], d[x & 15]};
  return s;
}
std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 1 < s.size(); i += 2)
    b.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return b;
}

void put(int fd, const std::string& s) {
  for (size_t off = 0; off < s.size();) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Lines from a pipe, with a timeout per line.
struct Lines {
  int fd = -1;
  std::string buf;
  bool next(std::string& line, int timeout_ms) {
    for (;;) {
      if (auto nl = buf.find('\n'); nl != std::string::npos) {
        line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        return true;
      }
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return false;
      char tmp[4096];
      ssize_t n = read(fd, tmp, sizeof tmp);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
    }
  }
};

// One rank's process: its engine, the address exchange through the parent, the report.
int child(uint32_t me, uint32_t n, uint32_t lanes, bool victim, uint32_t after, const prov::SockAddr& addr,
          Nanos timeout, int up, int down) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
  auto p = prov::create_rdma_provider();
  if (!p) return put(up, "FAIL " + p.error().message() + "\n"), 2;
  std::vector<Rank> ranks(1);
  if (Status s = make_rank(**p, ranks[0], vm_options(me, n, lanes, addr, timeout)); !s)
    return put(up, "FAIL " + s.message() + "\n"), 2;
  Engine& e = *ranks[0].engine;
  put(up, "ADDR " + hex(e.local_address()) + "\n");
  Lines in{down, {}};
  std::vector<Peer> table;
  for (std::string line; table.size() < n && in.next(line, 60000);) {
    std::istringstream ls(line);
    uint32_t r;
    std::string h;
    ls >> r >> h;
    table.push_back(Peer{r, unhex(h)});
  }
  if (Status s = e.set_peers(table); !s) return put(up, "FAIL " + s.message() + "\n"), 2;
  if (Status s = e.start(); !s) return put(up, "FAIL " + s.message() + "\n"), 2;
  bool said = false;
  while (!e.done()) {
    if (!e.progress()) return 2;
    if (victim && !said && e.results().size() >= after) {
      put(up, "AT " + std::to_string(e.results().size()) + "\n");
      said = true;  // and carry on until the parent's SIGKILL lands
    }
    (void)e.wait(20ms);
  }
  linger(**p, ranks, 1s);  // DISCONNECTEDs from the victim's DREQs
  std::ostringstream r;
  for (const ConnResult& x : e.results())
    r << "R " << x.peer << ' ' << x.lane << ' ' << int(x.role) << ' ' << x.local_qpn << ' ' << x.remote_qpn << '\n';
  for (const PeerError& x : e.errors())
    r << "E " << x.peer << ' ' << x.lane << ' ' << int(x.failure.kind) << ' ' << x.describe() << '\n';
  for (const SteadyEvent& x : *ranks[0].steady)
    r << "S " << x.peer << ' ' << x.lane << ' ' << prov::to_string(x.type) << '\n';
  r << "END\n";
  put(up, r.str());
  (void)e.close(0s);
  return 0;
}

struct Report {
  std::map<std::pair<uint32_t, uint32_t>, std::tuple<int, uint32_t, uint32_t>> conn;  // (peer, lane) -> role, l, r
  std::map<std::pair<uint32_t, uint32_t>, std::pair<int, std::string>> err;         // -> kind, text
  std::map<uint32_t, int> disconnected;                                               // peer -> count
  bool complete = false;
};

}  // namespace

int kill_scenario(const std::string& addr_text, uint32_t n, uint32_t lanes, uint32_t victim, uint32_t after,
                  Nanos timeout) {
  auto addr = prov::SockAddr::parse(addr_text);
  if (!addr || n < 3 || victim >= n || after == 0 || after >= (n - 1) * lanes)
    return std::printf("kill: bad arguments\n"), 2;
  std::vector<pid_t> pids(n);
  std::vector<Lines> from(n);
  std::vector<int> to(n);
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (uint32_t i = 0; i < n; ++i) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) return 2;
    pids[i] = fork();
    if (pids[i] == 0) {
      close(up[0]);
      close(down[1]);
      _exit(child(i, n, lanes, i == victim, after, *addr, timeout, up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    from[i].fd = up[0];
    to[i] = down[1];
  }
  Checks c;
  std::string table, line;
  for (uint32_t i = 0; i < n; ++i) {
    if (!from[i].next(line, 60000) || line.rfind("ADDR ", 0) != 0)
      return std::printf("kill: rank %u did not start: %s\n", i, line.c_str()), 2;
    table += std::to_string(i) + " " + line.substr(5) + "\n";
  }
  for (uint32_t i = 0; i < n; ++i) put(to[i], table);
  const bool reached = from[victim].next(line, 60000) && line.rfind("AT ", 0) == 0;
  kill(pids[victim], SIGKILL);
  const double killed_at = since();
  const std::string when =
      reached ? line.substr(3) + " of its " + std::to_string((n - 1) * lanes) + " pairs connected" : "?";
  c.expect(reached, "the victim never reported " + std::to_string(after) + " pairs connected: " + line);
  std::vector<Report> rep(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (i == victim) continue;
    while (from[i].next(line, static_cast<int>(timeout.count() / 1000000) + 60000)) {
      std::istringstream ls(line);
      std::string tag;
      uint32_t peer = 0, lane = 0;
      ls >> tag >> peer >> lane;
      if (tag == "R") {
        int role;
        uint32_t l, r;
        ls >> role >> l >> r;
        rep[i].conn[{peer, lane}] = {role, l, r};
      } else if (tag == "E") {
        int kind;
        ls >> kind;
        std::string text;
        std::getline(ls, text);
        rep[i].err[{peer, lane}] = {kind, text};
      } else if (tag == "S") {
        std::string type;
        ls >> type;
        if (type == "DISCONNECTED") rep[i].disconnected[peer]++;
      } else if (tag == "END") {
        rep[i].complete = true;
        break;
      } else {
        c.expect(false, "rank " + std::to_string(i) + ": " + line);
      }
    }
  }
  const double survivors_done = since();
  for (uint32_t i = 0; i < n; ++i) {
    int st = 0;
    waitpid(pids[i], &st, 0);
    if (i == victim) c.expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the victim was not killed by SIGKILL");
    else c.expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank " + std::to_string(i) + " exited badly");
  }
  uint32_t connected = 0, reported = 0, disconnects = 0;
  std::map<std::string, int> reasons;
  for (uint32_t i = 0; i < n; ++i) {
    if (i == victim) continue;
    const std::string who = "rank " + std::to_string(i);
    c.expect(rep[i].complete, who + " sent no complete report");
    for (uint32_t j = 0; j < n; ++j) {
      if (j == i) continue;
      for (uint32_t l = 0; l < lanes; ++l) {
        const bool has = rep[i].conn.count({j, l}) != 0, failed = rep[i].err.count({j, l}) != 0;
        const std::string pair = who + " -> " + std::to_string(j) + " lane " + std::to_string(l);
        c.expect(has != failed, pair + (has ? ": both connected and reported" : ": neither connected nor reported"));
        if (j == victim) {
          connected += has;
          if (failed) {
            ++reported;
            c.expect(rep[i].err[{j, l}].first != 0, pair + ": reported without a reason");
            reasons[rep[i].err[{j, l}].second]++;
          }
          continue;
        }
        c.expect(!failed, pair + ":" + (failed ? rep[i].err[{j, l}].second : ""));
        if (!has || !rep[j].conn.count({i, l})) continue;
        auto [ra, la, xa] = rep[i].conn[{j, l}];
        auto [rb, lb, xb] = rep[j].conn[{i, l}];
        c.expect(xa == lb && la == xb && ra != rb, pair + ": QPNs not crossed or roles equal");
      }
    }
    disconnects += rep[i].disconnected[victim];
  }
  c.expect(reported > 0, "no survivor reported a failure for the victim: it was not killed mid-wireup");
  c.expect(disconnects == connected, std::to_string(connected) + " connections to the victim, but " +
                                         std::to_string(disconnects) + " DISCONNECTED events");
  std::printf("[faults] kill: rank %u SIGKILLed at %.2f s with %s; %u survivors done at %.2f s (timeout %.0f s); "
              "their pairs with it: %u connected before the kill (then %u DISCONNECTED), %u reported:\n",
              victim, killed_at, when.c_str(), n - 1, survivors_done, timeout.count() / 1e9, connected, disconnects,
              reported);
  for (auto& [why, count] : reasons) std::printf("[faults]   %d x%s\n", count, why.c_str());
  return c.failed ? 1 : 0;
}

}  // namespace wireup::vmfaults
