// The device's async events on rxe through the C API, in both modes of device.async_events.
// Two handles of one process on one context (both ranks), every QP receiving through one SRQ
// of the transport's, armed with a limit: two SENDs make rxe raise SRQ_LIMIT_REACHED
// (rxe_resp.c get_srq_wqe), an event whose object only the transport can name.
//  - transport: the library never touches the context's async fd (its flags stay as the
//    transport set them: blocking) and reads nothing: the transport's own poll() +
//    ibv_get_async_event() finds the event after wireup progressed past it, hands it over
//    (wireup_context_async_event), acks it, and both handles report it, naming the SRQ.
//  - library: the library makes the fd non-blocking, reads the event itself, and reports it
//    naming the SRQ; a hand-over is refused.
// COMM_EST is sim only: rxe never raises it (tests/vm/device/README.md); tests/capi's
// CapiSimAsync.* cover its hand-over.
#include <fcntl.h>

#include <thread>

#include "tests/capi/capi_vm_util.h"

namespace {

using namespace capi_test;
using namespace std::chrono_literals;

constexpr uint64_t kKey = 0x5eed0fc0ffee0002ULL;

struct Seen {
  int type;
  wireup_device_object_t object;
  void* handle;
};

void on_device_event(void* arg, const wireup_device_event_t* ev) {
  static_cast<std::vector<Seen>*>(arg)->push_back(Seen{ev->type, ev->object, ev->handle});
}

int fd_flags(ibv_context* c) { return fcntl(c->async_fd, F_GETFL); }

// Progresses both handles for `d` (or until `stop`), sleeping 1 ms between rounds.
template <class Stop>
bool progress_for(const std::vector<wireup_t*>& ws, std::chrono::milliseconds d, Stop stop) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    for (wireup_t* w : ws) EXPECT_EQ(wireup_progress(w, nullptr), WIREUP_OK) << wireup_last_error(w);
    if (stop()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

size_t srq_events(const std::vector<Seen>& v, ibv_srq* srq) {
  size_t n = 0;
  for (const Seen& s : v)
    n += s.type == IBV_EVENT_SRQ_LIMIT_REACHED && s.object == WIREUP_DEVICE_OBJECT_SRQ && s.handle == srq;
  return n;
}

// Wires two handles up over the transport's SRQ, arms its limit and sends two messages from
// rank 0's QP to rank 1's: rxe raises SRQ_LIMIT_REACHED once the second is received.
void connect_and_drain_srq(wireup_context_t* ctx, Transport& t, std::vector<wireup_t*>& ws,
                           std::vector<std::vector<Seen>>& seen) {
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 1;
  t.srq = ibv_create_srq(t.pd, &sa);
  ASSERT_NE(t.srq, nullptr) << "ibv_create_srq: errno " << errno;
  seen.resize(2);
  for (uint32_t r = 0; r < 2; ++r) {
    const wireup_params_t p = params_for(r, 2, 1, kKey, &t);
    wireup_t* w = nullptr;
    ASSERT_EQ(wireup_create(ctx, &p, &w), WIREUP_OK) << wireup_last_error(nullptr);
    ws.push_back(w);
    ASSERT_EQ(wireup_on_device_event(w, on_device_event, &seen[r]), WIREUP_OK);
  }
  exchange_and_start(ws);
  ASSERT_TRUE(drive(ws, 60s));
  ASSERT_EQ(wireup_result_count(ws[0]), 1u);
  wireup_result_t r0;
  WIREUP_STRUCT_INIT(&r0);
  ASSERT_EQ(wireup_result_get(ws[0], 0, &r0), WIREUP_OK);

  static char buf[16 * 64];
  ibv_mr* mr = ibv_reg_mr(t.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  for (int i = 0; i < 8; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[(8 + i) * 64]), 64, mr->lkey};
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = 8 + i, wr.sg_list = &sge, wr.num_sge = 1;
    ASSERT_EQ(ibv_post_srq_recv(t.srq, &wr, &bad), 0);
  }
  ibv_srq_attr lim{};
  lim.srq_limit = 7;  // 8 posted: the event comes when fewer than 7 are left
  ASSERT_EQ(ibv_modify_srq(t.srq, &lim, IBV_SRQ_LIMIT), 0) << "errno " << errno;
  for (int i = 0; i < 2; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[i * 64]), 16, mr->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = i, wr.sg_list = &sge, wr.num_sge = 1, wr.opcode = IBV_WR_SEND, wr.send_flags = IBV_SEND_SIGNALED;
    ASSERT_EQ(ibv_post_send(r0.qp, &wr, &bad), 0);
  }
  int done = 0;
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (done < 4 && std::chrono::steady_clock::now() < until) {
    ibv_wc wc[4];
    const int n = ibv_poll_cq(t.cq, 4, wc);
    for (int k = 0; k < n; ++k, ++done) ASSERT_EQ(wc[k].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc[k].status);
    if (n == 0) std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(done, 4) << "2 SENDs and their 2 receives through the SRQ";
  ibv_dereg_mr(mr);
}

TEST(CapiVm, AsyncEventsOwnedByTheTransportAreHandedOver) {
  CAPI_REQUIRE_CONTEXT(ctx, "device.async_events=transport", "engine.rtu_linger_ms=0");
  ibv_context* ic = wireup_context_ibv_context(ctx);
  // The transport's choice for its own reader: a blocking fd (its poll() says when to read).
  // librdmacm shares one ibv_context per device within a process, so an earlier context in
  // library mode may have left O_NONBLOCK: the transport sets what it wants, and wireup must
  // leave it so.
  const int was = fd_flags(ic);
  ASSERT_GE(was, 0);
  ASSERT_EQ(fcntl(ic->async_fd, F_SETFL, was & ~O_NONBLOCK), 0);
  const int opened = fd_flags(ic);
  ASSERT_EQ(opened & O_NONBLOCK, 0);
  {
    Transport t(ic);
    std::vector<wireup_t*> ws;
    std::vector<std::vector<Seen>> seen;
    ASSERT_NO_FATAL_FAILURE(connect_and_drain_srq(ctx, t, ws, seen));
    // wireup goes on for a while with the event pending: it must leave it to the transport.
    progress_for(ws, 300ms, [] { return false; });
    EXPECT_EQ(fd_flags(ic), opened) << "wireup changed the flags of the transport's async fd";
    pollfd p{ic->async_fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10000), 1) << "no async event for the transport: the library took it, or rxe raised none";
    ibv_async_event ev;
    ASSERT_EQ(ibv_get_async_event(ic, &ev), 0);
    EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED) << ibv_event_type_str(ev.event_type);
    EXPECT_EQ(ev.element.srq, t.srq);
    ASSERT_EQ(wireup_context_async_event(ctx, &ev), WIREUP_OK) << wireup_last_error(nullptr);
    ibv_ack_async_event(&ev);  // the transport's to ack, once handed over
    EXPECT_TRUE(progress_for(ws, 5000ms, [&] { return srq_events(seen[0], t.srq) + srq_events(seen[1], t.srq) == 2; }))
        << "each handle reports the handed-over SRQ event, naming the transport's SRQ";
    for (wireup_t* w : ws) {
      wireup_counters_t c;
      WIREUP_STRUCT_INIT(&c);
      ASSERT_EQ(wireup_counters_get(w, &c), WIREUP_OK);
      EXPECT_EQ(c.device_events, 1u);
    }
    std::printf("[async] transport mode: fd flags 0x%x before and after; SRQ_LIMIT_REACHED read by the transport, "
                "handed over, reported by both handles\n",
                opened);
    for (wireup_t* w : ws) wireup_destroy(w);
    EXPECT_EQ(fd_flags(ic), opened);
  }
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK) << wireup_context_last_error(ctx);
}

TEST(CapiVm, AsyncEventsOwnedByTheLibraryNameTheirObject) {
  CAPI_REQUIRE_CONTEXT(ctx, "engine.rtu_linger_ms=0");
  ibv_context* ic = wireup_context_ibv_context(ctx);
  {
    Transport t(ic);
    std::vector<wireup_t*> ws;
    std::vector<std::vector<Seen>> seen;
    ASSERT_NO_FATAL_FAILURE(connect_and_drain_srq(ctx, t, ws, seen));
    EXPECT_NE(fd_flags(ic) & O_NONBLOCK, 0) << "library mode reads the fd without blocking";
    EXPECT_TRUE(progress_for(ws, 5000ms, [&] { return srq_events(seen[0], t.srq) + srq_events(seen[1], t.srq) == 2; }))
        << "the library reads SRQ_LIMIT_REACHED and reports it to each handle, naming the transport's SRQ";
    for (const auto& s : seen)
      for (const Seen& e : s)
        std::printf("[async] library mode: event %d object %d handle %p (srq %p)\n", e.type, e.object, e.handle,
                    static_cast<void*>(t.srq));
    ibv_async_event ev{};
    ev.event_type = IBV_EVENT_PORT_ACTIVE;
    ev.element.port_num = 1;
    EXPECT_EQ(wireup_context_async_event(ctx, &ev), WIREUP_ERR_INVALID_STATE);
    for (wireup_t* w : ws) wireup_destroy(w);
  }
  EXPECT_EQ(wireup_context_destroy(ctx), WIREUP_OK) << wireup_context_last_error(ctx);
}

}  // namespace
