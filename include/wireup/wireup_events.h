/* wireup -- events after and beside wireup: what happens to established connections and to
 * the listener (wireup_on_event), and the device's own asynchronous events (who reads them,
 * wireup_on_device_event, wireup_context_async_event).
 * Included by wireup.h; not meant to be included alone. */
#ifndef WIREUP_EVENTS_H
#define WIREUP_EVENTS_H

#ifndef WIREUP_WIREUP_H
#error "include <wireup/wireup.h>: it declares the handle and status types used here"
#endif

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wireup_event_type {
  WIREUP_EVENT_DISCONNECTED = 1,   /* the peer disconnected (or its node went away) */
  WIREUP_EVENT_DEVICE_REMOVAL = 2, /* the device under the connection is going away */
  WIREUP_EVENT_ADDR_CHANGE = 3,    /* the local address moved (a bonding failover) */
  WIREUP_EVENT_TIMEWAIT_EXIT = 4,  /* the QP left timewait: its QPN may be reused */
  WIREUP_EVENT_OTHER = 5,          /* any other CM event of an established connection */
  WIREUP_EVENT_RTU_LOST = 6,       /* name "RTU_LOST", status -ECONNRESET: the peer never got
                                      this handed-over connection's RTU and has no connection
                                      behind it; wireup does not reconnect it: stop using the
                                      lane, move its QP to ERR, destroy it when done (the CM's
                                      own DISCONNECTED and TIMEWAIT_EXIT of its id follow) */
  WIREUP_EVENT_PEER_DOWN = 7       /* name "PEER_DOWN", status 0: rank `peer` is gone as a
                                      whole, at most once per peer and handle; lane is
                                      WIREUP_EVENT_LANE_ALL, lanes_down and cause say how many
                                      established lanes it took and how it was learnt. The
                                      per-lane DISCONNECTED events still come as before. */
} wireup_event_type_t;

/* How a peer was found to be gone (WIREUP_EVENT_PEER_DOWN). */
typedef enum wireup_peer_down_cause {
  WIREUP_PEER_DOWN_NONE = 0,         /* not a PEER_DOWN event */
  WIREUP_PEER_DOWN_DISCONNECTED = 1, /* every established lane got the peer's DISCONNECTED: its
                                        process died (its kernel closed its connections) or it
                                        closed them all. Bulk wireup only: on demand a peer
                                        disconnects lanes it no longer needs, and the CM does not
                                        tell the two apart */
  WIREUP_PEER_DOWN_REPORTED = 2,     /* wireup_fail_peer(): the launcher said so */
  WIREUP_PEER_DOWN_SILENT = 3        /* the liveness service (config liveness.*): no heartbeat
                                        from the peer's node within liveness.deadline_ms, as
                                        seen by two of its watchers (a power cut, a partition) */
} wireup_peer_down_cause_t;

/* The text of a cause ("disconnected", "reported", "silent"); "unknown" for a value not listed
 * (and for NONE). Never NULL. */
const char* wireup_peer_down_cause_name(wireup_peer_down_cause_t cause);

/* The lane of an event that concerns every lane of its peer (WIREUP_EVENT_PEER_DOWN). */
#define WIREUP_EVENT_LANE_ALL UINT32_MAX

/* The peer and lane of an event of this rank's listener (its device removed, its address
 * changed): no connection, the engine itself is concerned. */
#define WIREUP_EVENT_PEER_LISTENER UINT32_MAX

/* Allocated by the library for the callback: struct_size is the library's (WIREUP_HAS_FIELD). */
typedef struct wireup_event {
  uint32_t struct_size;
  uint32_t peer;     /* WIREUP_EVENT_PEER_LISTENER for the listener's events */
  uint32_t lane;
  wireup_event_type_t type;
  int status;        /* the CM event's status */
  const char* name;  /* the CM event's name ("DISCONNECTED"), or "RTU_LOST", "PEER_DOWN": for logs */
  /* Appended (WIREUP_HAS_FIELD): set for WIREUP_EVENT_PEER_DOWN, 0 / NONE for the others. */
  uint32_t lanes_down;             /* the peer's established lanes it took with it */
  wireup_peer_down_cause_t cause;
} wireup_event_t;

typedef void (*wireup_event_fn)(void* arg, const wireup_event_t* ev);

/* Registers the callback for what happens to established connections and to the listener
 * (called from wireup_progress; not during wireup_destroy). fn NULL unregisters. On
 * DEVICE_REMOVAL the library destroys the connection's CM id (rdma_cm(7)); the QP, if the
 * transport took it, stays the transport's to destroy: the device is released only when
 * every QP, PD and CQ on it and the context are gone. */
wireup_status_t wireup_on_event(wireup_t* w, wireup_event_fn fn, void* arg);

/* ---------------------------------------------------------------------------------------
 * The device's asynchronous events (ibv_get_async_event on the context's ibv_context)
 *
 * Each event of an ibv_context goes to whoever calls ibv_get_async_event first, so exactly
 * one party may read them; configuration key device.async_events says which (set it with
 * config_overrides "device.async_events=transport", or in the tuning file):
 *
 *  "library" (the default): the library reads them (the context's async fd is made
 *    non-blocking by the first wireup_create, and stays so; wireup_fd() covers it), acks
 *    each at once, answers COMM_EST itself
 *    (rdma_notify on the connection's CM id: the passive side then counts as established as
 *    if the RTU had come) and hands every other one to wireup_on_device_event's callback.
 *    The transport must not read the async fd itself.
 *  "transport": the library never touches the async fd (no fcntl, no read, not in
 *    wireup_fd()). The transport's own handler reads every event, passes each to
 *    wireup_context_async_event() and acks it itself afterwards (ibv_ack_async_event): the
 *    library keeps a copy and acks nothing. It needs at least the QP events of the QPs its
 *    factory made (COMM_EST above all: without it a passive connection whose RTU is lost
 *    waits for the CM's REP retries), and DEVICE_FATAL.
 * ------------------------------------------------------------------------------------- */

/* What an event concerns, by its type (the element of struct ibv_async_event it names). */
typedef enum wireup_device_object {
  WIREUP_DEVICE_OBJECT_QP = 1,     /* qpn says which */
  WIREUP_DEVICE_OBJECT_CQ = 2,     /* handle is the struct ibv_cq* */
  WIREUP_DEVICE_OBJECT_SRQ = 3,    /* handle is the struct ibv_srq* */
  WIREUP_DEVICE_OBJECT_WQ = 4,     /* handle is the struct ibv_wq* */
  WIREUP_DEVICE_OBJECT_PORT = 5,   /* port says which */
  WIREUP_DEVICE_OBJECT_DEVICE = 6  /* the device itself (DEVICE_FATAL) */
} wireup_device_object_t;

/* An asynchronous event of the device, as wireup_on_device_event's callback gets it. type is
 * the enum ibv_event_type value, as <infiniband/verbs.h> lists them. */
typedef struct wireup_device_event {
  uint32_t struct_size; /* the library's sizeof (WIREUP_HAS_FIELD) */
  int type;           /* enum ibv_event_type */
  const char* name;   /* the type without IBV_EVENT_ ("QP_FATAL") */
  const char* device; /* the device's name; valid during the callback */
  uint32_t qpn;       /* QP events: the QP's number, else 0 */
  uint8_t port;       /* port events: the port, else 0 */
  int known;          /* 1 if the QP is one of this handle's connections (peer, lane below) */
  uint32_t peer;
  uint32_t lane;
  wireup_device_object_t object; /* which kind of object the event concerns */
  void* handle;       /* CQ, SRQ and WQ events: the transport's struct ibv_cq* / ibv_srq* /
                         ibv_wq* the event named (compare it, the library never dereferences
                         it; the object may be gone by the time the callback runs if the
                         transport destroyed it); NULL for the others */
} wireup_device_event_t;

typedef void (*wireup_device_event_fn)(void* arg, const wireup_device_event_t* ev);

/* Registers the callback for the device's asynchronous events (called from wireup_progress;
 * not during wireup_destroy): every event but a COMM_EST the library answered, also in
 * "transport" mode for the events the transport handed over. fn NULL unregisters. A
 * DEVICE_FATAL also ends wireup: every open (peer, lane) is reported as an error (kind
 * WIREUP_ERROR_DEVICE_REMOVAL). */
wireup_status_t wireup_on_device_event(wireup_t* w, wireup_device_event_fn fn, void* arg);

struct ibv_async_event;

/*
 * wireup_context_async_event -- "transport" mode: hand the library an event the transport
 * read with ibv_get_async_event on wireup_context_ibv_context(ctx).
 *
 * The library copies what it needs (the type, the QP's number, the port, the CQ/SRQ/WQ
 * pointer as an opaque handle) and returns: the transport acks the event afterwards, as
 * always. The next wireup_progress() of a handle of the context (wireup_fd() turns readable)
 * handles the copy for every handle, exactly as an event the library read itself: COMM_EST of a
 * connection waiting for its RTU is answered with rdma_notify; every other event reaches
 * wireup_on_device_event's callback. Hand over every event (the library ignores what is not
 * its own), or at least the QP events and DEVICE_FATAL.
 *
 * Unlike every other call, it may be made from any thread (a transport's async thread): it
 * only queues. Not once wireup_context_destroy(ctx) may have begun. A failure is recorded for
 * the calling thread (wireup_last_error(NULL)) only.
 * Errors: WIREUP_ERR_INVALID_ARGUMENT (ctx or ev NULL, an event type wireup does not know,
 *         a QP event without its QP, a QP of another ibv_context);
 *         WIREUP_ERR_INVALID_STATE (device.async_events is "library": the library reads the
 *         events itself, and this one would be seen twice).
 */
wireup_status_t wireup_context_async_event(wireup_context_t* ctx, const struct ibv_async_event* ev);

#ifdef __cplusplus
}
#endif

#endif /* WIREUP_EVENTS_H */
