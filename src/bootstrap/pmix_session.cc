// PmixSession over OpenPMIx 4 (pmix.h): Init/Finalize, job facts, Put/Commit/Fence/Get.
#include "bootstrap/pmix_session.h"

#include <pmix.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace wireup::bootstrap {

const char* to_string(PmixOpen s) {
  switch (s) {
    case PmixOpen::connected: return "connected";
    case PmixOpen::no_server: return "no_server";
    case PmixOpen::failed: return "failed";
  }
  return "?";
}

namespace {

constexpr int kRetryMs = 50;
constexpr int kNotFoundGraceS = 10;

std::string status_text(pmix_status_t rc) {
  return std::string(PMIx_Error_string(rc)) + " (" + std::to_string(rc) + ")";
}

std::string failed(const char* call, pmix_status_t rc, const std::string& what) {
  return std::string(call) + "(" + what + "): " + status_text(rc);
}

pmix_proc_t proc_of(const std::string& nspace, pmix_rank_t rank) {
  pmix_proc_t p;
  PMIX_PROC_CONSTRUCT(&p);
  PMIX_LOAD_PROCID(&p, nspace.c_str(), rank);
  return p;
}

// A job fact as an unsigned number, whatever width the server gave it.
bool get_uint(const pmix_proc_t& who, const char* key, uint32_t& out, std::string& why) {
  pmix_value_t* v = nullptr;
  const pmix_status_t rc = PMIx_Get(&who, key, nullptr, 0, &v);
  if (rc != PMIX_SUCCESS) {
    why = failed("PMIx_Get", rc, key);
    return false;
  }
  bool ok = true;
  switch (v->type) {
    case PMIX_UINT32: out = v->data.uint32; break;
    case PMIX_UINT16: out = v->data.uint16; break;
    case PMIX_PROC_RANK: out = v->data.rank; break;
    case PMIX_INT: out = uint32_t(v->data.integer); break;
    default: ok = false, why = std::string("PMIx_Get(") + key + "): unexpected value type " + std::to_string(v->type);
  }
  PMIX_VALUE_RELEASE(v);
  return ok;
}

}  // namespace

bool PmixSession::server_announced() {
  // What a PMIx server sets for the processes it launches (v4: URI4, v3: URI3/URI21...).
  for (const char* var : {"PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21",
                          "PMIX_SERVER_URI2", "PMIX_NAMESPACE"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') return true;
  return false;
}

PmixSession::Opened PmixSession::open() {
  Opened o;
  if (!server_announced()) {
    o.state = PmixOpen::no_server;
    o.why = "no PMIx server: the environment names none (PMIX_SERVER_URI*, PMIX_NAMESPACE unset), so this is "
            "not a PMIx launch (a singleton run, or a launcher without PMIx)";
    return o;
  }
  std::unique_ptr<PmixSession> s(new PmixSession());
  pmix_proc_t me;
  PMIX_PROC_CONSTRUCT(&me);
  const pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    // UNREACH: the announced server is not there (a stale environment, a dead launcher).
    o.state = rc == PMIX_ERR_UNREACH ? PmixOpen::no_server : PmixOpen::failed;
    o.why = "no PMIx server reachable: " + failed("PMIx_Init", rc, "");
    return o;
  }
  s->initialized_ = true;
  s->nspace_ = me.nspace;
  s->rank_ = me.rank;
  const pmix_proc_t job = proc_of(s->nspace_, PMIX_RANK_WILDCARD);
  if (!get_uint(job, PMIX_JOB_SIZE, s->size_, o.why) || !get_uint(me, PMIX_LOCAL_RANK, s->local_rank_, o.why)) {
    o.state = PmixOpen::failed;
    o.why = "rank " + std::to_string(s->rank_) + ": " + o.why;
    return o;  // s finalizes
  }
  if (s->size_ == 0 || s->rank_ >= s->size_) {
    o.state = PmixOpen::failed;
    o.why = "PMIx says rank " + std::to_string(s->rank_) + " of a job of " + std::to_string(s->size_);
    return o;
  }
  if (const char* t = std::getenv("WIREUP_PMIX_TIMEOUT_S"); t != nullptr && *t != '\0') {
    char* end = nullptr;
    const long v = std::strtol(t, &end, 10);
    if (*end != '\0' || v <= 0 || v > 86400) {
      o.state = PmixOpen::failed;
      o.why = std::string("WIREUP_PMIX_TIMEOUT_S='") + t + "': expected whole seconds, 1 to 86400";
      return o;
    }
    s->fence_timeout_s_ = int(v);
  }
  if (const char* d = std::getenv("WIREUP_PMIX_DIRECT"); d != nullptr && *d != '\0') {
    if (std::strcmp(d, "off") != 0 && std::strcmp(d, "on") != 0) {
      o.state = PmixOpen::failed;
      o.why = std::string("WIREUP_PMIX_DIRECT='") + d + "': expected on or off";
      return o;
    }
    if (std::strcmp(d, "off") == 0) s->direct_ = DirectModex::refused;
  }
  o.state = PmixOpen::connected;
  o.session = std::move(s);
  return o;
}

PmixSession::~PmixSession() {
  if (!initialized_) return;
  if (const pmix_status_t rc = PMIx_Finalize(nullptr, 0); rc != PMIX_SUCCESS)
    std::fprintf(stderr, "wireup bootstrap: %s\n", failed("PMIx_Finalize", rc, "").c_str());
}

std::string PmixSession::put(const std::string& key, std::span<const uint8_t> bytes) {
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_BYTE_OBJECT;
  // PMIx_Put copies the value: the span need not outlive the call.
  v.data.bo.bytes = reinterpret_cast<char*>(const_cast<uint8_t*>(bytes.data()));
  v.data.bo.size = bytes.size();
  const pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
  return rc == PMIX_SUCCESS ? "" : failed("PMIx_Put", rc, key);
}

std::string PmixSession::commit() {
  const pmix_status_t rc = PMIx_Commit();
  return rc == PMIX_SUCCESS ? "" : failed("PMIx_Commit", rc, "");
}

std::string PendingFence::result() const {
  const int rc = status_.load(std::memory_order_acquire);
  return rc == PMIX_SUCCESS ? "" : failed("PMIx_Fence_nb", rc, "");
}

void PendingFence::complete_cb(int status) {
  status_.store(status, std::memory_order_release);
  done_.store(true, std::memory_order_release);
}

namespace {

// The whole namespace, or the ranks of `among`. A list naming every rank of the job is the
// whole namespace too: Slurm's PMIx plugin (22.05) takes a fence over the explicit list of all
// ranks for another collective than the wildcard one, and its two nodes' servers disagree on
// which ("unexpected contrib", "No process controlled by this slurmstepd is involved").
std::vector<pmix_proc_t> procs_of(const std::string& nspace, uint32_t size, const std::vector<uint32_t>& among) {
  std::vector<pmix_proc_t> procs;
  std::vector<bool> named(size, false);
  uint32_t distinct = 0;
  for (uint32_t r : among)
    if (r < size && !named[r]) named[r] = true, ++distinct;
  if (among.empty() || distinct == size) {
    procs.push_back(proc_of(nspace, PMIX_RANK_WILDCARD));
    return procs;
  }
  for (uint32_t r : among) procs.push_back(proc_of(nspace, r));
  return procs;
}

void fence_done_cb(pmix_status_t status, void* cbdata) { static_cast<PendingFence*>(cbdata)->complete_cb(status); }

}  // namespace

std::string PmixSession::fence_start(PendingFence& f, const std::vector<uint32_t>& among) {
  std::vector<pmix_proc_t> procs = procs_of(nspace_, size_, among);
  const pmix_status_t rc = PMIx_Fence_nb(procs.data(), procs.size(), nullptr, 0, fence_done_cb, &f);
  if (rc == PMIX_OPERATION_SUCCEEDED) f.complete_cb(PMIX_SUCCESS);  // done at once, no callback comes
  if (rc == PMIX_SUCCESS || rc == PMIX_OPERATION_SUCCEEDED) return "";
  return "rank " + std::to_string(rank_) + ": " + failed("PMIx_Fence_nb", rc, "");
}

namespace {

// "0-3 5 7-9": a rank list for a sentence.
std::string ranks_text(const std::vector<uint32_t>& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    out += (out.empty() ? "" : " ") + std::to_string(r[i]) + (j > i ? "-" + std::to_string(r[j]) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string PmixSession::fence(bool collect, const std::vector<uint32_t>& among) {
  std::vector<pmix_proc_t> procs = procs_of(nspace_, size_, among);
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  bool yes = collect;
  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  // Non-blocking, so that this thread bounds the wait whatever the launcher does.
  auto pending = std::make_unique<PendingFence>();
  pmix_status_t rc = PMIx_Fence_nb(procs.data(), procs.size(), &info, 1, fence_done_cb, pending.get());
  PMIX_INFO_DESTRUCT(&info);
  if (rc == PMIX_OPERATION_SUCCEEDED) pending->complete_cb(PMIX_SUCCESS);
  const std::string what = (among.empty() ? "the whole job of " + std::to_string(size_) + " ranks"
                                          : "ranks " + ranks_text(among)) + (collect ? ", collecting" : "");
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    return "rank " + std::to_string(rank_) + ": " + failed("PMIx_Fence_nb", rc, what);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(fence_timeout_s_);
  while (!pending->done()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      abandoned_.push_back(std::move(pending));
      return "rank " + std::to_string(rank_) + ": PMIx_Fence(" + what + ") did not complete within " +
             std::to_string(fence_timeout_s_) + " s (WIREUP_PMIX_TIMEOUT_S): a member never arrived or the " +
             "launcher lost the collective; PMIx does not say which of them";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::string r = pending->result();
  return r.empty() ? "" : "rank " + std::to_string(rank_) + ": " + r + " (" + what + ")";
}

Fetched PmixSession::get(uint32_t peer, const std::string& key, int timeout_s, bool retry) const {
  Fetched f;
  const std::string what0 = "rank " + std::to_string(peer) + ", " + key;
  if (timeout_s > 0 && direct_ == DirectModex::refused) {
    f.refused = true;
    f.error = "PMIx_Get(" + what0 + "): direct modex refused here (WIREUP_PMIX_DIRECT=off)";
    return f;
  }
  const pmix_proc_t who = proc_of(nspace_, peer);
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  int t = timeout_s;
  if (timeout_s > 0) PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &t, PMIX_INT);
  pmix_value_t* v = nullptr;
  // Slurm's PMIx server (22.05, OpenPMIx 4.2) sometimes answers NOT-FOUND for a key of a rank
  // on another node that the peer committed before the fence this rank has passed, and finds
  // it when asked again: a NOT-FOUND is asked again every kRetryMs until the deadline
  // (timeout_s, or kNotFoundGraceS for an untimed Get), each retry counted for the caller.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s > 0 ? timeout_s : kNotFoundGraceS);
  pmix_status_t rc;
  for (;;) {
    rc = PMIx_Get(&who, key.c_str(), timeout_s > 0 ? &info : nullptr, timeout_s > 0 ? 1 : 0, &v);
    if (!retry || rc != PMIX_ERR_NOT_FOUND || std::chrono::steady_clock::now() >= deadline) break;
    ++f.retries;
    std::this_thread::sleep_for(std::chrono::milliseconds(kRetryMs));
  }
  PMIX_INFO_DESTRUCT(&info);
  const std::string what = "rank " + std::to_string(peer) + ", " + key;
  if (rc != PMIX_SUCCESS) {
    f.timed_out = rc == PMIX_ERR_TIMEOUT;
    f.refused = timeout_s > 0 && rc == PMIX_ERR_NOT_SUPPORTED;
    f.error = failed("PMIx_Get", rc, what) + (f.timed_out ? " after " + std::to_string(timeout_s) + " s" : "") +
              (f.retries > 0 ? ", asked " + std::to_string(f.retries + 1) + " times" : "");
    return f;
  }
  if (v->type != PMIX_BYTE_OBJECT) {
    f.error = "PMIx_Get(" + what + "): not a byte object (type " + std::to_string(v->type) + ")";
  } else {
    const auto* b = reinterpret_cast<const uint8_t*>(v->data.bo.bytes);
    f.bytes.assign(b, b + v->data.bo.size);
  }
  PMIX_VALUE_RELEASE(v);
  return f;
}

}  // namespace wireup::bootstrap
