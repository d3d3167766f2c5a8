/*
 * rendezvous.c -- the get and put protocols of rendezvous.h over wireup's RC QPs.
 *
 * One state machine per direction of every connection, driven by the completions of the one
 * CQ: `out` is this rank's message to the peer, `in` the peer's message to this rank.
 */
#define _POSIX_C_SOURCE 200809L
#include "rendezvous.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The control messages, sent with SEND into the peer's posted receives. */
enum ctrl_type { CTRL_RTS = 1, CTRL_CTS = 2, CTRL_FIN = 3 };
struct ctrl {
  uint32_t type;
  uint32_t tag;    /* names the message: (sender rank << 16) | lane */
  uint64_t length; /* RTS */
  uint64_t addr;   /* RTS (get): the sender's buffer; CTS (put): the receiver's */
  uint32_t rkey;
  uint32_t pad;
};

/* Receives per QP: the peer's RTS, then its FIN (get), or its CTS and the WRITE's immediate (put). */
#define RECVS 3
enum out_state { OUT_IDLE, OUT_RTS_SENT, OUT_WRITING, OUT_DONE };
enum in_state { IN_WAIT_RTS, IN_READING, IN_WAIT_DATA, IN_DONE };

/* The work request id says which connection and which of its operations completed. */
enum wr_kind { WR_RECV0 = 0, WR_RTS = RECVS, WR_REPLY /* CTS or FIN */, WR_READ, WR_WRITE, WR_KINDS };

struct conn {
  wireup_result_t r;
  uint8_t* out;                  /* this rank's message to r.peer */
  uint8_t* in;                   /* where r.peer's message lands */
  struct ctrl tx[2];             /* [0] the RTS, [1] the CTS or FIN */
  struct ctrl rx[RECVS];
  enum out_state out_state;
  enum in_state in_state;
};

struct rndv {
  struct ibv_cq* cq;
  int rank;
  enum rndv_protocol protocol;
  size_t bytes, n;
  struct conn* c;
  uint8_t* data;          /* every conn's out and in, one registration */
  struct ibv_mr* data_mr; /* remote read (get) or remote write (put) into it */
  struct ibv_mr* ctrl_mr; /* the conn array itself: control messages */
  unsigned outstanding;   /* send work requests not completed yet */
};

const char* rndv_protocol_name(enum rndv_protocol p) { return p == RNDV_GET ? "get" : "put"; }

static uint32_t tag_of(uint32_t sender, uint32_t lane) { return sender << 16 | lane; }

/* Byte i of the message `from` sends `to` on `lane`: wrong placement, a wrong peer or a wrong
 * offset all show. */
static uint8_t pattern(uint32_t from, uint32_t to, uint32_t lane, size_t i) {
  return (uint8_t)(from * 151u + to * 29u + lane * 7u + (uint32_t)i * 13u + (uint32_t)(i >> 9));
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t wr_id(size_t conn, enum wr_kind k) { return (uint64_t)conn * WR_KINDS + k; }

static int post_recv(struct rndv* x, size_t i, unsigned slot) {
  struct conn* c = &x->c[i];
  struct ibv_sge sge = {(uintptr_t)&c->rx[slot], sizeof c->rx[slot], x->ctrl_mr->lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id(i, (enum wr_kind)(WR_RECV0 + slot)), .sg_list = &sge, .num_sge = 1};
  struct ibv_recv_wr* bad;
  return ibv_post_recv(c->r.qp, &wr, &bad);
}

/* Sends control message tx[which] of connection i. */
static int send_ctrl(struct rndv* x, size_t i, unsigned which) {
  struct conn* c = &x->c[i];
  struct ibv_sge sge = {(uintptr_t)&c->tx[which], sizeof c->tx[which], x->ctrl_mr->lkey};
  struct ibv_send_wr wr = {.wr_id = wr_id(i, which == 0 ? WR_RTS : WR_REPLY), .sg_list = &sge, .num_sge = 1,
                           .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
  struct ibv_send_wr* bad;
  int rc = ibv_post_send(c->r.qp, &wr, &bad);
  x->outstanding += rc == 0;
  return rc;
}

/* One-sided: RDMA READ of the peer's buffer into c->in (get), or RDMA WRITE with immediate of
 * c->out into the peer's (put). */
static int post_rdma(struct rndv* x, size_t i, uint64_t raddr, uint32_t rkey) {
  struct conn* c = &x->c[i];
  int get = x->protocol == RNDV_GET;
  struct ibv_sge sge = {(uintptr_t)(get ? c->in : c->out), (uint32_t)x->bytes, x->data_mr->lkey};
  struct ibv_send_wr wr = {.wr_id = wr_id(i, get ? WR_READ : WR_WRITE), .sg_list = &sge, .num_sge = 1,
                           .opcode = get ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE_WITH_IMM,
                           .send_flags = IBV_SEND_SIGNALED};
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (!get) wr.imm_data = htonl(tag_of((uint32_t)x->rank, c->r.lane));
  struct ibv_send_wr* bad;
  int rc = ibv_post_send(c->r.qp, &wr, &bad);
  x->outstanding += rc == 0;
  return rc;
}

static int report(const struct rndv* x, size_t i, const char* what, const char* detail) {
  const struct conn* c = &x->c[i];
  fprintf(stderr, "rank %d: rendezvous (%s) with rank %u lane %u, qpn 0x%x (%s side): %s: %s\n", x->rank,
          rndv_protocol_name(x->protocol), c->r.peer, c->r.lane, c->r.local_qpn,
          c->r.active ? "initiating" : "accepting", what, detail);
  return 1;
}

/* The peer's message arrived whole (READ completed, or the WRITE's immediate came). */
static int check_message(const struct rndv* x, size_t i) {
  const struct conn* c = &x->c[i];
  for (size_t k = 0; k < x->bytes; ++k) {
    if (c->in[k] != pattern(c->r.peer, (uint32_t)x->rank, c->r.lane, k)) {
      char at[64];
      snprintf(at, sizeof at, "byte %zu of %zu differs", k, x->bytes);
      return report(x, i, "message received", at);
    }
  }
  return 0;
}

struct rndv* rndv_create(struct ibv_pd* pd, struct ibv_cq* cq, const wireup_result_t* results, size_t n,
                         int rank, enum rndv_protocol protocol, size_t bytes) {
  struct rndv* x = calloc(1, sizeof *x);
  if (x == NULL) return NULL;
  *x = (struct rndv){.cq = cq, .rank = rank, .protocol = protocol, .bytes = bytes, .n = n};
  x->c = calloc(n > 0 ? n : 1, sizeof *x->c);
  x->data = malloc(2 * n * bytes + 1); /* + 1: never a zero-length registration */
  if (x->c == NULL || x->data == NULL) {
    fprintf(stderr, "rank %d: rendezvous: out of memory for %zu connections of %zu bytes\n", rank, n, bytes);
    rndv_destroy(x);
    return NULL;
  }
  /* A transport registers the user's buffer (through a registration cache); here one region
   * holds every connection's two messages. The peer reads from it (get) or writes into it (put). */
  int remote = protocol == RNDV_GET ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
  x->data_mr = ibv_reg_mr(pd, x->data, 2 * n * bytes + 1, IBV_ACCESS_LOCAL_WRITE | remote);
  x->ctrl_mr = ibv_reg_mr(pd, x->c, (n > 0 ? n : 1) * sizeof *x->c, IBV_ACCESS_LOCAL_WRITE);
  if (x->data_mr == NULL || x->ctrl_mr == NULL) {
    fprintf(stderr, "rank %d: rendezvous: ibv_reg_mr: %s\n", rank, strerror(errno));
    rndv_destroy(x);
    return NULL;
  }
  for (size_t i = 0; i < n; ++i) {
    struct conn* c = &x->c[i];
    c->r = results[i];
    c->out = x->data + 2 * i * bytes;
    c->in = c->out + bytes;
    for (size_t k = 0; k < bytes; ++k) c->out[k] = pattern((uint32_t)rank, c->r.peer, c->r.lane, k);
    memset(c->in, 0, bytes);
    for (unsigned s = 0; s < RECVS; ++s) {
      if (post_recv(x, i, s) != 0) {
        report(x, i, "ibv_post_recv", strerror(errno));
        rndv_destroy(x);
        return NULL;
      }
    }
  }
  return x;
}

/* A control message arrived on connection i. */
static int on_ctrl(struct rndv* x, size_t i, const struct ctrl* m, uint32_t byte_len) {
  struct conn* c = &x->c[i];
  uint32_t peer_tag = tag_of(c->r.peer, c->r.lane), my_tag = tag_of((uint32_t)x->rank, c->r.lane);
  if (byte_len != sizeof *m) return report(x, i, "control message", "wrong size");
  if (m->type == CTRL_RTS && c->in_state == IN_WAIT_RTS) {
    if (m->tag != peer_tag || m->length != x->bytes) return report(x, i, "RTS", "wrong tag or length");
    if (x->protocol == RNDV_GET) {
      c->in_state = IN_READING;
      if (post_rdma(x, i, m->addr, m->rkey) != 0) return report(x, i, "ibv_post_send (RDMA READ)", strerror(errno));
      return 0;
    }
    c->tx[1] = (struct ctrl){.type = CTRL_CTS, .tag = peer_tag, .length = x->bytes, .addr = (uintptr_t)c->in,
                             .rkey = x->data_mr->rkey};
    c->in_state = IN_WAIT_DATA;
    return send_ctrl(x, i, 1) != 0 ? report(x, i, "ibv_post_send (CTS)", strerror(errno)) : 0;
  }
  if (m->type == CTRL_CTS && x->protocol == RNDV_PUT && c->out_state == OUT_RTS_SENT) {
    if (m->tag != my_tag) return report(x, i, "CTS", "wrong tag");
    c->out_state = OUT_WRITING;
    return post_rdma(x, i, m->addr, m->rkey) != 0 ? report(x, i, "ibv_post_send (RDMA WRITE with immediate)",
                                                               strerror(errno))
                                                   : 0;
  }
  if (m->type == CTRL_FIN && x->protocol == RNDV_GET && c->out_state == OUT_RTS_SENT) {
    if (m->tag != my_tag) return report(x, i, "FIN", "wrong tag");
    c->out_state = OUT_DONE; /* the peer has the data: the buffer is free again */
    return 0;
  }
  char what[64];
  snprintf(what, sizeof what, "type %u in states out %d in %d", m->type, (int)c->out_state, (int)c->in_state);
  return report(x, i, "unexpected control message", what);
}

static int on_completion(struct rndv* x, const struct ibv_wc* wc) {
  size_t i = (size_t)(wc->wr_id / WR_KINDS);
  enum wr_kind k = (enum wr_kind)(wc->wr_id % WR_KINDS);
  if (i >= x->n) return fprintf(stderr, "rank %d: rendezvous: unknown wr_id %llu\n", x->rank,
                                (unsigned long long)wc->wr_id), 1;
  struct conn* c = &x->c[i];
  if (k >= WR_RTS) x->outstanding--;
  if (wc->status != IBV_WC_SUCCESS) {
    static const char* names[] = {"receive", "receive", "receive", "RTS", "CTS/FIN", "RDMA READ",
                                  "RDMA WRITE with immediate"};
    return report(x, i, names[k], ibv_wc_status_str(wc->status));
  }
  switch (k) {
    case WR_RTS:
    case WR_REPLY:
      return 0; /* a control message left; its answer drives the state */
    case WR_READ:
      c->in_state = IN_DONE;
      if (check_message(x, i) != 0) return 1;
      c->tx[1] = (struct ctrl){.type = CTRL_FIN, .tag = tag_of(c->r.peer, c->r.lane)};
      return send_ctrl(x, i, 1) != 0 ? report(x, i, "ibv_post_send (FIN)", strerror(errno)) : 0;
    case WR_WRITE:
      c->out_state = OUT_DONE; /* acknowledged: placed at the peer */
      return 0;
    default: /* a receive: a control message, or the WRITE's immediate (put) */
      if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        if (c->in_state != IN_WAIT_DATA || ntohl(wc->imm_data) != tag_of(c->r.peer, c->r.lane) ||
            wc->byte_len != x->bytes)
          return report(x, i, "RDMA WRITE with immediate", "unexpected, or wrong tag or length");
        c->in_state = IN_DONE;
        return check_message(x, i);
      }
      return on_ctrl(x, i, &c->rx[k - WR_RECV0], wc->byte_len);
  }
}

int rndv_run(struct rndv* x, double timeout_ms) {
  int bad = 0;
  for (size_t i = 0; i < x->n; ++i) {
    struct conn* c = &x->c[i];
    c->tx[0] = (struct ctrl){.type = CTRL_RTS, .tag = tag_of((uint32_t)x->rank, c->r.lane), .length = x->bytes};
    if (x->protocol == RNDV_GET) {
      c->tx[0].addr = (uintptr_t)c->out;
      c->tx[0].rkey = x->data_mr->rkey;
    }
    if (send_ctrl(x, i, 0) != 0) bad += report(x, i, "ibv_post_send (RTS)", strerror(errno));
    else c->out_state = OUT_RTS_SENT;
  }
  size_t done = 0;
  double deadline = now_ms() + timeout_ms;
  while ((done < 2 * x->n || x->outstanding > 0) && now_ms() < deadline && bad == 0) {
    struct ibv_wc wc[16];
    int got = ibv_poll_cq(x->cq, 16, wc);
    if (got < 0) return bad + 1;
    for (int k = 0; k < got; ++k) bad += on_completion(x, &wc[k]);
    done = 0;
    for (size_t i = 0; i < x->n; ++i) done += (x->c[i].out_state == OUT_DONE) + (x->c[i].in_state == IN_DONE);
  }
  if (bad == 0 && (done < 2 * x->n || x->outstanding > 0)) {
    fprintf(stderr, "rank %d: rendezvous (%s): %zu of %zu messages done, %u work requests outstanding after %.0f ms\n",
            x->rank, rndv_protocol_name(x->protocol), done, 2 * x->n, x->outstanding, timeout_ms);
    ++bad;
  }
  return bad;
}

void rndv_roles(const struct rndv* x, unsigned* initiated, unsigned* accepted) {
  *initiated = *accepted = 0;
  for (size_t i = 0; i < x->n; ++i) ++*(x->c[i].r.active ? initiated : accepted);
}

void rndv_destroy(struct rndv* x) {
  if (x == NULL) return;
  if (x->data_mr) ibv_dereg_mr(x->data_mr);
  if (x->ctrl_mr) ibv_dereg_mr(x->ctrl_mr);
  free(x->data);
  free(x->c);
  free(x);
}
