#include "provider/sim/mesh.h"

#include <cstring>

namespace wireup::prov::sim {

struct SimMesh::Conn {
  uint32_t index = 0;
  uint32_t from = 0;
  uint32_t to = 0;
  // Ids before QPs: members die in reverse order, so the QPs go first.
  std::unique_ptr<CmId> aid;
  std::unique_ptr<CmId> pid;
  std::unique_ptr<Qp> aqp;
  std::unique_ptr<Qp> pqp;
  bool active_done = false;
  bool passive_done = false;
  bool settled = false;
};

struct SimMesh::NodeState {
  struct Verbs {
    Device* dev = nullptr;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> cq;
  };
  std::vector<Verbs> verbs;  // declared first: outlives channel and listener
  std::unique_ptr<EventChannel> ch;
  std::unique_ptr<CmId> listener;
};

namespace {
Route conn_route(uint32_t index) {
  Route r;
  r.tag = uint64_t{index} + 1;
  return r;
}
}  // namespace

SimMesh::SimMesh(SimFabric& fab, MeshOptions o) : fab_(fab), opt_(o) {}

SimMesh::~SimMesh() {
  conns_.clear();  // QPs, then ids
  nodes_.clear();  // listener, channel, CQs, PDs
}

Status SimMesh::listen_all() {
  for (uint32_t n = static_cast<uint32_t>(nodes_.size()); n < fab_.node_count(); ++n) {
    auto st = std::make_unique<NodeState>();
    Provider& p = fab_.provider(n);
    auto ch = p.create_channel();
    if (!ch) return ch.error();
    st->ch = std::move(ch).value();
    auto id = p.create_id(*st->ch, PortSpace::tcp, nullptr);
    if (!id) return id.error();
    st->listener = std::move(id).value();
    WIREUP_TRY(st->listener->bind_addr(SockAddr::ipv4(0, opt_.port)));
    WIREUP_TRY(st->listener->listen(opt_.backlog));
    nodes_.push_back(std::move(st));
  }
  return Status::ok();
}

Status SimMesh::connect(uint32_t from, uint32_t to) {
  if (from >= nodes_.size() || to >= nodes_.size())
    return Error::make(ErrorCode::invalid_argument, "SimMesh::connect", "listen_all() first, on every node");
  auto c = std::make_unique<Conn>();
  c->index = static_cast<uint32_t>(conns_.size());
  c->from = from;
  c->to = to;
  // Tag = index + 1: the mesh drives its own loop (no sink), and tag 0 is the listener.
  auto id = fab_.provider(from).create_id(*nodes_[from]->ch, PortSpace::tcp, conn_route(c->index));
  if (!id) return id.error();
  c->aid = std::move(id).value();
  SockAddr src = fab_.address(from);
  WIREUP_TRY(c->aid->resolve_addr(&src, fab_.address(to, 0, opt_.port), opt_.resolve_timeout_ms));
  conns_.push_back(std::move(c));
  ++report_.planned;
  return Status::ok();
}

MeshReport SimMesh::run(Nanos until) {
  while (report_.established + report_.failed < report_.planned) {
    if (fab_.idle() || fab_.next_time() > until) break;
    fab_.step();
    for (const SimFabric::Ready& r : fab_.take_ready()) {
      for (;;) {
        auto ev = r.channel->get_event();
        if (!ev) break;
        handle(r.node, *ev);
        ev->ack();
      }
    }
  }
  return report_;
}

Status SimMesh::make_qp(uint32_t node, CmId& id, std::unique_ptr<Qp>* out) {
  Device* d = id.device();
  if (d == nullptr) return Error::make(ErrorCode::no_device, "SimMesh", "id without a device");
  NodeState& st = *nodes_[node];
  NodeState::Verbs* v = nullptr;
  for (auto& x : st.verbs)
    if (x.dev == d) v = &x;
  if (v == nullptr) {
    NodeState::Verbs nv;
    nv.dev = d;
    auto pd = d->alloc_pd();
    if (!pd) return pd.error();
    nv.pd = std::move(pd).value();
    auto cq = d->create_cq(256, false);
    if (!cq) return cq.error();
    nv.cq = std::move(cq).value();
    st.verbs.push_back(std::move(nv));
    v = &st.verbs.back();
  }
  QpInitAttr init;
  init.send_cq = v->cq.get();
  init.recv_cq = v->cq.get();
  init.caps.max_send_wr = 4;
  init.caps.max_recv_wr = 4;
  auto qp = v->pd->create_qp(init);
  if (!qp) return qp.error();
  *out = std::move(qp).value();
  return Status::ok();
}

Status SimMesh::to_state(Qp& qp, CmId& id, QpState s) {
  auto a = id.init_qp_attr(s);
  if (!a) return a.error();
  return qp.modify(a->attr, a->mask);
}

void SimMesh::handle(uint32_t node, CmEvent& ev) {
  ++report_.cm_events;
  if (ev.type == CmEventType::connect_request) {
    on_request(node, ev);
    return;
  }
  const uint64_t tag = ev.id->route().tag;
  if (tag == 0 || tag > conns_.size()) return;  // a listener's own event
  Conn* c = conns_[tag - 1].get();
  if (ev.id == c->aid.get()) on_active(*c, ev);
  else on_passive(*c, ev);
}

void SimMesh::fail(Conn& c, const CmEvent& ev) {
  if (c.settled) return;
  c.settled = true;
  ++report_.failed;
  ++report_.failures[std::string(to_string(ev.type)) + " " + std::to_string(ev.status)];
}

void SimMesh::on_active(Conn& c, CmEvent& ev) {
  auto broken = [&](const Status& s) {
    if (s) return false;
    if (!c.settled) {
      c.settled = true;
      ++report_.failed;
      ++report_.failures[s.error().call + " failed"];
    }
    return true;
  };
  switch (ev.type) {
    case CmEventType::addr_resolved:
      broken(c.aid->resolve_route(opt_.resolve_timeout_ms));
      return;
    case CmEventType::route_resolved: {
      ConnParam p;
      if (opt_.create_qps) {
        if (broken(make_qp(c.from, *c.aid, &c.aqp)) || broken(to_state(*c.aqp, *c.aid, QpState::init)))
          return;
        p.qp_num = c.aqp->qpn();
      }
      p.private_data.resize(sizeof c.index);
      std::memcpy(p.private_data.data(), &c.index, sizeof c.index);
      broken(c.aid->connect(p));
      return;
    }
    case CmEventType::connect_response:
      if (c.aqp && (broken(to_state(*c.aqp, *c.aid, QpState::rtr)) ||
                    broken(to_state(*c.aqp, *c.aid, QpState::rts))))
        return;
      if (broken(c.aid->establish())) return;
      c.active_done = true;
      break;
    case CmEventType::disconnected:
    case CmEventType::timewait_exit:
    case CmEventType::established:
      return;
    default:
      fail(c, ev);
      return;
  }
  if (c.active_done && c.passive_done && !c.settled) {
    c.settled = true;
    ++report_.established;
    report_.last_established = fab_.now();
  }
}

void SimMesh::on_request(uint32_t node, CmEvent& ev) {
  std::unique_ptr<CmId> id = std::move(ev.new_id);
  uint32_t index = UINT32_MAX;
  if (ev.private_data.size() >= sizeof index) std::memcpy(&index, ev.private_data.data(), sizeof index);
  if (index >= conns_.size() || conns_[index]->pid || conns_[index]->to != node) {
    ++report_.failures["unexpected CONNECT_REQUEST"];
    (void)id->reject({});
    return;
  }
  Conn& c = *conns_[index];
  c.pid = std::move(id);
  c.pid->set_route(conn_route(c.index));
  ConnParam p;
  if (opt_.create_qps) {
    Status s = make_qp(node, *c.pid, &c.pqp);
    if (s) s = to_state(*c.pqp, *c.pid, QpState::init);
    if (s) s = to_state(*c.pqp, *c.pid, QpState::rtr);
    if (s) s = to_state(*c.pqp, *c.pid, QpState::rts);
    if (!s) {
      ++report_.failures[s.error().call + " failed (passive)"];
      (void)c.pid->reject({});
      return;
    }
    p.qp_num = c.pqp->qpn();
  }
  if (Status s = c.pid->accept(p); !s) ++report_.failures["rdma_accept failed"];
}

void SimMesh::on_passive(Conn& c, CmEvent& ev) {
  switch (ev.type) {
    case CmEventType::established:
      c.passive_done = true;
      break;
    case CmEventType::disconnected:
    case CmEventType::timewait_exit:
      return;
    default:
      fail(c, ev);
      return;
  }
  if (c.active_done && c.passive_done && !c.settled) {
    c.settled = true;
    ++report_.established;
    report_.last_established = fab_.now();
  }
}

}  // namespace wireup::prov::sim
