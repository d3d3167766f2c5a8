// The wireup engine: connects every planned (peer, lane) of this rank through the CM.
//
// Roles come from plan::initiates (balanced, deterministic); the active side resolves,
// asks the transport's factory for a QP, offers ECE and connects; the passive side validates
// the private data before anything is allocated (request_gate.h), then accepts with its own
// QP. Established ids move from the setup channel to the steady channel; when every planned
// pair is settled the listener and the setup channel go away (after the RTU linger, see
// repair.h). Progress is caller-driven: nothing blocks but wait(). One peer failing never
// costs another its connection.
//
// The engine orchestrates parts that each own one thing: the pair table (where each pair
// stands), admission (the windows, per rail), the retry scheduler (where connect retries are decided
// and queued), the notices (the QP-less requests this rank sends: rtu_lost, abandon), the
// request gate, the repair protocol, the wire builders, the records handed back, on demand's
// asks and deadlines (on_demand.h) and the device watch (device_watch.h). Events reach it
// typed: the listener's and the steady ids' events come to the engine's own sink (by tag), a
// connecting id's to its cm::Connection, which tells the engine through cm::ConnectionObserver.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cm/connection.h"
#include "common/status.h"
#include "provider/provider.h"
#include "qp/factory.h"
#include "wireup/admission.h"
#include "wireup/device_watch.h"
#include "wireup/engine_types.h"
#include "wireup/notices.h"
#include "wireup/on_demand.h"
#include "wireup/pair_table.h"
#include "wireup/peer_down.h"
#include "wireup/peer_table.h"
#include "wireup/records.h"
#include "wireup/request_gate.h"
#include "wireup/retry_policy.h"
#include "wireup/stats.h"
#include "wireup/stranger_log.h"
#include "wireup/wire.h"

namespace wireup {

class Engine final : private prov::CmEventSink, private cm::ConnectionObserver, private prov::DeviceEventSink {
 public:
  using SteadyCallback = Records::SteadyCallback;
  using DeviceCallback = Records::DeviceCallback;

  // Creates both channels and the listener (bound, listening): local_address() is valid.
  static Result<std::unique_ptr<Engine>> create(prov::Provider& p, EngineOptions o, qp::QpFactory factory);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The bytes to publish through the out-of-band exchange.
  std::vector<uint8_t> local_address() const;
  // The peer table (any order, self allowed and skipped). Every bad entry is reported.
  Status set_peers(std::span<const Peer> peers);
  // Starts connecting (after set_peers).
  Status start();
  // Handles what is ready, never blocks; returns the amount of work done.
  Result<int> progress();
  // Blocks until a channel has an event, next_wakeup() is due, or `timeout` passes.
  Status wait(Nanos timeout);
  // Pollable fds for the transport's event loop (the setup channel, until it is gone, the
  // steady channel, and the async event fd of the listener's device).
  std::vector<int> fds() const;
  // The channels and the device behind fds(), for drivers that wait on many engines through
  // the provider.
  std::vector<prov::EventChannel*> channels() const;
  std::vector<prov::Device*> devices() const;
  // Every planned pair is established or given up on. The setup channel may stay open
  // after this for EngineOptions::rtu_linger, and while an abandon notice (engine_abandon.cc)
  // is on its way (at most Notices::kAbandonBound): keep calling progress().
  bool done() const { return life_.started && pairs_.open() == 0; }
  // Replaces the job key (the MAC key of every message) before start(): a transport whose
  // out-of-band channel gives the key only after it published its address (Open MPI's
  // modex: one fence for both) creates the engine first and sets the key here.
  Status set_job_key(uint64_t job_key);
  // When progress() next has something to do without a CM event: now() if it has work ready
  // (a start or a QP grant within its window, a retry that is due), else the earliest timer
  // (a retry's backoff, the wireup deadline, the end of the linger), else Nanos::max().
  // wait() sleeps until this too.
  Nanos next_wakeup() const { return next_wakeup(now()); }
  // The same from a reading of the provider's clock the caller already has (on rdma each
  // reading is a system call where the clocksource has no vDSO, as on the VM's hpet), e.g.
  // progressed_at(): a reading older than the true time only makes a due time come back as
  // that older reading, which is just as due.
  Nanos next_wakeup(Nanos now) const;
  // The clock reading the last progress() (or start()) took at its beginning.
  Nanos progressed_at() const { return life_.progressed_at; }

  // One result per (peer, lane) that ever connected, its latest connection, at an index that
  // never moves (records.h): skip the `withdrawn` ones (see ConnResult).
  const std::vector<ConnResult>& results() const { return records_.results(); }
  // The QP of result `result` while the engine holds it: null once taken (take_qp), withdrawn,
  // or its lane closed (and not established again since).
  prov::Qp* qp(uint32_t result) const;
  // The transport was given result `result`'s connection (the C API marks each one it hands
  // over; ConnResult::handed_over): from then on the engine never takes it back (an RTU
  // repair is refused and the lane reported lost), and closing its lane leaves the result a
  // connection, not withdrawn.
  void hand_over(uint32_t result) { records_.hand_over(result); }
  // The device and ECE of a result (ConnResult::link).
  const LinkInfo& link(const ConnResult& r) const { return records_.link(r.link); }
  // Results that are connections now (not withdrawn).
  size_t connected() const { return records_.results().size() - records_.withdrawn(); }
  // One error per (peer, lane) ever given up on, why it was given up last (records.h).
  const std::vector<PeerError>& errors() const { return records_.errors(); }
  const Stats& stats() const { return stats_; }
  void on_steady_event(SteadyCallback cb) { records_.on_steady_event(std::move(cb)); }
  // Each peer gone after wireup, once (engine_peer_failed.cc), from progress().
  void on_peer_down(Records::PeerDownCallback cb) { records_.on_peer_down(std::move(cb)); }
  // The device's async events the engine does not answer itself (engine_device.cc). Called
  // from progress(), possibly another engine's on the same device (they share its events).
  void on_device_report(DeviceCallback cb) { records_.on_device_event(std::move(cb)); }
  // This rank's device went away (DEVICE_REMOVAL or DEVICE_FATAL): nothing is accepted or
  // started any more, every open pair was reported (cause device_removed).
  bool device_lost() const { return watch_.lost(); }
  // Transfers the QP of an established (peer, lane) to the caller.
  std::unique_ptr<prov::Qp> take_qp(uint32_t peer, uint32_t lane);
  // Disconnects everything, drains for at most `drain`, destroys ids (and QPs not taken).
  Status close(Nanos drain);
  // The transport learnt out of band (its launcher) that `peer` is dead: every pair with it
  // that is not settled yet is given up now, cause peer_reported_dead, instead of after CM
  // timeouts. `why` (who said so) goes into each error. Returns the pairs given up
  // (engine_peer_failed.cc).
  size_t fail_peer(uint32_t peer, const std::string& why);
  // The peer is gone as a whole (`cause` reported or silent, engine_peer_failed.cc): the
  // transport gets one peer-down event for it from the next progress(), unless it had one.
  // Returns whether this declared it.
  bool declare_down(uint32_t peer, PeerDownCause cause);
  // Which peers were declared gone after wireup, and how far each is (peer_down.h).
  const PeerDownTracker& peers_down() const { return downs_; }

  // --- on demand (EngineOptions::on_demand; engine_on_demand.cc) ---
  // Connects every lane of `peer`, any time after start(): lanes asked for already, connecting
  // or ready are left as they are; failed or idle ones are asked again. Without the peer's
  // address the address callback is asked (once) and the lanes wait for add_peer(). Each
  // lane's outcome comes as a lane event; lane_state() says where it stands meanwhile.
  Status connect(uint32_t peer);
  // One peer's address, at any time (on demand: the answer to the address callback; bulk:
  // before start(), beside set_peers()).
  Status add_peer(const Peer& peer);
  // Every lane with `peer`: an established one is disconnected (the peer sees DISCONNECTED),
  // a pending one dropped; a QP the transport never took goes back (the factory's release).
  // The lanes are idle afterwards: connect() (ours or the peer's) works again.
  Status disconnect(uint32_t peer);
  LaneState lane_state(uint32_t peer, uint32_t lane) const;
  bool on_demand() const { return opt().on_demand; }
  // Asked for a peer whose address the engine lacks; answer with add_peer(), now or later.
  using AddressCallback = OnDemandAsks::AddressCallback;
  void on_address_needed(AddressCallback cb) { od_.on_address_needed(std::move(cb)); }
  using LaneCallback = Records::LaneCallback;
  void on_lane_event(LaneCallback cb) { records_.on_lane_event(std::move(cb)); }

  // For tests and teardown accounting.
  size_t live_ids() const;
  size_t deadlines_queued() const { return od_.deadlines_queued(); }
  bool setup_channel_open() const { return channels_.setup != nullptr; }
  const PairTable& pairs() const { return pairs_; }

 private:
  // The setup channel and the ids that only connecting needs. The channel is created first
  // and destroyed last (members in creation order); the pairs' connecting ids on it are
  // destroyed before it by teardown().
  struct Setup {
    std::unique_ptr<prov::EventChannel> channel;
    std::vector<std::unique_ptr<prov::CmId>> listeners;  // by rail; null once removed
    // Connections let go of during an event loop (detached), destroyed once it returned:
    // one of them may be the very connection whose event is being handled.
    std::vector<std::unique_ptr<cm::Connection>> graveyard;
    bool closing = false;  // wireup is over: what is still queued is turned away
    std::vector<uint32_t> listeners_removed;  // DEVICE_REMOVAL: destroyed once its event is acked
  };
  // An established id (and the QP, if the transport never took it) whose device went away:
  // rdma_cm(7) says destroy it; kept until the event loop that saw its DEVICE_REMOVAL acked
  // it. The QP is declared last: destroyed first.
  struct Removed {
    std::unique_ptr<prov::CmId> id;
    std::unique_ptr<prov::Qp> qp;
  };
  struct Channels {
    std::unique_ptr<prov::EventChannel> steady;
    std::unique_ptr<Setup> setup;  // null once wireup (and its linger) is over
  };
  // What create() fixes for the engine's life.
  struct Fixed {
    EngineOptions opt;
    std::vector<cm::Profile> profiles;  // by rail: what its connections share, from opt
    Wire wire;
    qp::QpFactory factory;
    incast::Pacing pacing;  // opt.incast with the burst capped by the backlog (incast.h), per listener
  };
  struct Lifecycle {
    bool started = false;
    Nanos started_at{0};  // incast pacing counts from here (every rail's)
    Nanos progressed_at{0};  // the clock reading of the last progress() (or start())
    Nanos deadline{0};
    Nanos last_active_established = cm::kUnset;
  };
  // The tags of the listeners on the engine's sink, rail r's kListenerTag - r (pair keys use
  // 48 bits).
  static constexpr uint64_t kListenerTag = ~uint64_t{0};
  static bool is_listener_tag(uint64_t tag) { return tag > kListenerTag - kMaxRails; }
  static uint32_t rail_of_tag(uint64_t tag) { return static_cast<uint32_t>(kListenerTag - tag); }

  Engine(prov::Provider& p, Fixed f);
  Status listen();
  Status listen_on(uint32_t rail, const prov::SockAddr& addr);
  // The peer's published rails, paired with ours (rail_routes.h); the reason is logged when
  // a rail of ours or the peer as a whole is left out.
  void pair_rails(uint32_t peer, std::span<const RailAddress> theirs);
  // The pairs of peers no rail of ours reaches, given up at start() with the pairing's reason.
  void give_up_unpaired();
  // One pair of a peer no rail reaches, given up with the pairing's reason; false otherwise.
  // On demand, an ask for such a peer ends here at once (connect(), add_peer()) instead of a
  // lane on rail 0 that only the CM's timeouts would end.
  bool give_up_if_unpaired(Pair& p);
  // Rail `rail`'s device went away (`why`): with another rail up, the rail carries nothing
  // more, every peer is paired again over the others and the open pairs no rail reaches any
  // more are given up; returns false when no rail is left (the caller loses the device).
  bool lose_rail(uint32_t rail, const std::string& why);
  // The pairs waiting on a lost rail's windows go to their new rails' (engine_rails.cc).
  void move_waiters_off(uint32_t rail);
  // The local rail an active lane leaves from (its pair's route; rail 0 with one rail on both
  // ends), and how many rail pairs we have with `peer` (1 without a pairing).
  uint32_t rail_for(const Pair& p) const;
  uint32_t rails_paired(uint32_t peer) const;
  // An active attempt got no answer over its rail pair (`f`: UNREACHABLE, ADDR/ROUTE/
  // CONNECT_ERROR): with another pair to the peer, its next attempt takes the next one. The
  // peer's side of the pair may be down without this process hearing of it (its port event
  // is the peer's): only the silence tells.
  void next_rail_after(Pair& p, const cm::Failure& f);
  // The rail whose listener a CONNECT_REQUEST came through.
  uint32_t rail_of_request(const prov::CmEvent& ev) const;
  // PORT_ERR (`down`) or PORT_ACTIVE on a rail's port: RailRoutes::PortChange says what
  // changed. Several rails, another up: the rail takes no new attempt and its unsettled active
  // attempts move (move_off); its established lanes are only counted in the log. The event
  // is reported to the transport either way.
  void port_changed(const prov::DeviceEvent& ev, bool down);
  // Active attempts on `rail` that have not had the peer's answer, abandoned and retried on
  // their pairs' new routes (within their attempts); returns how many.
  size_t move_off(uint32_t rail);
  // The local rail an attempt leaves from (its profile's).
  uint32_t rail_of(const cm::Connection& c) const;
  void teardown();
  Nanos now() const { return prov_.clock().now(); }
  const EngineOptions& opt() const { return fixed_.opt; }

  // dispatch (engine.cc)
  void on_cm_event(prov::CmEvent& ev) override;
  void on_connection_changed(cm::Connection& c) override;
  Status check_reply(const cm::Connection& c, std::span<const uint8_t> private_data) override;
  cm::PrivateData reject_data(const cm::Connection& c) override;
  // One retirement path for every connection the engine lets go of.
  void retire(std::unique_ptr<cm::Connection> c);
  void maybe_end_setup();
  Nanos linger_until() const;

  // the active side and settling (engine_active.cc)
  // The spec of p's connection for the request whose nonce is `nonce` (ours on the active
  // side, the peer's REQ's on the passive side).
  cm::Spec spec_for(const Pair& p, uint64_t nonce) const;
  // What the gate and the REP check see of this engine.
  GateContext gate() const;
  // c's failure, its REJ's wireup reason kept only if it authenticates as the answer to what
  // c sent: a forged or replayed REJ reads as one without a reason (transient).
  cm::Failure failure_of(const cm::Connection& c) const;
  // Every rail's, each within its own connect window (admission.h).
  int start_connects(Nanos now);
  // One step of rail `rail`'s starts: a connect started (or its start failed), an entry
  // skipped (moved on, or for another rail), or nothing more to start on it now.
  enum class StartStep : uint8_t { started, skipped, blocked };
  StartStep start_next(uint32_t rail, Nanos now);
  // When the next first attempt in rail `rail`'s start order may leave (incast.h);
  // Nanos::min() if now.
  Nanos first_connect_due(uint32_t rail) const;
  int grant_qps();
  void after_event(Pair& p);
  void establish(Pair& p);
  void settle_failure(Pair& p);
  // `rail`: the local rail the failed attempt ran on, when known (a device's removal then
  // costs only that rail while another is up, engine_rails.cc).
  void fail_pair(Pair& p, const cm::Failure& f, std::optional<uint32_t> rail = std::nullopt);
  void give_up(Pair& p, const cm::Failure& f, PeerError::Cause cause = PeerError::Cause::failed);
  // Leaves `connecting` (back to waiting): windows released, the connection retired.
  void abandon_attempt(Pair& p);
  // Retires whatever connection the pair's state (or its notice) holds and releases its
  // windows; the state itself is left for the caller to replace.
  void release_state(Pair& p);
  // The failure a passive pair would report at the deadline, taken out of its state.
  std::unique_ptr<cm::Failure> take_last(Pair& p);
  void expire();
  void expire_pair(Pair& p);

  // on demand (engine_on_demand.cc)
  Status check_peer_call(const char* call, uint32_t peer) const;
  Status start_on_demand();
  // The pair of (peer, lane) made or reopened for a new ask: waiting, `role`, its deadline set.
  Pair& lane_for(uint32_t peer, uint32_t lane, cm::Role role);
  void open_lane(Pair& p, cm::Role role);
  // The pair a REQ is for, made or reopened if need be; a crossing is decided here (v refused
  // with `crossed` when ours wins).
  Pair* on_demand_request(GateVerdict& v);
  // One lane asked for: queued, or waiting for the peer's address.
  void ask_lane(Pair& p, bool address_known);
  // Our attempt (if any) goes; the pair waits for the peer's request within the same deadline.
  void wait_as_passive(Pair& p);
  // Our attempt was refused as the losing side of a crossing: wait for the peer's request.
  bool yield_to_crossing(Pair& p, const cm::Failure& f);
  int expire_due(Nanos now);  // the deadlines due at `now`
  void close_lane(Pair& p);
  void close_steady_lane(Pair& p);
  // The peer's DISCONNECTED on an established lane: its last one makes the peer down
  // (engine_peer_failed.cc).
  void lane_dropped(const Pair& p);
  // Established lanes of `peer`; with `up_only` only those whose DISCONNECTED has not come.
  uint32_t established_lanes(uint32_t peer, bool up_only) const;
  void report_down(const PeerDown& d);
  int deliver_downs();

  // the passive side and the steady channel (engine_passive.cc)
  bool accepting() const { return life_.started && channels_.setup && !channels_.setup->closing; }
  void handle_request(prov::CmEvent& ev);
  void refuse(prov::CmEvent& ev, const GateVerdict& v);
  void answer_steady(prov::CmEvent& ev);
  int drain_steady();

  // the device's events: async events, COMM_EST, removal, ADDR_CHANGE (engine_device.cc)
  bool owns_qp(uint32_t qpn) const override;
  void on_device_event(const prov::DeviceEvent& ev) override;
  const Pair* pair_of_qpn(uint32_t qpn) const;
  void answer_comm_est(const prov::DeviceEvent& ev, Pair* p);
  void on_listener_event(prov::CmEvent& ev);
  // Every open pair given up (cause device_removed), no more connects, the listener closed.
  void lose_device(const std::string& why);
  // A steady id's DEVICE_REMOVAL: reported, then the id (and an untaken QP) destroyed.
  void remove_established(Pair& p);
  void bury_removed();

  // QP-less requests on the wire, both kinds (engine_notices.cc; their state is notices_).
  // A notice whose route is resolved joins its host's line (sent by send_queued_notices()).
  void queue_notice(Pair& p);
  // Sends the next waiting notice of every line whose last one is answered (or gone).
  int send_queued_notices();
  // An event of the pair's notice connection: its route resolved, or its answer.
  void notice_changed(Pair& p);
  // The notices whose backoff is over, sent again.
  int start_due_notices();

  // final answers told across (engine_abandon.cc)
  bool owes_abandon(const Pair& p, const cm::Failure& f, PeerError::Cause cause) const;
  void announce_abandon(Pair& p);
  void send_abandon(Pair& p);
  void abandon_answered(Pair& p, const cm::Failure& answer);
  void handle_abandon(prov::CmEvent& ev, const GateVerdict& v);

  // the RTU repair (engine_repair.cc)
  // Sends (again) the notice for the pair's newest attempt; `p` is waiting (our REP retries
  // just ran out) or probing (a notice's retry is due).
  void start_notice(Pair& p);
  void settle_notice(Pair& p, const cm::Failure& answer);
  void answer_notice(prov::CmEvent& ev, const GateVerdict& v);
  void tear_down_established(Pair& p);
  cm::Failure rtu_lost_failure(const Pair& p, int status, const std::string& why) const;

  prov::Provider& prov_;
  Fixed fixed_;
  // The listeners' devices (one per distinct device of the rails): their async events come here.
  DeviceWatch watch_;
  RailRoutes rails_;
  std::vector<RailAddress> bound_;   // by rail: the address each listener is bound to (its port)
  Channels channels_;
  std::vector<Removed> removed_;     // after channels_: destroyed before the steady channel
  PeerTable peers_;
  PairTable pairs_;
  Notices notices_;  // after pairs_: keyed by their indexes
  Admission admission_;
  RetryScheduler retries_;
  Records records_;
  Stats stats_;
  StrangerLog strangers_;
  Lifecycle life_;
  OnDemandAsks od_;  // on demand only: address asks and deadlines (on_demand.h)
  PeerDownTracker downs_;
  std::vector<PeerDown> downs_due_;  // declared outside progress(): delivered by the next one
};

}  // namespace wireup
