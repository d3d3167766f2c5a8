#include "wireup/request_gate.h"

#include "wireup/plan.h"

namespace wireup {
namespace {

GateVerdict refuse(GateVerdict v, RejectCode code, std::string why) {
  v.admit = Admit::refuse;
  v.code = code;
  v.why = std::move(why);
  return v;
}

std::string rank_name(uint32_t r) { return "rank " + std::to_string(r); }

}  // namespace

GateVerdict check_request(const GateContext& ctx, std::span<const uint8_t> private_data) {
  GateVerdict v;
  auto d = decode(private_data);
  if (!d) {
    const bool version = private_data.size() > 4 && d.error().detail.rfind("version", 0) == 0;
    return refuse(v, version ? RejectCode::bad_version : RejectCode::bad_magic, d.error().detail);
  }
  auto h = ctx.wire->open(private_data);
  if (!h) return refuse(v, RejectCode::wrong_job_key, h.error().detail);
  v.header = *h;
  v.authentic = true;
  if (h->kind != WireKind::request && h->kind != WireKind::rtu_lost && h->kind != WireKind::abandon)
    return refuse(v, RejectCode::bad_magic, "not a request");
  if (h->dst_rank != ctx.self) return refuse(v, RejectCode::wrong_destination, "for " + rank_name(h->dst_rank));
  // A peer can be quicker than we are: its request may come between our listen() and our
  // start(), while our peer table is not in. Transient: the sender retries (local_failure).
  if (!ctx.started) return refuse(v, RejectCode::local_failure, "not started yet");
  const bool known = ctx.on_demand ? h->src_rank != ctx.self : ctx.peers != nullptr && ctx.peers->contains(h->src_rank);
  if (h->src_rank >= ctx.nranks || !known) return refuse(v, RejectCode::unknown_rank, rank_name(h->src_rank));
  if (h->lane >= ctx.lanes) return refuse(v, RejectCode::bad_lane, "lane " + std::to_string(h->lane));
  // A rtu_lost notice comes from the passive side of a pair we initiate: the rule reverses.
  // On demand the roles are the pair's (who asked), checked by the engine against it.
  const bool notice = h->kind == WireKind::rtu_lost;
  if (!ctx.on_demand &&
      (notice ? !plan::initiates(ctx.self, h->src_rank, ctx.nranks) : !plan::initiates(h->src_rank, ctx.self, ctx.nranks)))
    return refuse(v, RejectCode::wrong_role,
                  notice ? rank_name(h->src_rank) + " initiates to us" : "we initiate to " + rank_name(h->src_rank));
  if (!ctx.accepting) return refuse(v, RejectCode::shutting_down, "not wiring up");
  v.admit = notice ? Admit::rtu_notice : h->kind == WireKind::abandon ? Admit::abandon : Admit::connect;
  return v;
}

GateVerdict check_pair(GateVerdict v, PairState state, uint32_t newest_attempt) {
  if (v.admit != Admit::connect) return v;
  const uint32_t a = v.header.attempt;
  if (a == 0 || a <= newest_attempt)
    return refuse(v, RejectCode::stale_attempt,
                  "attempt " + std::to_string(a) + " after " + std::to_string(newest_attempt));
  if (state == PairState::established) return refuse(v, RejectCode::duplicate, "lane already connected");
  if (state == PairState::failed) return refuse(v, RejectCode::shutting_down, "pair given up");
  return v;
}

Status check_reply(const GateContext& ctx, std::span<const uint8_t> private_data, uint32_t peer, uint32_t lane,
                   uint32_t attempt, uint64_t nonce) {
  auto bad = [&](const std::string& why) {
    return Error::make(ErrorCode::protocol_error, "CONNECT_RESPONSE", "refused the REP: " + why)
        .with_peer(rank_name(peer) + " lane " + std::to_string(lane));
  };
  if (auto d = decode(private_data); !d) return bad("not a wireup peer's (" + d.error().detail + ")");
  auto h = ctx.wire->open_answer(private_data, nonce);
  if (!h) return bad(h.error().detail);
  if (h->kind != WireKind::accept) return bad("a wireup message that is not an accept");
  if (h->src_rank != peer) return bad("it comes from " + rank_name(h->src_rank) + ", not " + rank_name(peer));
  if (h->dst_rank != ctx.self) return bad("it is for " + rank_name(h->dst_rank));
  if (h->lane != lane) return bad("it answers lane " + std::to_string(h->lane));
  if (h->attempt != attempt)
    return bad("it answers attempt " + std::to_string(h->attempt) + ", ours is " + std::to_string(attempt));
  return Status::ok();
}

}  // namespace wireup
