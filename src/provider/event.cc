#include <cstdio>

#include "provider/provider.h"

namespace wireup::prov {

CmEvent& CmEvent::operator=(CmEvent&& o) noexcept {
  if (this != &o) {
    ack();  // this event's old contents are done with
    type = o.type;
    status = o.status;
    id = o.id;
    listen_id = o.listen_id;
    private_data = std::move(o.private_data);
    qp_num = o.qp_num;
    responder_resources = o.responder_resources;
    initiator_depth = o.initiator_depth;
    srq = o.srq;
    new_id = std::move(o.new_id);
    ack_ = std::move(o.ack_);
  }
  return *this;
}

void CmEvent::ack() {
  if (ack_) {
    auto a = std::move(ack_);
    a->ack();
  }
}

std::string CmEvent::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s status %d qp_num 0x%x private_data %zu bytes", to_string(type),
                status, qp_num, private_data.size());
  return buf;
}

}  // namespace wireup::prov
