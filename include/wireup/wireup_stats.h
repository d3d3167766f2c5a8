/* wireup -- what a handle counted and timed: the stats as JSON, the counters, the labelled
 * tallies, and the raw per-phase durations for percentiles across ranks.
 * Included by wireup.h; not meant to be included alone. */
#ifndef WIREUP_STATS_H
#define WIREUP_STATS_H

#ifndef WIREUP_WIREUP_H
#error "include <wireup/wireup.h>: it declares the handle and status types used here"
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * wireup_stats_json -- counters and per-phase timing summaries as one JSON object.
 * buf/len as wireup_local_address: with WIREUP_ERR_BUFFER_TOO_SMALL, *len = bytes needed
 * including the terminating NUL (buf may be NULL with *len 0 to ask for the size).
 */
wireup_status_t wireup_stats_json(const wireup_t* w, char* buf, size_t* len);

/* Counters of one handle, as wireup_stats_json() has them; readable at any time. New
 * counters are appended. */
typedef struct wireup_counters {
  uint32_t struct_size;         /* the caller's sizeof: WIREUP_STRUCT_INIT */
  uint64_t connects_started;    /* active attempts, first ones and retries */
  uint64_t retries;
  uint64_t established_active;  /* results where this side initiated */
  uint64_t established_passive;
  uint64_t failed;              /* (peer, lane) given up on */
  uint64_t superseded;          /* half-open passive attempts replaced by a newer one */
  uint64_t strangers;           /* requests rejected before any resource was made */
  uint64_t disconnects;         /* DISCONNECTED on the steady channel */
  uint64_t events;              /* CM events handled */
  uint64_t connects_paced;      /* first attempts held back by incast pacing (cm.incast) */
  uint64_t strangers_unlogged;  /* strangers from sources past the log's memory (not logged) */
  uint64_t rtu_lost_sent;       /* RTU-lost notices sent (passive side, every try) */
  uint64_t rtu_lost_received;   /* RTU-lost notices answered (active side) */
  uint64_t repairs;             /* lanes torn down to reconnect after a lost RTU */
  uint64_t repairs_refused;     /* lost RTUs of lanes that could not be repaired (reported lost) */
  uint64_t abandons_sent;       /* abandon notices sent after giving up locally (active side) */
  uint64_t abandons_received;   /* abandon notices taken (passive side) */
  uint64_t device_events;       /* the device's async events read */
  uint64_t comm_est_notified;   /* COMM_EST told to the CM (rdma_notify) */
  uint64_t device_removals;     /* DEVICE_REMOVAL seen on this handle's ids (each id once) */
  uint64_t addr_changes;        /* ADDR_CHANGE seen on this handle's ids */
  uint64_t asks;                /* on demand: lanes asked for (wireup_connect, eager ring/peers) */
  uint64_t crossed_won;         /* the peer's crossing requests refused: ours is the one kept */
  uint64_t crossed_yielded;     /* our requests withdrawn for the peer's crossing one */
  uint64_t lanes_closed;        /* lanes disconnected (wireup_disconnect, either side) */
  uint64_t peers_down;          /* peers declared gone after wireup (WIREUP_EVENT_PEER_DOWN) */
  /* The liveness service (liveness.enable; all 0 without it). Datagrams: */
  uint64_t liveness_sent;         /* datagrams sent (heartbeats, suspicions, deaths) */
  uint64_t liveness_send_dropped; /* not sent: the socket's buffer was full (EAGAIN, ENOBUFS),
                                     as a lossy network would drop them */
  uint64_t liveness_send_errors;  /* not sent for another error (logged once per peer and errno) */
  uint64_t liveness_received;     /* datagrams that opened (this job's MAC, well formed) */
  uint64_t liveness_bad;          /* datagrams dropped unopened: wrong length, magic, version,
                                     kind, digest, MAC tag or a rank out of range */
  /* Its decisions: */
  uint64_t liveness_suspicions;   /* watched ranks this rank suspected */
  uint64_t liveness_refuted;      /* suspicions cleared by a heartbeat */
  uint64_t liveness_declared;     /* deaths this rank declared (a second watcher confirmed) */
  uint64_t liveness_learnt;       /* deaths known to the service, however learnt (its own,
                                     spread by others, or a peer down seen by the engine) */
  uint64_t liveness_stale;        /* datagrams from ranks already dead */
  uint64_t liveness_refused;      /* deaths told of a rank this one still hears (one-way
                                     partition): not believed */
} wireup_counters_t;

/* Copies the counters into *out (struct_size set). Counters this library does not have (a
 * program built against newer headers) read 0.
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL, out->struct_size). */
wireup_status_t wireup_counters_get(const wireup_t* w, wireup_counters_t* out);

/* The groups of labelled counts, and how each reads its key. */
typedef enum wireup_tally_group {
  WIREUP_TALLY_REJECTS_RECEIVED = 1, /* "rejects_received": REJs the peers sent us; key: the IB
                                        reject reason, a number (8 nothing listening, 28
                                        consumer, 35 ECE) */
  WIREUP_TALLY_REJECTS_SENT = 2,     /* "rejects_sent": requests we refused; key: a
                                        wireup_reject_reason_t */
  WIREUP_TALLY_FAILURES = 3,         /* "failures": failed attempts, retried or not; key: a
                                        wireup_error_kind_t */
  WIREUP_TALLY_ECE_OUTCOMES = 4      /* "ece_outcomes": connections by ECE outcome; key: a
                                        wireup_ece_outcome_t */
} wireup_tally_group_t;

/* The text of a group ("rejects_received", the name wireup_stats_json uses); "unknown" for a
 * value not listed. Never NULL. */
const char* wireup_tally_group_name(wireup_tally_group_t group);

/* One labelled count. */
typedef struct wireup_tally {
  uint32_t struct_size;        /* the caller's sizeof: WIREUP_STRUCT_INIT */
  wireup_tally_group_t group;
  uint32_t key;                /* read as the group says */
  uint64_t count;
  const char* key_name;        /* the key as wireup_stats_json writes it ("8", "wrong_job_key") */
} wireup_tally_t;

/* Takes a snapshot of the tallies and returns how many there are; 0 if w is NULL. */
size_t wireup_tally_count(const wireup_t* w);

/* Copies tally `i` of the last snapshot into *out (struct_size set); key_name stays valid
 * until the next wireup_tally_count() or wireup_destroy. Errors as wireup_result_get. */
wireup_status_t wireup_tally_get(const wireup_t* w, size_t i, wireup_tally_t* out);

/* The phases timed for every established connection (the spans of wireup_result_t, plus
 * TOTAL: the first attempt's start -> established, retries included). */
typedef enum wireup_phase {
  WIREUP_PHASE_RESOLVE_ADDR = 0, /* active only */
  WIREUP_PHASE_RESOLVE_ROUTE = 1, /* active only */
  WIREUP_PHASE_QP_CREATE = 2,
  WIREUP_PHASE_REQ_TO_REP = 3,   /* active only */
  WIREUP_PHASE_RTR_RTS = 4,
  WIREUP_PHASE_ESTABLISH = 5,
  WIREUP_PHASE_TOTAL = 6,
  WIREUP_PHASE_COUNT = 7
} wireup_phase_t;

/* "resolve_addr", "resolve_route", "qp_create", "req_to_rep", "rtr_rts", "establish", "total"
 * (the names wireup_stats_json uses); NULL out of range. */
const char* wireup_phase_name(wireup_phase_t phase);

/*
 * wireup_phase_samples -- the raw durations (ns) of one phase, one per connection it applies
 * to, so that a job's percentiles can be taken over every rank's samples. On demand, a lane
 * connected again replaces its earlier connection's samples (one per (peer, lane), like the
 * results); the counters (wireup_counters_get) count every connection.
 * buf/n: in, the capacity of buf in samples; out, the samples written (or, with
 * WIREUP_ERR_BUFFER_TOO_SMALL, the number needed; buf may be NULL with *n 0 to ask).
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL w or n, phase out of range),
 *         WIREUP_ERR_BUFFER_TOO_SMALL.
 */
wireup_status_t wireup_phase_samples(const wireup_t* w, wireup_phase_t phase, uint64_t* buf, size_t* n);

#ifdef __cplusplus
}
#endif

#endif /* WIREUP_STATS_H */
