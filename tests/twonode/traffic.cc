// twonode_traffic: one connection between the two nodes of the pair (scripts/vm/pair.sh), made
// the way a transport makes it (the public API, wireup.hpp, with the configuration given on the
// command line), then every kind of packet a transport puts on such a QP, each way: a SEND, an
// RDMA WRITE into the peer's buffer and an RDMA READ from it, each one checked. It exists so
// that a capture of the link (tests/twonode/suite.sh, case tos) sees the CM's MADs and the data
// packets of one known connection; the checks make sure those packets are the ones asked for.
//
//   twonode_traffic --dir D --round R [--config FILE] [--set section.key=value]...
//
// Run once on each node (WIREUP_VM_NODE says which: node N is rank N-1 of 2). The nodes meet
// through files in D (the shared build tree): R.addr.N (the wireup address), R.mr.N (the buffer
// the other node may write and read), R.ready.N (receive posted), R.done.N (every operation
// completed). Prints "[twonode] traffic ..." lines; exit 0 iff every check passed.
#include <infiniband/verbs.h>
#include <poll.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "wireup/wireup.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kJobKey = 0x7a1f1c0ffee5ULL;
constexpr size_t kChunk = 512;  // bytes per WRITE and per READ: one packet at any RoCE MTU

// The buffer one node registers: the peer WRITEs into `landing` and READs from `source`; the
// local side SENDs from `out`, receives into `in` and READs into `fetched`.
struct Buffer {
  uint8_t landing[kChunk];
  uint8_t source[kChunk];
  uint8_t fetched[kChunk];
  char out[64];
  char in[64];
};

void fill(uint8_t* p, uint32_t seed) {
  for (size_t i = 0; i < kChunk; ++i) p[i] = static_cast<uint8_t>(seed * 31 + i * 7);
}
bool same(const uint8_t* p, uint32_t seed) {
  std::vector<uint8_t> want(kChunk);
  fill(want.data(), seed);
  return std::memcmp(p, want.data(), kChunk) == 0;
}
// The byte pattern node N writes into the other's landing area, and the one it offers to READ.
uint32_t write_seed(uint32_t node) { return 10 + node; }
uint32_t read_seed(uint32_t node) { return 20 + node; }

std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) s += {d[x >> 4], d[x & 15]};
  return s;
}
std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> b;
  for (size_t i = 0; i + 1 < s.size(); i += 2) b.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return b;
}

// Written under a temporary name and renamed: the other node never reads half a file.
void publish(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  std::ofstream(tmp) << text << "\n";
  fs::rename(tmp, p);
}
// The other node's file, or "" after 60 s.
std::string await(const fs::path& p) {
  for (const auto t0 = Clock::now(); Clock::now() - t0 < 60s; std::this_thread::sleep_for(20ms)) {
    std::ifstream in(p);
    std::string s;
    if (std::getline(in, s) && !s.empty()) return s;
  }
  return "";
}

struct Checks {
  int failed = 0;
  void expect(bool ok, const std::string& what) {
    if (!ok) std::printf("[twonode] FAILED: traffic: %s\n", what.c_str()), ++failed;
  }
};

// Polls `cq` until `sends` send completions and `recvs` receive completions arrived, or 30 s.
void complete(ibv_cq* cq, int sends, int recvs, Checks& c) {
  const auto t0 = Clock::now();
  while ((sends > 0 || recvs > 0) && Clock::now() - t0 < 30s) {
    ibv_wc wc[8];
    const int n = ibv_poll_cq(cq, 8, wc);
    for (int i = 0; i < n; ++i) {
      const bool recv = wc[i].wr_id == 0;
      (recv ? recvs : sends)--;
      c.expect(wc[i].status == IBV_WC_SUCCESS, std::string(recv ? "the receive" : "work request " +
                                                                        std::to_string(wc[i].wr_id)) +
                                                   " completed with " + ibv_wc_status_str(wc[i].status));
    }
    if (n == 0) std::this_thread::sleep_for(1ms);
  }
  c.expect(sends <= 0 && recvs <= 0, std::to_string(sends) + " sends and " + std::to_string(recvs) +
                                         " receives still missing after 30 s");
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, round;
  wireup::ContextParams cp;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") dir = v;
    else if (k == "--round") round = v;
    else if (k == "--config") cp.config_file = v;
    else if (k == "--set") cp.overrides.push_back(v);
    else return std::fprintf(stderr, "twonode_traffic: unknown option %s\n", k.c_str()), 64;
  }
  const char* node_env = std::getenv("WIREUP_VM_NODE");
  const uint32_t node = node_env ? static_cast<uint32_t>(std::atoi(node_env)) : 0;
  if (dir.empty() || round.empty() || (node != 1 && node != 2))
    return std::fprintf(stderr, "twonode_traffic: --dir and --round are required, on a node of the pair\n"), 64;
  const uint32_t other = 3 - node;
  auto file = [&](const char* what, uint32_t n) { return fs::path(dir) / (round + "." + what + "." + std::to_string(n)); };
  Checks c;
  const auto t_start = Clock::now();
  auto ms = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  Clock::time_point t_wired, t_moved;
  try {
    wireup::Context ctx(cp);
    ibv_pd* pd = ibv_alloc_pd(ctx.ibv_context());
    ibv_cq* cq = pd ? ibv_create_cq(ctx.ibv_context(), 16, nullptr, nullptr, 0) : nullptr;
    if (cq == nullptr) return std::printf("[twonode] FAILED: traffic: ibv_alloc_pd/ibv_create_cq: %s\n", std::strerror(errno)), 1;
    std::vector<ibv_qp*> qps;  // every QP made, destroyed after the wireup
    {
      wireup::Wireup w(ctx, {node - 1, 2, 1, kJobKey}, [&](const wireup::QpRequest&) {
        ibv_qp_init_attr a{};
        a.send_cq = a.recv_cq = cq;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = a.cap.max_recv_wr = 4;
        a.cap.max_send_sge = a.cap.max_recv_sge = 1;
        ibv_qp* qp = ibv_create_qp(pd, &a);
        if (qp) qps.push_back(qp);
        return qp;
      });
      publish(file("addr", node), hex(w.local_address()));
      const std::string theirs = await(file("addr", other));
      if (theirs.empty()) return std::printf("[twonode] FAILED: traffic: no address from node %u\n", other), 1;
      std::vector<wireup::PeerAddress> peers(2);
      peers[node - 1] = {node - 1, w.local_address()};
      peers[other - 1] = {other - 1, unhex(theirs)};
      w.set_peers(peers);
      w.start();
      for (const auto t0 = Clock::now(); !w.done() && Clock::now() - t0 < 60s;) {
        if (w.progress() > 0) continue;
        pollfd p{w.fd(), POLLIN, 0};
        ::poll(&p, 1, 100);
      }
      t_wired = Clock::now();
      const auto res = w.results();
      c.expect(w.done() && res.size() == 1, "one connection expected, " + std::to_string(res.size()) + " made");
      if (res.size() != 1) return 1;
      const wireup_result_t& r = res[0];

      auto buffer = std::make_unique<Buffer>();
      Buffer* b = buffer.get();
      ibv_mr* mr = ibv_reg_mr(pd, b, sizeof *b,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
      if (mr == nullptr) return std::printf("[twonode] FAILED: traffic: ibv_reg_mr: %s\n", std::strerror(errno)), 1;
      fill(b->source, read_seed(node));
      std::snprintf(b->out, sizeof b->out, "SEND from node %u", node);
      ibv_sge rs{reinterpret_cast<uintptr_t>(b->in), sizeof b->in, mr->lkey};
      ibv_recv_wr rw{}, *bad_r = nullptr;
      rw.wr_id = 0;
      rw.sg_list = &rs;
      rw.num_sge = 1;
      c.expect(ibv_post_recv(r.qp, &rw, &bad_r) == 0, "ibv_post_recv");
      publish(file("mr", node), std::to_string(reinterpret_cast<uintptr_t>(b)) + " " + std::to_string(mr->rkey));
      publish(file("ready", node), "1");
      std::istringstream their_mr(await(file("mr", other)));
      uint64_t raddr = 0;
      uint32_t rkey = 0;
      c.expect(static_cast<bool>(their_mr >> raddr >> rkey) && !await(file("ready", other)).empty(),
               "node " + std::to_string(other) + "'s buffer and receive");
      if (c.failed) return 1;

      // SEND, RDMA WRITE into the peer's landing area, RDMA READ of the peer's source area.
      fill(b->fetched, 0);
      std::vector<uint8_t> wdata(kChunk);
      fill(wdata.data(), write_seed(node));
      ibv_mr* wmr = ibv_reg_mr(pd, wdata.data(), kChunk, 0);
      ibv_sge s_send{reinterpret_cast<uintptr_t>(b->out), static_cast<uint32_t>(std::strlen(b->out) + 1), mr->lkey};
      ibv_sge s_write{reinterpret_cast<uintptr_t>(wdata.data()), kChunk, wmr ? wmr->lkey : 0};
      ibv_sge s_read{reinterpret_cast<uintptr_t>(b->fetched), kChunk, mr->lkey};
      ibv_send_wr wr[3]{};
      wr[0].wr_id = 1, wr[0].opcode = IBV_WR_SEND, wr[0].sg_list = &s_send;
      wr[1].wr_id = 2, wr[1].opcode = IBV_WR_RDMA_WRITE, wr[1].sg_list = &s_write;
      wr[1].wr.rdma = {raddr + offsetof(Buffer, landing), rkey};
      wr[2].wr_id = 3, wr[2].opcode = IBV_WR_RDMA_READ, wr[2].sg_list = &s_read;
      wr[2].wr.rdma = {raddr + offsetof(Buffer, source), rkey};
      for (int i = 0; i < 3; ++i) {
        wr[i].num_sge = 1;
        wr[i].send_flags = IBV_SEND_SIGNALED;
        wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
      }
      ibv_send_wr* bad_s = nullptr;
      c.expect(wmr != nullptr && ibv_post_send(r.qp, wr, &bad_s) == 0, "ibv_post_send of SEND, WRITE, READ");
      complete(cq, 3, 1, c);
      char want[64];
      std::snprintf(want, sizeof want, "SEND from node %u", other);
      c.expect(std::strcmp(b->in, want) == 0, "the SEND received holds '" + std::string(b->in, strnlen(b->in, 63)) + "'");
      c.expect(same(b->fetched, read_seed(other)), "the READ brought node " + std::to_string(other) + "'s bytes");
      // The peer's WRITE has landed once its completion came (the ACK follows the placement).
      publish(file("done", node), "1");
      c.expect(!await(file("done", other)).empty(), "node " + std::to_string(other) + " finished");
      c.expect(same(b->landing, write_seed(other)), "node " + std::to_string(other) + "'s WRITE landed");
      t_moved = Clock::now();
      {  // what the QP was given: the traffic class its packets carry, the remote access
        ibv_qp_attr qa{};
        ibv_qp_init_attr qi{};
        ibv_query_qp(r.qp, &qa, IBV_QP_AV | IBV_QP_ACCESS_FLAGS, &qi);
        std::printf("[twonode] traffic %s node %u: %s side, qpn 0x%x -> 0x%x, cm.tos %s, QP traffic class %u, "
                    "access 0x%x; SEND, RDMA WRITE, RDMA READ each way: %s\n",
                    round.c_str(), node, r.active ? "initiating" : "accepting", r.local_qpn, r.remote_qpn,
                    ctx.config_value("cm.tos").c_str(), qa.ah_attr.grh.traffic_class, qa.qp_access_flags,
                    c.failed ? "FAILED" : "ok");
      }
      if (wmr) ibv_dereg_mr(wmr);
      ibv_dereg_mr(mr);
    }  // wireup_destroy: the DREQ/DREP go out here, before the QPs are destroyed
    const auto t_down = Clock::now();
    std::printf("[twonode] traffic %s node %u: %.0f ms to connect (context, exchange, wireup), %.0f ms for the "
                "traffic, %.0f ms to tear down\n",
                round.c_str(), node, ms(t_start, t_wired), ms(t_wired, t_moved), ms(t_moved, t_down));
    for (ibv_qp* qp : qps) ibv_destroy_qp(qp);
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
  } catch (const wireup::Exception& e) {
    std::printf("[twonode] FAILED: traffic: %s\n", e.what());
    return 1;
  }
  std::fflush(stdout);
  return c.failed ? 1 : 0;
}
