// A rank killed with SIGKILL after wireup, on the real stack (rxe in the VM): its kernel closes
// its rdma_cm ids, the IB CM sends a DREQ for each established connection, and every survivor
// must get exactly one WIREUP_EVENT_PEER_DOWN naming it (cause disconnected, all its lanes)
// within a second, through the public C++ API (Wireup::on_peer_down).
//
//   peer_down_kill [--ranks N] [--lanes L] [--signal KILL|STOP] [--within-ms T]
//                  [--config FILE] [--set section.key=value]...
//
// --signal STOP (with --set liveness.enable=true): the rank is stopped instead, as a node that
// loses power is: no DREQ, no heartbeat; the survivors must each get one PEER_DOWN with cause
// silent within T ms (the liveness deadline). The stopped rank is killed afterwards.
// --linger-ms M (default 2000): how long past T the survivors keep progressing before they
// report (a second event would be a duplicate).
//
// With the liveness service on, each survivor also reports its counters (wireup_counters_t's
// liveness_*, and whether wireup_stats_json has its "liveness" part): datagrams went both ways,
// none was dropped as bad, and every survivor knows the rank is dead. After SIGKILL the death
// comes from the DREQs and is handed to the service, so nobody suspects or declares it (run with
// a linger past the liveness deadline, that fails if the DREQs' death is not passed on).
//
// The ranks are processes forked before any verbs call (each opens its own device context);
// the parent only launches, exchanges addresses over one SOCK_SEQPACKET socketpair per rank,
// kills the last rank, and collects what each survivor saw and when (CLOCK_MONOTONIC, one
// kernel: the delays are comparable). Exit 0 only if every check held.
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <wireup/wireup.hpp>

namespace {

constexpr uint64_t kJobKey = 0x70d0;

int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// One datagram each way: a tag byte, then the payload.
bool send_msg(int fd, char tag, const void* data, size_t len) {
  std::vector<char> b(1 + len);
  b[0] = tag;
  if (len) std::memcpy(b.data() + 1, data, len);
  return ::send(fd, b.data(), b.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(b.size());
}
// Waits up to `ms` for a datagram; returns its tag (0 on timeout or error) and its payload.
char recv_msg(int fd, std::vector<char>& payload, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return 0;
  char b[4096];
  const ssize_t n = ::recv(fd, b, sizeof b, 0);
  if (n <= 0) return 0;
  payload.assign(b + 1, b + n);
  return b[0];
}

struct Seen {  // one peer-down as a survivor saw it, sent to the parent
  uint32_t peer, lanes;
  int32_t cause;
  int64_t at_ns;
};

struct Live {  // a survivor's liveness counters, sent before its Seen list
  uint64_t sent, received, bad, suspicions, declared, learnt;
  uint32_t json_has_liveness;
};

int rank_main(int fd, uint32_t rank, uint32_t ranks, uint32_t lanes, const wireup::ContextParams& cp) {
  try {
    wireup::Context ctx(cp);
    ibv_pd* pd = ibv_alloc_pd(ctx.ibv_context());
    ibv_cq* cq = pd ? ibv_create_cq(ctx.ibv_context(), 256, nullptr, nullptr, 0) : nullptr;
    if (cq == nullptr) return std::fprintf(stderr, "rank %u: ibv_alloc_pd/ibv_create_cq: %s\n", rank, std::strerror(errno)), 1;
    std::vector<ibv_qp*> qps;
    wireup::Wireup w(ctx, {rank, ranks, lanes, kJobKey}, [&](const wireup::QpRequest&) {
      ibv_qp_init_attr a{};
      a.send_cq = a.recv_cq = cq;
      a.qp_type = IBV_QPT_RC;
      a.cap.max_send_wr = a.cap.max_recv_wr = 4;
      a.cap.max_send_sge = a.cap.max_recv_sge = 1;
      ibv_qp* qp = ibv_create_qp(pd, &a);
      if (qp) qps.push_back(qp);
      return qp;
    });
    std::vector<Seen> seen;
    w.on_peer_down([&](const wireup::PeerDown& d) { seen.push_back({d.peer, d.lanes, d.cause, mono_ns()}); });
    const auto mine = w.local_address();
    if (!send_msg(fd, 'A', mine.data(), mine.size())) return 1;
    std::vector<wireup::PeerAddress> peers;
    std::vector<char> m;
    while (peers.size() < ranks) {
      if (recv_msg(fd, m, 60000) != 'P' || m.size() < 4) return std::fprintf(stderr, "rank %u: no peer table\n", rank), 1;
      uint32_t r;
      std::memcpy(&r, m.data(), 4);
      peers.push_back({r, std::vector<uint8_t>(m.begin() + 4, m.end())});
    }
    w.set_peers(peers);
    w.start();
    for (const int64_t t0 = mono_ns(); !w.done() && mono_ns() - t0 < 120'000'000'000;)
      if (w.progress() == 0) w.wait(std::chrono::milliseconds(100));
    const uint32_t made = static_cast<uint32_t>(w.result_count());
    if (!send_msg(fd, 'W', &made, sizeof made)) return 1;
    // Steady state: progress until the parent says stop, as a transport's event loop would.
    for (;;) {
      w.progress();
      pollfd p[2] = {{w.fd(), POLLIN, 0}, {fd, POLLIN, 0}};
      ::poll(p, 2, 50);
      if (p[1].revents != 0) {
        recv_msg(fd, m, 0);  // the parent's 'Q'
        break;
      }
    }
    w.progress();
    const wireup_counters_t c = w.counters();
    const Live live{c.liveness_sent, c.liveness_received, c.liveness_bad, c.liveness_suspicions, c.liveness_declared,
                    c.liveness_learnt, w.stats_json().find("\"liveness\":{") != std::string::npos ? 1u : 0u};
    std::vector<char> report(sizeof live + seen.size() * sizeof(Seen));
    std::memcpy(report.data(), &live, sizeof live);
    if (!seen.empty()) std::memcpy(report.data() + sizeof live, seen.data(), seen.size() * sizeof(Seen));
    send_msg(fd, 'S', report.data(), report.size());
    // Stay until every survivor has reported: a rank that left now would be the others' next
    // peer down.
    recv_msg(fd, m, 30000);
  } catch (const std::exception& e) {
    return std::fprintf(stderr, "rank %u: %s\n", rank, e.what()), 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t ranks = 4, lanes = 2;
  int sig = SIGKILL;
  double within_ms = 1000, linger_ms = 2000;
  bool live = false;
  wireup::ContextParams cp;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--ranks") ranks = static_cast<uint32_t>(std::stoul(v));
    else if (k == "--lanes") lanes = static_cast<uint32_t>(std::stoul(v));
    else if (k == "--signal" && (v == "KILL" || v == "STOP")) sig = v == "KILL" ? SIGKILL : SIGSTOP;
    else if (k == "--within-ms") within_ms = std::stod(v);
    else if (k == "--linger-ms") linger_ms = std::stod(v);
    else if (k == "--config") cp.config_file = v;
    else if (k == "--set") cp.overrides.push_back(v), live = live || v == "liveness.enable=true";
    else return std::fprintf(stderr, "peer_down_kill: unknown option %s\n", k.c_str()), 64;
  }
  if (ranks < 3) return std::fprintf(stderr, "peer_down_kill: --ranks must be at least 3\n"), 64;
  const uint32_t victim = ranks - 1;
  std::vector<pid_t> pids(ranks);
  std::vector<int> fds(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) return std::perror("socketpair"), 1;
    const pid_t pid = ::fork();
    if (pid < 0) return std::perror("fork"), 1;
    if (pid == 0) {
      ::close(sv[0]);
      _exit(rank_main(sv[1], r, ranks, lanes, cp));
    }
    ::close(sv[1]);
    pids[r] = pid;
    fds[r] = sv[0];
  }
  int failed = 0;
  auto fail = [&](const std::string& what) { std::printf("[vm] FAILED: peer_down_kill: %s\n", what.c_str()), ++failed; };
  std::vector<std::vector<char>> addr(ranks);
  std::vector<char> m;
  for (uint32_t r = 0; r < ranks && !failed; ++r)
    if (recv_msg(fds[r], addr[r], 60000) != 'A') fail("no address from rank " + std::to_string(r));
  for (uint32_t r = 0; r < ranks && !failed; ++r)
    for (uint32_t q = 0; q < ranks; ++q) {
      std::vector<char> p(4 + addr[q].size());
      std::memcpy(p.data(), &q, 4);
      std::memcpy(p.data() + 4, addr[q].data(), addr[q].size());
      send_msg(fds[r], 'P', p.data(), p.size());
    }
  for (uint32_t r = 0; r < ranks && !failed; ++r) {
    if (recv_msg(fds[r], m, 150000) != 'W' || m.size() != 4) {
      fail("rank " + std::to_string(r) + " did not finish its wireup");
      continue;
    }
    uint32_t made;
    std::memcpy(&made, m.data(), 4);
    if (made != (ranks - 1) * lanes) fail("rank " + std::to_string(r) + " made " + std::to_string(made) + " connections");
  }
  std::vector<double> delays;
  if (!failed) {
    ::usleep(200000);
    const int64_t killed = mono_ns();
    ::kill(pids[victim], sig);
    if (sig == SIGKILL) {
      ::waitpid(pids[victim], nullptr, 0);
      pids[victim] = 0;
    }
    // Anything after the first event would be a duplicate.
    ::usleep(static_cast<useconds_t>((within_ms + linger_ms) * 1000));
    uint64_t declared = 0, suspicions = 0;
    for (uint32_t r = 0; r < victim; ++r) {
      send_msg(fds[r], 'Q', nullptr, 0);
      if (recv_msg(fds[r], m, 10000) != 'S' || m.size() < sizeof(Live) || (m.size() - sizeof(Live)) % sizeof(Seen) != 0) {
        fail("no report from rank " + std::to_string(r));
        continue;
      }
      Live lv;
      std::memcpy(&lv, m.data(), sizeof lv);
      std::vector<Seen> seen((m.size() - sizeof lv) / sizeof(Seen));
      if (!seen.empty()) std::memcpy(seen.data(), m.data() + sizeof lv, seen.size() * sizeof(Seen));
      if (live) {
        std::printf("[vm] rank %u: liveness sent %llu, received %llu, bad %llu, suspicions %llu, declared %llu, learnt %llu\n", r,
                    (unsigned long long)lv.sent, (unsigned long long)lv.received, (unsigned long long)lv.bad,
                    (unsigned long long)lv.suspicions, (unsigned long long)lv.declared, (unsigned long long)lv.learnt);
        if (lv.sent == 0 || lv.received == 0) fail("rank " + std::to_string(r) + ": no liveness datagrams counted");
        if (lv.bad != 0) fail("rank " + std::to_string(r) + ": " + std::to_string(lv.bad) + " liveness datagrams counted bad");
        if (lv.learnt != 1) fail("rank " + std::to_string(r) + ": the liveness service knows " + std::to_string(lv.learnt) + " deaths, not 1");
        if (!lv.json_has_liveness) fail("rank " + std::to_string(r) + ": wireup_stats_json has no \"liveness\" part");
        declared += lv.declared;
        suspicions += lv.suspicions;
      }
      if (seen.size() != 1) {
        std::string which;
        for (const Seen& s : seen) which += " " + std::to_string(s.peer);
        fail("rank " + std::to_string(r) + " saw " + std::to_string(seen.size()) + " peer-down events, not 1:" + which);
        continue;
      }
      const Seen& s = seen[0];
      const double ms = (s.at_ns - killed) / 1e6;
      delays.push_back(ms);
      std::printf("[vm] rank %u: rank %u down, %u lanes, cause %s, %.1f ms after SIG%s\n", r, s.peer, s.lanes,
                  wireup_peer_down_cause_name(static_cast<wireup_peer_down_cause_t>(s.cause)), ms,
                  sig == SIGKILL ? "KILL" : "STOP");
      const int32_t cause = sig == SIGKILL ? WIREUP_PEER_DOWN_DISCONNECTED : WIREUP_PEER_DOWN_SILENT;
      if (s.peer != victim || s.lanes != lanes || s.cause != cause)
        fail("rank " + std::to_string(r) + ": wrong peer, lanes or cause");
      if (ms > within_ms) fail("rank " + std::to_string(r) + " learnt of it after " + std::to_string(ms) + " ms");
    }
    if (live && sig == SIGSTOP && declared == 0) fail("the stopped rank was declared by no survivor's liveness service");
    if (live && sig == SIGKILL && (declared != 0 || suspicions != 0))
      fail("the killed rank's DREQs were not passed to the liveness service: " + std::to_string(suspicions) +
           " suspicions, " + std::to_string(declared) + " declarations");
  }
  if (sig == SIGSTOP) {
    ::kill(pids[victim], SIGKILL);
    ::waitpid(pids[victim], nullptr, 0);
    pids[victim] = 0;
  }
  for (uint32_t r = 0; r < ranks; ++r)
    if (pids[r] != 0) send_msg(fds[r], 'X', nullptr, 0);
  for (uint32_t r = 0; r < ranks; ++r) {
    if (pids[r] == 0) continue;
    if (failed) ::kill(pids[r], SIGKILL);
    int st = 0;
    ::waitpid(pids[r], &st, 0);
    if (!failed && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) fail("rank " + std::to_string(r) + " exited badly");
  }
  if (!delays.empty()) {
    std::sort(delays.begin(), delays.end());
    std::printf("[vm] peer_down_kill: %u ranks x %u lanes, rank %u %s: %zu survivors each told once, "
                "%.1f / %.1f / %.1f ms (first / median / last)\n",
                ranks, lanes, victim, sig == SIGKILL ? "killed" : "stopped", delays.size(), delays.front(), delays[delays.size() / 2], delays.back());
  }
  std::printf("[vm] peer_down_kill: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
