// wireup_churn on the live stack: one context (the configuration's device), each rank's
// transport on libibverbs, the ranks polled on their fds; the counts are the kernel's own
// (`rdma -j resource show KIND`, the entries of this pid). Also the parts every backend uses.
#include <dirent.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "wireup_churn.h"

namespace wireup_churn {

std::string Counts::str() const {
  char b[160];
  std::snprintf(b, sizeof b, "cm_id %ld qp %ld cq %ld pd %ld mr %ld fds %ld rss %ld KiB", cm_id, qp, cq, pd, mr, fds,
                rss_kib);
  std::string s = b;
  if (virtual_s >= 0) {
    std::snprintf(b, sizeof b, " virtual %.1f s", virtual_s);
    s += b;
  }
  return s;
}

void measure_process(Counts& c) {
  c.fds = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++c.fds;
    closedir(d);
    --c.fds;  // opendir's own
  }
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    long size = 0, res = 0;
    if (std::fscanf(f, "%ld %ld", &size, &res) == 2) c.rss_kib = res * (sysconf(_SC_PAGESIZE) / 1024);
    std::fclose(f);
  }
}

void Transport::destroy(ibv_qp* q, const char* why) {
  if (live.erase(q) == 0) {
    ++double_release;
    fail("QP %p %s but not live (released or destroyed before)", static_cast<void*>(q), why);
    return;
  }
  if (int rc = destroy_qp(q); rc != 0) fail("destroying a QP (%s): %s", why, std::strerror(rc));
  ++destroyed;
}

int Transport::create(void* arg, const wireup_qp_request_t*, ibv_qp** out) {
  auto* t = static_cast<Transport*>(arg);
  errno = 0;
  ibv_qp* qp = t->make_qp();
  if (qp == nullptr) return errno != 0 ? errno : ENOMEM;
  t->live.insert(qp);
  ++t->created;
  *out = qp;
  return 0;
}

void Transport::release(void* arg, const wireup_qp_request_t*, ibv_qp* qp) {
  static_cast<Transport*>(arg)->destroy(qp, "handed back by the release callback");
}

namespace {

using Clock = std::chrono::steady_clock;

struct VerbsTransport final : Transport {
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  explicit VerbsTransport(ibv_context* ctx) : pd(ibv_alloc_pd(ctx)), cq(ibv_create_cq(ctx, 1024, nullptr, nullptr, 0)) {
    if (pd == nullptr || cq == nullptr) fail("ibv_alloc_pd/ibv_create_cq: %s", std::strerror(errno));
  }
  ~VerbsTransport() override {
    for (ibv_qp* q : live) ibv_destroy_qp(q);  // what a restarted rank still held
    if (cq != nullptr) ibv_destroy_cq(cq);
    if (pd != nullptr) ibv_dealloc_pd(pd);
  }
  VerbsTransport(const VerbsTransport&) = delete;
  VerbsTransport& operator=(const VerbsTransport&) = delete;
  ibv_qp* make_qp() override {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 4;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return ibv_create_qp(pd, &a);
  }
  int destroy_qp(ibv_qp* q) override { return ibv_destroy_qp(q); }
};

// Objects of `kind` the kernel holds for this pid (one JSON object per object, each with its
// "pid"); -1 when `rdma` cannot say.
long kernel_count(const char* kind) {
  const std::string cmd = std::string("rdma -j resource show ") + kind + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return -1;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  if (pclose(f) != 0) return -1;
  const std::string needle = "\"pid\":" + std::to_string(getpid());
  long count = 0;
  for (size_t at = out.find(needle); at != std::string::npos; at = out.find(needle, at + 1)) {
    const char next = at + needle.size() < out.size() ? out[at + needle.size()] : '\0';
    if (next == ',' || next == '}') ++count;
  }
  return count;
}

class RdmaBackend final : public Backend {
 public:
  bool open(const Options& o) override {
    const char* overrides[] = {"engine.mode=on_demand", "log.level=error"};
    wireup_context_params_t cp;
    wireup_context_params_init(&cp);
    cp.config_file = o.config;
    cp.config_overrides = overrides;
    cp.num_config_overrides = 2;
    if (wireup_context_create(&cp, &ctx_) != WIREUP_OK) {
      std::fprintf(stderr, "wireup_churn: %s\n", wireup_last_error(nullptr));
      return false;
    }
    return true;
  }
  wireup_context_t* context(uint32_t) override { return ctx_; }
  std::unique_ptr<Transport> transport(uint32_t) override {
    return std::make_unique<VerbsTransport>(wireup_context_ibv_context(ctx_));
  }
  bool drive(const std::vector<wireup_t*>& ws, const std::function<bool()>& until) override {
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < end) {
      int work = 0;
      for (wireup_t* w : ws) {
        int n = 0;
        if (wireup_progress(w, &n) != WIREUP_OK) {
          fail("wireup_progress: %s", wireup_last_error(w));
          return false;
        }
        work += n;
      }
      if (until()) return true;
      if (work > 0) continue;
      std::vector<pollfd> fds;
      for (wireup_t* w : ws) fds.push_back(pollfd{wireup_fd(w), POLLIN, 0});
      (void)poll(fds.data(), fds.size(), 5);
    }
    return until();
  }
  Counts measure() override {
    Counts c;
    c.cm_id = kernel_count("cm_id");
    c.qp = kernel_count("qp");
    c.cq = kernel_count("cq");
    c.pd = kernel_count("pd");
    c.mr = kernel_count("mr");
    measure_process(c);
    return c;
  }
  void close() override {
    wireup_context_destroy(ctx_);
    ctx_ = nullptr;
  }

 private:
  wireup_context_t* ctx_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_rdma_backend() { return std::make_unique<RdmaBackend>(); }

}  // namespace wireup_churn
