// The wireup engine: connects every planned (peer, lane) of this rank through the CM.
//
// Roles come from plan::initiates (balanced, deterministic); the active side resolves,
// asks the transport's factory for a QP, offers ECE and connects; the passive side validates
// the private data before anything is allocated, then accepts with its own QP. Established
// ids move from the setup channel to the steady channel; when every planned pair is settled
// the listener and the setup channel go away. Progress is caller-driven: nothing blocks but
// wait(). One peer failing never costs another its connection.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>
#include <span>
#include <string>
#include <vector>

#include "cm/connection.h"
#include "common/status.h"
#include "provider/provider.h"
#include "qp/factory.h"
#include "wireup/private_data.h"
#include "wireup/stats.h"
#include "wireup/tables.h"

namespace wireup {

struct EngineOptions {
  uint32_t rank = 0;
  uint32_t nranks = 0;               // the job size: roles depend on it
  uint32_t lanes = 1;                // connections per peer
  uint64_t job_key = 0;              // shared secret; 0 is refused (a job must pick one)
  prov::SockAddr listen_addr;        // where to listen (port 0: any free port)
  int backlog = 1024;                // rdma_listen backlog (the kernel caps it at its sysctl)
  uint32_t connect_window = 64;      // active connects in flight
  // QPs created but not yet established, counted per role: active QPs wait on a remote
  // peer's accept, so if they could take the places passive accepts need, two ranks whose
  // windows filled with their own connects would wait on each other forever.
  uint32_t qp_window = 32;
  uint32_t max_attempts = 5;         // per (peer, lane), first one included
  Nanos backoff_initial = std::chrono::milliseconds(50);
  Nanos backoff_max = std::chrono::seconds(5);
  double backoff_jitter = 0.25;      // +-25% so that retries of many ranks do not align
  Nanos wireup_timeout = std::chrono::seconds(300);
  // How long the listener stays open after wireup ends (done()) if this rank initiated a
  // connection: the passive peer of that connection only learns that every RTU was lost when
  // its REP retries run out (16 CM timeouts after the REP: 98.3 s in the sim and on Linux
  // 6.1) and then sends a rtu_lost notice here. Without a listener that notice meets REJ 8
  // and this rank never hears of it; with one, it is answered and the loss is reported
  // through a SteadyEvent. close() ends the linger. 0: close the listener at done().
  Nanos rtu_linger = std::chrono::seconds(150);
  int resolve_addr_timeout_ms = 2000;
  int resolve_route_timeout_ms = 2000;
  std::optional<uint8_t> tos;
  std::optional<uint8_t> ack_timeout;
  ece::Policy ece;
  qp::QpOverrides qp;
  prov::ConnParam param;             // resources and CM retry counts
  uint64_t seed = 0;                 // jitter RNG; 0 = derived from rank
};

struct Peer {
  uint32_t rank = 0;
  std::vector<uint8_t> address;  // what that rank's local_address() returned
};

// One established connection, as handed to the transport.
// One per established endpoint, so kept small and laid out without padding (128 bytes).
struct ConnResult {
  uint32_t peer = 0;
  uint32_t lane = 0;
  prov::Qp* qp = nullptr;       // owned by the engine until take_qp()
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  ece::Report ece;
  const char* device = "";      // the QP's device name (owned by the provider, like the device)
  cm::Timings timings;
  uint32_t attempts = 0;
  cm::Role role = cm::Role::active;
};

// A (peer, lane) that could not be connected, and why.
struct PeerError {
  uint32_t peer = 0;
  uint32_t lane = 0;
  cm::Role role = cm::Role::active;
  uint32_t attempts = 0;
  cm::Failure failure;
  std::string describe() const;
};

// What the steady channel reports after wireup (DISCONNECTED, DEVICE_REMOVAL, ADDR_CHANGE...).
struct SteadyEvent {
  uint32_t peer = 0;
  uint32_t lane = 0;
  prov::CmEventType type = prov::CmEventType::disconnected;
  int status = 0;
  // The passive peer reported that it never got this connection's RTU (its REP retries ran
  // out) after the lane had been handed over: the peer has no connection behind this QP.
  // Delivered as DISCONNECTED, status -ECONNRESET.
  bool rtu_lost = false;
};

class Engine {
 public:
  using SteadyCallback = std::function<void(const SteadyEvent&)>;

  // Creates both channels and the listener (bound, listening): local_address() is valid.
  static Result<std::unique_ptr<Engine>> create(prov::Provider& p, EngineOptions o, qp::QpFactory factory);
  ~Engine();

  // The bytes to publish through the out-of-band exchange.
  std::vector<uint8_t> local_address() const;
  // The peer table (any order, self allowed and skipped). Every bad entry is reported.
  Status set_peers(std::span<const Peer> peers);
  // Starts connecting (after set_peers).
  Status start();
  // Handles what is ready, never blocks; returns the amount of work done.
  Result<int> progress();
  // Blocks until a channel has an event, a timer is due, or `timeout` passes.
  Status wait(Nanos timeout);
  // Pollable fds for the transport's event loop (the setup channel, until it is gone, and the
  // steady channel).
  std::vector<int> fds() const;
  // The channels behind fds(), for drivers that wait on many engines through the provider.
  std::vector<prov::EventChannel*> channels() const;
  // Every planned pair is established or given up on. The setup channel may stay open
  // after this for EngineOptions::rtu_linger: keep calling progress().
  bool done() const { return started_ && open_pairs_ == 0; }
  // When progress() next has something to do without a CM event: now() if it has work ready
  // (a start or a QP grant within its window, a retry that is due), else the earliest timer
  // (a retry's backoff, the wireup deadline), else Nanos::max(). For drivers of many engines.
  Nanos next_wakeup() const;

  const std::vector<ConnResult>& results() const { return results_; }
  const std::vector<PeerError>& errors() const { return errors_; }
  const Stats& stats() const { return stats_; }
  void on_steady_event(SteadyCallback cb) { steady_cb_ = std::move(cb); }
  // Transfers the QP of an established (peer, lane) to the caller.
  std::unique_ptr<prov::Qp> take_qp(uint32_t peer, uint32_t lane);
  // Disconnects everything, drains for at most `drain`, destroys ids (and QPs not taken).
  Status close(Nanos drain);

  // For tests and teardown accounting.
  size_t live_ids() const;
  bool setup_channel_open() const { return setup_ != nullptr; }

 private:
  enum class SlotState : uint8_t { waiting, in_flight, established, failed };
  // One planned (peer, lane). Kept small: at 10^4 peers x lanes this is most of the engine's
  // memory. While connecting, `conn` holds the CM state machine; once established it is
  // dropped and only the id and the QP stay (the id's user_context then points here).
  struct Slot {
    uint32_t peer = 0;
    uint16_t lane = 0;
    cm::Role role = cm::Role::active;
    SlotState state = SlotState::waiting;
    bool qp_counted = false;       // holds a place in the QP window
    bool disconnected = false;     // DISCONNECTED seen on the steady channel
    uint32_t attempt = 0;          // active: attempts made; passive: newest attempt seen
    uint32_t result = UINT32_MAX;  // index in results_ once established
    Nanos first_start = cm::kUnset;
    std::unique_ptr<cm::Connection> conn;
    std::unique_ptr<prov::CmId> id;  // established: declared before qp, destroyed after it
    std::unique_ptr<prov::Qp> qp;    // established, until the transport takes it
  };
  static uint64_t key(uint32_t peer, uint32_t lane) { return (uint64_t(peer) << 16) | lane; }

  Engine(prov::Provider& p, EngineOptions o, qp::QpFactory f);
  Status listen();
  int drain_setup();
  int drain_steady();
  int start_connects();
  int grant_qps();
  void handle_request(prov::CmEvent& ev);
  // The RTU gap (see WireKind::rtu_lost): the active side's answer, the passive side's notice.
  void handle_rtu_lost(prov::CmEvent& ev, const WireHeader& h);
  void answer_notice(prov::CmEvent& ev, RejectCode code, const Slot& s, const std::string& why);
  void tear_down_established(Slot& s);
  void start_notice(Slot& s);
  void after_notice(Slot& s);
  void settle_notice(Slot& s, const cm::Failure& f);
  int start_notices();
  void drop_notice(uint64_t k);
  cm::Failure rtu_lost_failure(const Slot& s, int status, const std::string& why) const;
  Nanos linger_until() const;
  void reject_stranger(prov::CmEvent& ev, RejectCode code, const std::string& why, const std::string& source);
  void after_event(Slot& s);
  void settle_failure(Slot& s);
  void fail_slot(Slot& s, const cm::Failure& f);
  void give_up(Slot& s, const cm::Failure& f);
  void release_windows(Slot& s);
  void expire();
  bool qp_ready() const;  // a QP grant could happen now
  void answer_steady(prov::CmEvent& ev);
  bool retryable(const cm::Failure& f) const;
  Nanos backoff(uint32_t attempt);
  void finish_slot(Slot& s);
  void maybe_end_setup();
  cm::Spec spec_for(const Slot& s) const;
  static cm::Profile make_profile(const EngineOptions& o);
  Nanos now() const { return prov_.clock().now(); }

  prov::Provider& prov_;
  EngineOptions opt_;
  cm::Profile profile_;  // what every connection shares, from opt_
  qp::QpFactory factory_;
  std::mt19937_64 rng_;
  // Channels are declared before everything holding ids on them: destroyed after.
  std::unique_ptr<prov::EventChannel> steady_;
  std::unique_ptr<prov::EventChannel> setup_;
  std::unique_ptr<prov::CmId> listener_;
  PeerTable peers_;
  // Built once by start(): Slot addresses stay valid (connections point back at their slot).
  FlatTable<Slot> slots_;
  std::vector<uint64_t> start_order_;    // active slots in start order
  size_t next_start_ = 0;
  std::multimap<Nanos, uint64_t> retry_at_;  // active slots waiting out their backoff
  // Passive pairs whose last half-open attempt failed: reported only if the peer never
  // succeeds before the deadline (kept apart from Slot: rare, and large).
  std::unordered_map<uint64_t, cm::Failure> passive_failures_;
  // Passive pairs whose REP retries ran out: the rtu_lost notice to the active side, its
  // tries (the pair's max_attempts bounds them) and when the next one is due. Rare.
  struct Notice {
    std::unique_ptr<cm::Connection> conn;
    uint32_t attempt = 0;  // the attempt whose RTU never came
    uint32_t tries = 0;
    Nanos due = cm::kUnset;  // a retry waiting out its backoff
    cm::Failure last;        // why the last try did not get an answer
  };
  std::unordered_map<uint64_t, Notice> notices_;
  Nanos last_active_established_ = cm::kUnset;
  KeyQueue qp_waiters_[2];                   // slots ready for a QP, per role, in arrival order
  std::vector<std::unique_ptr<cm::Connection>> graveyard_;  // destroyed after the event loop
  std::set<std::string> stranger_sources_logged_;
  uint32_t in_flight_ = 0;    // active connects between start and settle
  uint32_t qps_in_flight_[2] = {0, 0};       // per role (cm::Role as index)
  size_t open_pairs_ = 0;
  bool started_ = false;
  Nanos deadline_{0};
  std::vector<ConnResult> results_;
  std::vector<PeerError> errors_;
  Stats stats_;
  SteadyCallback steady_cb_;
};

}  // namespace wireup
