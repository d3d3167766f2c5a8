// Pure: the liveness service's decisions, for a node that goes silent (a power cut, a
// partition) where no DREQ will ever come. No sockets and no clock of its own: the thin layer
// that owns the UDP socket (and the tool wireup_liveness_sim, and the unit tests) drives the
// same code with the time and the datagrams.
//
// The ring. Ranks are placed on a ring interleaved by node (every node's first rank, then
// every node's second, ...), so a rank's ring neighbours sit on other nodes: a node that loses
// power takes none of its own ranks' watchers with it. Each rank sends a heartbeat every
// `period` to its k successors (its watchers) and watches its k predecessors: O(k) datagrams
// per rank and period, whatever the job's size (as ULFM's ring detector and NCCL's RAS do;
// UCX's keepalive instead probes 128 endpoints per 20 s round, so with 10,000 peers each is
// probed about every 26 minutes).
//
// Suspect, confirm, declare. A watcher that has heard nothing from a watched rank for
// `suspect_after()` (the deadline less one period) suspects it and tells the rank's other
// watchers (again each period while it lasts). A death needs two watchers that each time out
// by themselves (one alone with k = 1): a heartbeat lost to one watcher under packet loss is
// not a death. A heartbeat from the suspect clears the suspicion. Declared dead is final.
//
// Spread. The watcher that completes the confirmation declares and sends the notice down two
// k-ary trees over the ring positions rooted at the dead rank's place (so that two watchers
// declaring at once feed the same trees, not two of their own). Each rank forwards it to at
// most k children per tree (twice each: a notice lost costs its whole subtree); a child known
// to be dead is stepped over to its own children: O(k) datagrams per rank per death, log_k(n)
// hops. Tree 0 takes the positions in ring order, so a subtree is a run of the ring; tree 1
// takes them with a stride coprime with n (about n / golden ratio), so its subtrees are
// scattered: a rank cut off in both (an ancestor that died unseen, as the other ranks of a
// node that lost power do, or a notice lost twice) has ring predecessors that tree 1 reached,
// and heartbeats carry the deaths a rank learnt lately, in turns: it learns a period later.
// Once a death is known the ring closes over the dead rank (watch sets are recomputed).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace wireup::liveness {

struct Params {
  Nanos period = std::chrono::milliseconds(500);
  Nanos deadline = std::chrono::milliseconds(3000);
  uint32_t watchers = 3;  // k
};
// Why a Params cannot run, or "" (deadline at least three periods, 1 <= k <= 64).
const char* check(const Params& p);

// Every rank's place on the ring; the same on every rank (built from the same node table).
class Ring {
 public:
  // node_of[rank]: any node identifier (the UDP endpoint's host), equal for ranks of one node.
  explicit Ring(const std::vector<uint64_t>& node_of);
  uint32_t size() const { return static_cast<uint32_t>(order_.size()); }
  uint32_t position(uint32_t rank) const { return pos_[rank]; }
  uint32_t rank_at(uint32_t position) const { return order_[position % order_.size()]; }

 private:
  std::vector<uint32_t> order_;  // position -> rank
  std::vector<uint32_t> pos_;    // rank -> position
};

enum class Kind : uint8_t { heartbeat = 1, suspect = 2, dead = 3 };

// What one datagram says (liveness_wire.h seals and opens it).
struct Msg {
  static constexpr size_t kMaxDigest = 8;
  Kind kind = Kind::heartbeat;
  uint32_t from = 0;
  uint32_t subject = 0;  // suspect, dead: whom it is about
  uint32_t root = 0;     // dead: the ring position the spreading tree is rooted at
  uint8_t mirror = 0;    // dead: which of the two trees (positions root + i, or scattered)
  uint8_t ndigest = 0;   // heartbeat: deaths the sender learnt lately (in turns, kMaxDigest a time)
  std::array<uint32_t, kMaxDigest> digest{};
};

struct Out {
  uint32_t to = 0;
  Msg msg;
};

struct Counters {
  uint64_t sent = 0, received = 0;
  uint64_t suspicions = 0;  // watched ranks this rank suspected itself
  uint64_t refuted = 0;     // suspicions cleared by a heartbeat
  uint64_t declared = 0;    // deaths this rank declared (it completed the confirmation)
  uint64_t learnt = 0;      // deaths known here, however learnt
  uint64_t stale = 0;       // datagrams from ranks already dead, or not from this job's ranks
  uint64_t refused = 0;     // deaths told of a rank this one hears itself (a one-way partition)
};

class Detector {
 public:
  Detector(uint32_t rank, std::shared_ptr<const Ring> ring, Params p);
  // Everyone is alive as of `now`: the watched ranks' silence counts from here.
  void start(Nanos now);
  // Sends what is due (heartbeats, repeated suspicions) and checks the silences.
  void tick(Nanos now, std::vector<Out>& out);
  void receive(const Msg& m, Nanos now, std::vector<Out>& out);
  // When tick() next has something to do.
  Nanos next_due() const;
  // Deaths learnt since the last call, in order.
  std::vector<uint32_t> take_deaths() { return std::exchange(new_deaths_, {}); }
  bool dead(uint32_t rank) const { return dead_[rank]; }
  // A death learnt from elsewhere (the peer's DREQs, the launcher): closes the ring over it,
  // without spreading it (every rank learns that one by itself).
  void learn(uint32_t rank, Nanos now);
  const Counters& counters() const { return c_; }
  uint32_t rank() const { return rank_; }
  // Half a period short of a whole number of them: a heartbeat a little late (jitter) is not
  // a lost one. With the defaults 2,250 ms: four heartbeats lost in a row.
  Nanos suspect_after() const { return p_.deadline - p_.period - p_.period / 2; }
  // The ranks this one watches (its k live predecessors) and is watched by (k live successors).
  const std::vector<uint32_t>& watched() const { return watched_; }
  const std::vector<uint32_t>& watchers() const { return watchers_; }

 private:
  struct Watch {
    Nanos heard{0};
    bool suspected = false;     // by this rank
    uint32_t confirmations = 0; // distinct other watchers that told us they suspect it too
    uint64_t from_mask = 0;     // which of them (by watcher slot), to count each once
  };
  void rebuild(Nanos now);
  void mark_dead(uint32_t rank, Nanos now);
  void declare(uint32_t rank, Nanos now, std::vector<Out>& out);
  // Sends a dead notice to this rank's children in one tree; `as_root`: on behalf of the tree's
  // root (the dead rank itself), as its declarer does.
  void forward(uint32_t subject, uint32_t root, bool mirror, bool as_root, std::vector<Out>& out);
  void note_suspect(uint32_t subject, uint32_t from, Nanos now, std::vector<Out>& out);
  uint32_t needed() const { return p_.watchers >= 2 ? 2 : 1; }
  void send(uint32_t to, const Msg& m, std::vector<Out>& out);
  // This rank watches `rank` and heard it within the suspicion threshold: a death told by others
  // is refused (the tellers were cut off from it, as one side of a one-way partition is).
  bool hears(uint32_t rank, Nanos now) const;

  uint32_t rank_;
  std::shared_ptr<const Ring> ring_;
  Params p_;
  std::vector<bool> dead_;
  std::vector<uint32_t> watched_, watchers_;
  std::unordered_map<uint32_t, Watch> watch_;  // per watched rank
  struct Recent {
    uint32_t rank;
    Nanos learnt;
  };
  std::vector<Recent> recent_;                 // deaths learnt lately (the digest), oldest first
  size_t digest_next_ = 0;                     // where the next heartbeat's digest starts
  std::vector<uint32_t> new_deaths_;
  std::array<std::vector<bool>, 2> forwarded_; // per tree: dead notices passed down it
  uint64_t stride_ = 1, stride_inverse_ = 1;   // tree 1's position = root + i * stride (mod n)
  Nanos next_beat_{0};
  Counters c_;
};

}  // namespace wireup::liveness
