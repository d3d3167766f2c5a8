// The notice protocol's state: the QP-less requests this rank sends about a pair.
//
//   rtu_lost  the passive side, after its REP retries ran out: "are you established with
//             attempt N?" (repair.h); the pair is `probing` meanwhile.
//   abandon   the active side, after giving up for a reason the passive side cannot see: "stop
//             waiting for me"; the pair is `failed` (engine_abandon.cc).
//
// Both are answered with a REJ (there is no QP to connect), and a notice the peer's engine never
// saw is sent again after a backoff, within the pair's attempt budget. Notices owns what that
// takes: each pair's notice and where it stands, the line per destination host that keeps one
// of ours on the wire there, the retries waiting out their backoff, and how long the end of
// wireup waits for abandons still on their way. It makes no call itself: the engine builds
// and starts the connections, sends the REQs and decides what an answer means, and tells
// Notices (engine_notices.cc, engine_abandon.cc, engine_repair.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cm/connection.h"
#include "common/clock.h"
#include "wireup/fifo.h"

namespace wireup {

// QP-less requests: one on the wire per destination host, the rest wait in order. They all
// carry QPN 0, and the IB CM refuses a REQ whose sender (CA, QPN) one of its ids still holds
// with REJ 10 (cm_match_req's stale-connection check, one table per node): a second notice of
// ours reaching a node before the first is answered would be refused there, unseen by its
// engine. Notices to other hosts never meet, so they do not wait behind one whose host is slow
// to answer (or dead).
class NoticeLines {
 public:
  // `key` (a pair) has a notice for `host` (the peer's address without its port) ready to send.
  void wait(const std::string& host, uint64_t key);
  // On every line whose last notice is no longer on the wire (`on_wire(key)` false), offers the
  // waiting keys in order to `send` until one is on the wire (`send` true) or none is left.
  // Lines with nothing sent and nothing waiting are forgotten. Returns how many were sent.
  int pump(const std::function<bool(uint64_t)>& on_wire, const std::function<bool(uint64_t)>& send);
  size_t lines() const { return lines_.size(); }
  void clear() { lines_.clear(); }

 private:
  struct Line {
    std::optional<uint64_t> sent;  // the last notice sent on it
    Fifo<uint64_t> waiting;
  };
  std::map<std::string, Line> lines_;
};

class Notices {
 public:
  enum class Kind : uint8_t { rtu_lost, abandon };
  // Where a pair's notice stands: a try goes resolving -> queued -> on_wire -> idle (answered),
  // and the notice is then closed or backs off until its next try.
  enum class Phase : uint8_t {
    idle,         // no try on its way: just opened, or answered (the engine reads the answer)
    resolving,    // its connection resolves the peer's address and route
    queued,       // route resolved: waits in its host's line
    on_wire,      // the REQ left; its answer (a REJ, or none) is awaited
    backing_off,  // not delivered: tried again once due (never, after drop_retries())
  };
  // One pair's notice. Keys are pair indexes (PairTable::index); a pair has at most one.
  struct Notice {
    Kind kind = Kind::rtu_lost;
    Phase phase = Phase::idle;
    std::unique_ptr<cm::Connection> conn;  // from resolving to on_wire; null otherwise
    uint32_t attempt = 0;                  // rtu_lost: the attempt whose RTU never came
    uint32_t tries = 0;                    // requests made (rtu_lost: for `attempt`)
    cm::Failure unreachable;               // rtu_lost: why we asked; reported if never answered
  };
  // How long the end of wireup waits for an abandon still on its way: its peer answers at once
  // when reachable, and one that is not falls back to its own wireup timeout.
  static constexpr Nanos kAbandonBound = std::chrono::seconds(10);

  // --- a pair's notice -----------------------------------------------------------------------
  Notice* find(uint64_t key);
  const Notice* find(uint64_t key) const;
  // Whether `c` is the connection of `key`'s notice (the engine's dispatch asks).
  bool holds(uint64_t key, const cm::Connection& c) const;
  // Opens the pair's abandon; false if it has a notice already (a pair announces once).
  bool open_abandon(uint64_t key);
  // The pair's rtu_lost notice for `attempt`, made (with `why`, if any) when it has none; a
  // newer attempt's RTU gets a fresh budget of tries.
  Notice& open_probe(uint64_t key, uint32_t attempt, const cm::Failure* why);
  // The notice ends: closed, its connection handed back (for the engine to retire), its queued
  // retry skipped when due. Nothing if the pair has none.
  std::unique_ptr<cm::Connection> close(uint64_t key);

  // --- one try -------------------------------------------------------------------------------
  // A try leaves at `now`: counted, resolving; an abandon holds the end of wireup for
  // kAbandonBound from here. Hands back the connection of a try still held (to retire).
  std::unique_ptr<cm::Connection> begin_try(uint64_t key, Nanos now);
  // Its connection, started.
  void hold(uint64_t key, std::unique_ptr<cm::Connection> c);
  // Its route is resolved: it joins the line of `host` (the peer's address without its port).
  void route_resolved(uint64_t key, const std::string& host);
  // Whether a line holds anything (nearly never: notices are a repair path).
  bool lines_busy() const { return lines_.lines() > 0; }
  // Offers the queued notices that their lines let go to `send`, which puts the REQ on the
  // wire and says whether it is there (rdma_connect may refuse it at once: `send` then settles
  // that itself, like any answer). An abandon on the wire holds the end of wireup for
  // kAbandonBound from `now`. Returns how many went on the wire.
  int send_queued(Nanos now, const std::function<bool(uint64_t key)>& send);
  // The answer came (idle): hands back the connection (to retire).
  std::unique_ptr<cm::Connection> answered(uint64_t key);
  // Not delivered: tried again at `at` (an abandon then holds the end of wireup until
  // kAbandonBound after it).
  void retry_at(uint64_t key, Nanos at);

  // --- time ----------------------------------------------------------------------------------
  // The next notice of `kind` due at `now` (backing off, its time come), removed from its queue.
  std::optional<uint64_t> pop_due(Kind kind, Nanos now);
  // The earliest retry of `kind` queued, or Nanos::max() (progress() and next_wakeup() ask
  // at every call).
  Nanos next_due(Kind kind) const {
    const auto& q = due_[idx(kind)];
    return q.empty() ? Nanos::max() : q.begin()->first;
  }
  // Until when the end of wireup waits for abandons: 0 when none is open.
  Nanos abandon_until() const { return abandons_ > 0 ? abandon_until_ : Nanos{0}; }
  // The abandon phase is not over at `now`: an abandon is open and its time not up.
  bool abandoning(Nanos now) const { return now < abandon_until(); }

  // --- the end -------------------------------------------------------------------------------
  // The deadline passed or the device went away: no retry is sent any more. The notices stay
  // open (an abandon's time still holds the end of wireup).
  void drop_retries();
  // The setup channel closed: nothing more is sent.
  void close_lines() { lines_.clear(); }
  // Connections held (for the engine's id accounting).
  size_t live_ids() const;
  // Teardown: every notice and its connection go.
  void clear();

 private:
  static int idx(Kind k) { return static_cast<int>(k); }

  std::map<uint64_t, Notice> notices_;  // by pair index
  NoticeLines lines_;
  std::multimap<Nanos, uint64_t> due_[2];  // by Kind: retries waiting out their backoff
  uint32_t abandons_ = 0;                  // open notices of kind abandon
  Nanos abandon_until_ = cm::kUnset;
};

}  // namespace wireup
