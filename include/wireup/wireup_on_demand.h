/* wireup -- connecting on demand: one peer's lanes when the transport first needs them, its
 * address only then, each lane's readiness as it comes, and one peer's disconnect.
 * Included by wireup.h; not meant to be included alone.
 *
 * Needs config engine.mode = "on_demand" (every rank of the job the same). wireup_start()
 * then connects only the eager ring (engine.eager_ring) and wireup_set_peers() is optional:
 * the table may be partial or empty. The listener stays open until wireup_destroy(), and any
 * rank of the job whose request authenticates may connect to this one. Whoever asks first
 * initiates; when two ranks ask for each other at the same time, one rule both apply keeps
 * exactly one connection per (pair, lane) and hands the other request's QP back through the
 * release callback (no error, no retry). */
#ifndef WIREUP_ON_DEMAND_H
#define WIREUP_ON_DEMAND_H
#ifndef WIREUP_WIREUP_H
#error "include <wireup/wireup.h>: it declares the handle and status types used here"
#endif
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/* wireup_connect -- connect every lane of rank `peer`, after wireup_start(). Lanes already
 * asked for (by either side), connecting or ready are left alone; failed or idle ones are
 * asked again. Without the peer's address the address callback is called (once, possibly
 * from inside this call) and the lanes wait for wireup_add_peer(). Each lane's outcome comes
 * as a lane event; wireup_lane_state() says where it stands meanwhile. A lane not ready within
 * engine.wireup_timeout_ms of the ask is given up (wireup_error_get()).
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL, peer >= nranks, peer is this rank);
 * WIREUP_ERR_INVALID_STATE (not on demand, before wireup_start(), the device removed, no
 * address and no address callback). */
wireup_status_t wireup_connect(wireup_t* w, uint32_t peer);

/* wireup_disconnect -- every lane with `peer`: an established one is disconnected (the peer
 * sees WIREUP_EVENT_DISCONNECTED and a LANE_CLOSED event), a pending one is dropped; a QP never
 * handed over goes back through the release callback, one handed over stays the transport's
 * (move it to ERR, destroy it when done). The lanes are idle afterwards: a later
 * wireup_connect() (or the peer's) makes new connections, with new QPs, each at its lane's
 * result index (the same index as before: wireup_result_count does not grow).
 * Errors as wireup_connect. */
wireup_status_t wireup_disconnect(wireup_t* w, uint32_t peer);

/* wireup_add_peer -- one peer's address (what its wireup_local_address() returned), at any
 * time: the answer to the address callback, or a peer learnt later. Replaces an earlier one.
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (NULL, rank >= nranks, malformed address, named). */
wireup_status_t wireup_add_peer(wireup_t* w, const wireup_peer_t* peer);

/* Called (from wireup_connect or wireup_progress) for a peer whose address the handle lacks;
 * answer with wireup_add_peer(), from inside the callback or any time later. */
typedef void (*wireup_address_fn)(void* arg, uint32_t peer);
wireup_status_t wireup_on_address_needed(wireup_t* w, wireup_address_fn fn, void* arg);

typedef enum wireup_lane_state {
  WIREUP_LANE_IDLE = 0,        /* nobody asked for it, or it was disconnected */
  WIREUP_LANE_CONNECTING = 1,  /* asked for (by either side), or waiting for the address */
  WIREUP_LANE_READY = 2,       /* connected: its result is in wireup_result_get() */
  WIREUP_LANE_FAILED = 3       /* given up: wireup_error_get() says why; connect asks again */
} wireup_lane_state_t;

/* Where (peer, lane) stands; WIREUP_LANE_IDLE also for a NULL handle or a lane out of range. */
wireup_lane_state_t wireup_lane_state(const wireup_t* w, uint32_t peer, uint32_t lane);

/* `index` is the lane's own: every READY of a (peer, lane) names the same result index, every
 * FAILED the same error index, however often the lane is closed and connected again; the
 * record there is the event's connection (or error) until the lane's next one. A lane closed
 * and connected again within one wireup_progress() call gets the CLOSED of its earlier
 * connection, then the READY of the new one (never a READY for a connection already gone). */
typedef enum wireup_lane_event_type {
  WIREUP_LANE_EVENT_READY = 1,   /* connected: `index` is its wireup_result_get() index */
  WIREUP_LANE_EVENT_FAILED = 2,  /* given up: `index` is its wireup_error_get() index */
  WIREUP_LANE_EVENT_CLOSED = 3   /* disconnected (by either side): idle again; `index` 0. Its
                                    QP is the transport's to destroy: take the pointer from the
                                    READY (a READY of the lane's next connection in the same
                                    call follows, and its index already shows that one) */
} wireup_lane_event_type_t;

/* Allocated by the library for the callback: struct_size is the library's (WIREUP_HAS_FIELD). */
typedef struct wireup_lane_event {
  uint32_t struct_size;
  uint32_t peer;
  uint32_t lane;
  wireup_lane_event_type_t type;
  size_t index;
} wireup_lane_event_t;

/* Registers the lane callback, called at the end of wireup_progress() once its results are
 * handed over (so the callback may call wireup_connect/wireup_disconnect). fn NULL
 * unregisters. Works in bulk mode too (READY/FAILED for every planned lane). */
typedef void (*wireup_lane_fn)(void* arg, const wireup_lane_event_t* ev);
wireup_status_t wireup_on_lane_event(wireup_t* w, wireup_lane_fn fn, void* arg);

#ifdef __cplusplus
}
#endif
#endif /* WIREUP_ON_DEMAND_H */
