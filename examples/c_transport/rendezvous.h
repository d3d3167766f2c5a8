/*
 * rendezvous.h -- large messages the way an MPI transport moves them, on the RC QPs wireup
 * handed over.
 *
 * Small messages go eagerly (one SEND, transport.c). A large one is not copied through
 * receive buffers: the sender announces it with a small SEND, the RTS ("request to send"), and
 * the data moves by RDMA straight between the two user buffers. Two protocols, as Open MPI's
 * ob1 and UCX offer them:
 *
 *   get  RTS {length, address, rkey} ->; the receiver pulls the data with one RDMA READ;
 *        <- FIN once it has it, so the sender may reuse its buffer.
 *   put  RTS {length} ->; <- CTS {address, rkey} ("clear to send") of the receive buffer;
 *        the sender pushes the data with one RDMA WRITE with immediate, whose immediate (the
 *        message's tag) completes a receive at the receiver: the data is there.
 *
 * Every connection carries one message each way at the same time, so every QP is both a
 * requester and a responder: a READ or WRITE into the QP of either side (initiating or
 * accepting) must be allowed by that QP's remote access flags.
 */
#ifndef C_TRANSPORT_RENDEZVOUS_H
#define C_TRANSPORT_RENDEZVOUS_H

#include <infiniband/verbs.h>
#include <stddef.h>

#include "wireup/wireup.h"

enum rndv_protocol { RNDV_GET, RNDV_PUT };

struct rndv; /* every connection's buffers, registrations and protocol state */

/* Allocates a message of `bytes` to every peer of the results (and room for the peer's),
 * fills each with a pattern naming sender, receiver, lane and offset, registers them and posts
 * the receives the protocol needs on every QP. The peers must have posted theirs before
 * rndv_run() sends the first RTS (the caller's barrier). NULL on failure, with `rank`'s error
 * printed. */
struct rndv* rndv_create(struct ibv_pd* pd, struct ibv_cq* cq, const wireup_result_t* results, size_t n,
                         int rank, enum rndv_protocol protocol, size_t bytes);

/* Moves every message, both ways on every connection, polling `cq` for at most `timeout_ms`;
 * checks every message received byte for byte. Returns the number of problems (printed). */
int rndv_run(struct rndv* x, double timeout_ms);

/* Connections run from the initiating side (this side sent the REQ) and from the accepting one. */
void rndv_roles(const struct rndv* x, unsigned* initiated, unsigned* accepted);

/* Deregisters and frees; the QPs stay the caller's. */
void rndv_destroy(struct rndv* x);

const char* rndv_protocol_name(enum rndv_protocol p);

#endif
