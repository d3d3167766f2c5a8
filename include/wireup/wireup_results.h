/* wireup -- what wireup built and what it could not: the results (the transport's QPs at RTS,
 * with how ECE went) and the errors (why a (peer, lane) was given up on, with the peer's own
 * reason when it sent one).
 * Included by wireup.h; not meant to be included alone. */
#ifndef WIREUP_RESULTS_H
#define WIREUP_RESULTS_H

#ifndef WIREUP_WIREUP_H
#error "include <wireup/wireup.h>: it declares the handle and status types used here"
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* How ECE (Enhanced Connection Establishment) went for a connection. */
typedef enum wireup_ece_outcome {
  WIREUP_ECE_DISABLED = 0,        /* "disabled": config ece.mode is off */
  WIREUP_ECE_NEGOTIATED = 1,      /* "negotiated": both devices have ECE, same vendor; the
                                     options both accept are in force */
  WIREUP_ECE_UNSUPPORTED = 2,     /* "unsupported": this device or the peer's has no ECE; the
                                     connection goes on without */
  WIREUP_ECE_VENDOR_MISMATCH = 3, /* "vendor_mismatch": both offered ECE, different vendors:
                                     options 0 */
  WIREUP_ECE_REJECTED = 4         /* "rejected": an option ece.mode requires was missing, the
                                     connection was refused (IB reject reason 35); only in
                                     the ece_outcomes tally, never in a result */
} wireup_ece_outcome_t;

/* The text of an outcome ("negotiated"); "unknown" for a value not listed. Never NULL. */
const char* wireup_ece_outcome_name(wireup_ece_outcome_t outcome);

/* Why a (peer, lane) was given up on (wireup_peer_error_t.kind, the "failures" tally), or why a
 * connection handed over is gone (wireup_result_t.lost). */
typedef enum wireup_error_kind {
  WIREUP_ERROR_REJECTED = 1,       /* "rejected": the peer refused (a CM REJ): reject_reason is
                                      the IB reason, peer_reason wireup's own when it sent one */
  WIREUP_ERROR_UNREACHABLE = 2,    /* "unreachable": the CM's REQ or REP retries ran out */
  WIREUP_ERROR_ADDRESS = 3,        /* "address_error": the peer's address did not resolve */
  WIREUP_ERROR_ROUTE = 4,          /* "route_error": no route to the peer */
  WIREUP_ERROR_CONNECT = 5,        /* "connect_error": the CM could not complete the exchange */
  WIREUP_ERROR_DEVICE_REMOVAL = 6, /* "device_removal": this rank's device went away (or
                                      reported DEVICE_FATAL) */
  WIREUP_ERROR_ECE_REJECTED = 7,   /* "ece_rejected": this side refused the peer's ECE answer
                                      (ece.mode requires an option it lacks) */
  WIREUP_ERROR_LOCAL = 8,          /* "local_error": a local step failed (the QP factory, a QP
                                      transition, ECE required without device support):
                                      `status` says which class */
  WIREUP_ERROR_DISCONNECTED = 9,   /* "disconnected": the connection went before it was
                                      established, or wireup_fail_peer() gave it up */
  WIREUP_ERROR_TIMED_OUT = 10,     /* "timed_out": engine.wireup_timeout_ms passed first */
  WIREUP_ERROR_RTU_LOST = 11,      /* "rtu_lost": the peer never got this connection's last
                                      message and cannot reconnect; the lane is lost */
  WIREUP_ERROR_BAD_REPLY = 12,     /* "bad_reply": the peer's listener answered with something
                                      that is not a wireup REP for this request (not a wireup
                                      listener, another job, a stale answer); refused before
                                      RTR, the QP released */
  WIREUP_ERROR_ABANDONED = 13      /* "abandoned": the peer gave up on the pair and said so */
} wireup_error_kind_t;

/* The text of a kind ("rejected"); "unknown" for a value not listed. Never NULL. */
const char* wireup_error_kind_name(wireup_error_kind_t kind);

typedef struct wireup_result {
  uint32_t struct_size;       /* the caller's sizeof: WIREUP_STRUCT_INIT */
  uint32_t peer;
  uint32_t lane;
  int active;                 /* 1: this side initiated */
  struct ibv_qp* qp;          /* the transport's QP, now at RTS */
  uint32_t local_qpn;
  uint32_t remote_qpn;        /* the peer's QP this one is connected to */
  uint32_t attempts;          /* attempts it took (1 = the first) */
  uint32_t ece_local_vendor, ece_local_options;    /* ECE of this device (0 = none) */
  uint32_t ece_remote_vendor, ece_remote_options;  /* what the peer sent */
  uint32_t ece_accepted;      /* options in force on the QP */
  wireup_ece_outcome_t ece_outcome;
  const char* device;         /* device name */
  /* Phases of the successful attempt, in ns; 0 where a phase does not apply to the role
   * (the passive side does not resolve and does not wait for a REP). */
  uint64_t resolve_addr_ns, resolve_route_ns, qp_create_ns, req_to_rep_ns, rtr_rts_ns, establish_ns;
  uint64_t attempt_ns;        /* start of the successful attempt -> established */
  /* What the QP was given on its way to RTS (from the CM's attributes and the configuration):
   * IBV_ACCESS_* flags, enum ibv_mtu, READ/atomic depths as initiator (max_rd_atomic) and as
   * target (max_dest_rd_atomic), the local ACK timeout exponent and the retry counts. */
  uint32_t qp_access_flags;
  uint8_t qp_path_mtu, qp_max_rd_atomic, qp_max_dest_rd_atomic, qp_timeout;
  uint8_t qp_retry_cnt, qp_rnr_retry, qp_min_rnr_timer;
  /* The local rail the connection runs on (its device is wireup_context_rail_ibv_context of
   * it); 0 with one rail. */
  uint32_t rail;
  /* 0 while the connection stands as far as wireup knows. Else why it is gone since it was
   * handed over, as the wireup_event_t of that moment said: WIREUP_ERROR_DEVICE_REMOVAL (its
   * device, or its rail of several, was removed: the lanes on other rails stand),
   * WIREUP_ERROR_DISCONNECTED (in bulk, the peer or the CM disconnected it; on demand a lane
   * ends with its LANE_CLOSED event instead), WIREUP_ERROR_RTU_LOST (the peer never got this
   * side's last message). The QP is still the transport's (in the error state): destroy it
   * as any other. Check WIREUP_HAS_FIELD(r, lost) before reading it. */
  wireup_error_kind_t lost;
} wireup_result_t;

/* Number of results: one per (peer, lane) handed over so far, in the order the lanes were first
 * handed over (grows during progress, never shrinks); 0 if w is NULL.
 * A (peer, lane) owns one result index for the handle's life. In bulk each lane connects once,
 * so its result keeps its QP for good. On demand, a lane that was closed (LANE_CLOSED) or given
 * up and connects again gets its new connection at the same index: the READY lane event names
 * it, and from then on the result there is the new connection (its QP, QPNs, attempts,
 * timings). The closed connection's QP was the transport's since its LANE_CLOSED; keep the
 * pointer from its READY to destroy it. So the table holds at most one result per lane ever
 * used, however often lanes connect and disconnect. */
size_t wireup_result_count(const wireup_t* w);

/* Copies result `i` (0 <= i < count) into *out (its struct_size set: WIREUP_STRUCT_INIT): the
 * lane's latest connection handed over (a closed lane's: the one it had; a lost one's, with
 * `lost` saying why). Its strings stay valid until wireup_destroy.
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL, i out of range, out->struct_size);
 * WIREUP_ERR_INVALID_STATE (on demand, called from a callback inside wireup_progress() while
 * the lane's next connection has been made and not yet handed over: read it from the READY). */
wireup_status_t wireup_result_get(const wireup_t* w, size_t i, wireup_result_t* out);

/* Why the peer's wireup refused a request: the reason in its REJ's private data (IB reject
 * reason 28, consumer). Each is wireup's own; a transport reacts to the few that concern it
 * (WRONG_JOB_KEY: the ranks disagree on the job key). */
typedef enum wireup_reject_reason {
  WIREUP_REJECT_NONE = 0,              /* "none": the REJ carried no wireup reason (not a REJ,
                                          or not from wireup) */
  WIREUP_REJECT_BAD_MAGIC = 1,         /* "bad_magic": the request is not wireup's */
  WIREUP_REJECT_BAD_VERSION = 2,       /* "bad_version": another wire protocol version */
  WIREUP_REJECT_WRONG_JOB_KEY = 3,     /* "wrong_job_key": the request's tag does not verify:
                                          another job's key, or altered in flight */
  WIREUP_REJECT_UNKNOWN_RANK = 4,      /* "unknown_rank": the source rank is not in its table */
  WIREUP_REJECT_WRONG_DESTINATION = 5, /* "wrong_destination": meant for another rank (a stale
                                          address table) */
  WIREUP_REJECT_BAD_LANE = 6,          /* "bad_lane": a lane beyond its number of lanes */
  WIREUP_REJECT_WRONG_ROLE = 7,        /* "wrong_role": its plan says it initiates this pair */
  WIREUP_REJECT_STALE_ATTEMPT = 8,     /* "stale_attempt": older than an attempt it has */
  WIREUP_REJECT_DUPLICATE = 9,         /* "duplicate": the lane is connected already */
  WIREUP_REJECT_LOCAL_FAILURE = 10,    /* "local_failure": it failed to make or move its QP
                                          (transient: retried) */
  WIREUP_REJECT_SHUTTING_DOWN = 11,    /* "shutting_down": its wireup is over, or the pair
                                          given up */
  WIREUP_REJECT_REPAIR_ACCEPTED = 12,  /* "repair_accepted": answer to a lost-RTU notice: torn
                                          down, a newer attempt follows */
  WIREUP_REJECT_REPAIR_PENDING = 13,   /* "repair_pending": answer to a lost-RTU notice: a newer
                                          attempt is in flight or due */
  WIREUP_REJECT_REPAIR_REFUSED = 14,   /* "repair_refused": answer to a lost-RTU notice: it
                                          cannot reconnect and reported the loss */
  WIREUP_REJECT_BAD_REPLY = 15,        /* "bad_reply": the active side refused our REP */
  WIREUP_REJECT_ABANDON_NOTED = 16,    /* "abandon_noted": answer to an abandon notice */
  WIREUP_REJECT_CROSSED = 17,          /* "crossed": on demand, both sides asked at once and
                                          its request is the one kept */
  WIREUP_REJECT_UNKNOWN = 0xffff       /* "unknown": a wireup REJ whose reason this library does
                                          not know (a peer running a newer wireup) */
} wireup_reject_reason_t;

/* The text of a reason ("wrong_job_key"); "unknown" for a value not listed. Never NULL. */
const char* wireup_reject_reason_name(wireup_reject_reason_t reason);

typedef struct wireup_peer_error {
  uint32_t struct_size;     /* the caller's sizeof: WIREUP_STRUCT_INIT */
  uint32_t peer;
  uint32_t lane;
  int active;
  uint32_t attempts;
  wireup_error_kind_t kind;
  int reject_reason;        /* kind WIREUP_ERROR_REJECTED: the IB reject reason (8 nothing
                               listening, 28 consumer, 35 ECE); else 0 */
  wireup_reject_reason_t peer_reason; /* the peer's wireup reason from its REJ, or NONE */
  const char* message;      /* the whole story: call, errno, peer, QPN */
  wireup_status_t status;   /* kind WIREUP_ERROR_LOCAL: the failing local step's status
                               (WIREUP_ERR_NOT_SUPPORTED: ECE required, device has none);
                               else by kind: REJECTED -> WIREUP_ERR_REJECTED; UNREACHABLE,
                               CONNECT -> WIREUP_ERR_UNREACHABLE; ADDRESS, ROUTE ->
                               WIREUP_ERR_ADDRESS; TIMED_OUT -> WIREUP_ERR_TIMED_OUT;
                               DEVICE_REMOVAL -> WIREUP_ERR_DEVICE_REMOVED; the others
                               (ECE_REJECTED, DISCONNECTED, RTU_LOST, BAD_REPLY, ABANDONED)
                               -> WIREUP_ERR_PROTOCOL */
} wireup_peer_error_t;

/* Number of (peer, lane) given up on so far; 0 if w is NULL. Like results, a (peer, lane) owns
 * one error index: a lane given up again (on demand, after a new wireup_connect) has its new
 * error written at the same index (the FAILED lane event names it). An error stays listed
 * after its lane connects later (wireup_lane_state says where each lane stands now). */
size_t wireup_error_count(const wireup_t* w);

/* Copies error `i` into *out (struct_size set); its message stays valid until wireup_destroy or
 * until that lane is given up again, whichever comes first.
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL, i out of range, out->struct_size). */
wireup_status_t wireup_error_get(const wireup_t* w, size_t i, wireup_peer_error_t* out);

#ifdef __cplusplus
}
#endif

#endif /* WIREUP_RESULTS_H */
