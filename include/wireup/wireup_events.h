/* wireup -- events after and beside wireup: what happens to established connections and to
 * the listener (wireup_on_event), and the device's own asynchronous events (wireup_on_device_event).
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
  WIREUP_EVENT_DISCONNECTED = 1,   /* the peer disconnected (or its node went away); status
                                      -ECONNRESET, name "RTU_LOST": the peer never got this
                                      handed-over connection's RTU and has no connection
                                      behind it; wireup does not reconnect it: stop using the
                                      lane, move its QP to ERR, destroy it when done (the
                                      CM's own DISCONNECTED, TIMEWAIT_EXIT follow) */
  WIREUP_EVENT_DEVICE_REMOVAL = 2, /* the device under the connection is going away */
  WIREUP_EVENT_ADDR_CHANGE = 3,    /* the local address moved (bonding failover, ...) */
  WIREUP_EVENT_TIMEWAIT_EXIT = 4,  /* the QP left timewait: its QPN may be reused */
  WIREUP_EVENT_OTHER = 5
} wireup_event_type_t;

/* The peer and lane of an event of this rank's listener (its device removed, its address
 * changed): no connection, the engine itself is concerned. */
#define WIREUP_EVENT_PEER_LISTENER UINT32_MAX

typedef struct wireup_event {
  uint32_t peer;     /* WIREUP_EVENT_PEER_LISTENER for the listener's events */
  uint32_t lane;
  wireup_event_type_t type;
  int status;        /* the CM event's status */
  const char* name;  /* the CM event's name ("DISCONNECTED"), or "RTU_LOST" (see above) */
} wireup_event_t;

typedef void (*wireup_event_fn)(void* arg, const wireup_event_t* ev);

/* Registers the callback for what happens to established connections and to the listener
 * (called from wireup_progress; not during wireup_destroy). fn NULL unregisters. On
 * DEVICE_REMOVAL the library destroys the connection's CM id (rdma_cm(7)); the QP, if the
 * transport took it, stays the transport's to destroy: the device is released only when
 * every QP, PD and CQ on it and the context are gone. */
wireup_status_t wireup_on_event(wireup_t* w, wireup_event_fn fn, void* arg);

/* An asynchronous event of the device (ibv_get_async_event on the context's device). The
 * library reads them (wireup_fd() covers the device's async fd), acks each at once, answers
 * COMM_EST itself (rdma_notify on the connection's CM id: the passive side then counts as
 * established as if the RTU had come) and hands every other one here. type is the
 * enum ibv_event_type value (IBV_EVENT_QP_FATAL = 1, IBV_EVENT_DEVICE_FATAL = 8, ...). */
typedef struct wireup_device_event {
  int type;           /* enum ibv_event_type */
  const char* name;   /* "QP_FATAL", "PORT_ERR", "DEVICE_FATAL", ... */
  const char* device; /* the device's name; valid during the callback */
  uint32_t qpn;       /* QP events: the QP's number, else 0 */
  uint8_t port;       /* port events: the port, else 0 */
  int known;          /* 1 if the QP is one of this handle's connections (peer, lane below) */
  uint32_t peer;
  uint32_t lane;
} wireup_device_event_t;

typedef void (*wireup_device_event_fn)(void* arg, const wireup_device_event_t* ev);

/* Registers the callback for the device's asynchronous events (called from wireup_progress;
 * not during wireup_destroy). fn NULL unregisters. A DEVICE_FATAL also ends wireup: every open
 * (peer, lane) is reported as an error (kind "device_removal"). */
wireup_status_t wireup_on_device_event(wireup_t* w, wireup_device_event_fn fn, void* arg);

#ifdef __cplusplus
}
#endif

#endif /* WIREUP_EVENTS_H */
