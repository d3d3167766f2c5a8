#include "tests/conformance/harness.h"

#include <cstdlib>
#include <cstring>
#include <thread>

namespace wireup::conf {

using prov::CmEventType;
using prov::QpState;

bool in_vm() {
  const char* v = std::getenv("WIREUP_IN_VM");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

Result<prov::CmEvent> next_event(prov::Provider& p, prov::EventChannel& ch, Nanos timeout) {
  const Nanos deadline = p.clock().now() + timeout;
  for (;;) {
    auto ev = ch.get_event();
    if (ev || ev.code() != ErrorCode::would_block) return ev;
    Nanos now = p.clock().now();
    if (now >= deadline)
      return Error::make(ErrorCode::timed_out, "next_event",
                         "no CM event within " +
                             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                             " ms");
    prov::EventChannel* chans[] = {&ch};
    if (auto s = p.wait(chans, deadline - now); !s) return s.error();
  }
}

prov::CmEvent expect_event(prov::Provider& p, prov::EventChannel& ch, CmEventType want, Nanos timeout) {
  auto ev = next_event(p, ch, timeout);
  if (!ev) {
    ADD_FAILURE() << "waiting for " << prov::to_string(want) << ": " << ev.error().message();
    return prov::CmEvent();
  }
  EXPECT_EQ(prov::to_string(ev->type), std::string(prov::to_string(want)))
      << "got " << ev->describe();
  return std::move(ev).value();
}

void expect_no_event(prov::Provider& p, prov::EventChannel& ch, Nanos window) {
  auto ev = next_event(p, ch, window);
  if (ev) ADD_FAILURE() << "unexpected event " << ev->describe();
  else EXPECT_EQ(ev.code(), ErrorCode::timed_out) << ev.error().message();
}

Result<AppQp> AppQp::create(prov::Device& dev, bool with_srq) {
  AppQp a;
  auto pd = dev.alloc_pd();
  if (!pd) return pd.error();
  a.pd = std::move(pd).value();
  auto cq = dev.create_cq(64, false);
  if (!cq) return cq.error();
  a.cq = std::move(cq).value();
  if (with_srq) {
    prov::SrqInitAttr sa;
    sa.max_wr = 16;
    auto srq = a.pd->create_srq(sa);
    if (!srq) return srq.error();
    a.srq = std::move(srq).value();
  }
  prov::QpInitAttr init;
  init.srq = a.srq.get();
  init.send_cq = a.cq.get();
  init.recv_cq = a.cq.get();
  init.caps.max_send_wr = 16;
  init.caps.max_recv_wr = 16;
  auto qp = a.pd->create_qp(init);
  if (!qp) return qp.error();
  a.qp = std::move(qp).value();
  auto mr = a.pd->reg_mr(a.buf.data(), a.buf.size(), prov::access::local_write | prov::access::remote_all);
  if (!mr) return mr.error();
  a.mr = std::move(mr).value();
  return a;
}

Status AppQp::to_state(prov::CmId& id, QpState state) {
  auto attr = id.init_qp_attr(state);
  if (!attr) return attr.error();
  return qp->modify(attr->attr, attr->mask);
}

Status AppQp::post_recv() {
  prov::Sge sge{reinterpret_cast<uint64_t>(buf.data() + 128), 128, mr->lkey()};
  return srq ? srq->post_recv(1, sge) : qp->post_recv(1, sge);
}

Status AppQp::send(const std::string& text) {
  if (text.size() >= 128)
    return Error::make(ErrorCode::invalid_argument, "AppQp::send", "message over 127 bytes");
  std::memcpy(buf.data(), text.data(), text.size());
  prov::Sge sge{reinterpret_cast<uint64_t>(buf.data()), static_cast<uint32_t>(text.size()), mr->lkey()};
  return qp->post_send(2, sge, true);
}

Result<std::string> AppQp::wait_completion(int opcode, std::chrono::milliseconds bound) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  prov::WorkCompletion wc[4];
  while (std::chrono::steady_clock::now() < deadline) {
    auto n = cq->poll(wc);
    if (!n) return n.error();
    for (int i = 0; i < *n; ++i) {
      if (wc[i].status != 0)
        return Error::make(ErrorCode::system_error, "ibv_poll_cq",
                           "completion status " + std::to_string(wc[i].status))
            .with_qpn(wc[i].qp_num);
      if (wc[i].opcode == opcode) {
        if (opcode == prov::wc_opcode_recv)
          return std::string(reinterpret_cast<const char*>(buf.data() + 128), wc[i].byte_len);
        return std::string();
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return Error::make(ErrorCode::timed_out, "wait_completion",
                     "no completion of opcode " + std::to_string(opcode)).with_qpn(qp->qpn());
}

Result<prov::WorkCompletion> AppQp::next_completion(std::chrono::milliseconds bound) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  prov::WorkCompletion wc[1];
  while (std::chrono::steady_clock::now() < deadline) {
    auto n = cq->poll(wc);
    if (!n) return n.error();
    if (*n == 1) return wc[0];
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return Error::make(ErrorCode::timed_out, "next_completion", "no completion").with_qpn(qp->qpn());
}

Result<Listener> Listener::create(TestFabric& f, int backlog) {
  Listener l;
  prov::Provider& p = f.provider(0);
  auto ch = p.create_channel();
  if (!ch) return ch.error();
  l.ch = std::move(ch).value();
  auto id = p.create_id(*l.ch, prov::PortSpace::tcp, nullptr);
  if (!id) return id.error();
  l.id = std::move(id).value();
  WIREUP_TRY(l.id->bind_addr(f.address(0)));
  WIREUP_TRY(l.id->listen(backlog));
  l.addr = l.id->local_addr();
  return l;
}

Result<Active> Active::resolve(TestFabric& f, const prov::SockAddr& dst) {
  Active a;
  prov::Provider& p = f.provider(1);
  auto ch = p.create_channel();
  if (!ch) return ch.error();
  a.ch = std::move(ch).value();
  auto id = p.create_id(*a.ch, prov::PortSpace::tcp, nullptr);
  if (!id) return id.error();
  a.id = std::move(id).value();
  prov::SockAddr src = f.address(1);
  WIREUP_TRY(a.id->resolve_addr(&src, dst, 2000));
  auto ev = next_event(p, *a.ch);
  if (!ev) return ev.error();
  if (ev->type != CmEventType::addr_resolved)
    return Error::make(ErrorCode::address_error, "rdma_resolve_addr", "got " + ev->describe());
  ev->ack();
  WIREUP_TRY(a.id->resolve_route(2000));
  auto ev2 = next_event(p, *a.ch);
  if (!ev2) return ev2.error();
  if (ev2->type != CmEventType::route_resolved)
    return Error::make(ErrorCode::route_error, "rdma_resolve_route", "got " + ev2->describe());
  return a;
}

}  // namespace wireup::conf
