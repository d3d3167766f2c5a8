#include <algorithm>
#include <cstdio>

#include "provider/provider.h"

namespace wireup::prov {

std::string CmEvent::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s status %d qp_num 0x%x private_data %zu bytes", to_string(type),
                status, qp_num, private_data.size());
  return buf;
}

}  // namespace wireup::prov

// --- channel accounting and typed dispatch ---------------------------------------------------
#include "common/log.h"

namespace wireup::prov {
Status CmId::migrate(EventChannel& to, Route r) {
  if (Status s = migrate_native(to); !s) return s;
  route_ = r;
  return Status::ok();
}

int dispatch(EventChannel& ch, int max, size_t* unrouted) {
  int n = 0;
  if (!ch.maybe_pending()) return 0;  // an idle progress() builds no would_block result
  for (; n < max; ++n) {
    auto ev = ch.get_event();
    if (!ev) {
      if (ev.code() != ErrorCode::would_block) WIREUP_LOG(error, "CM event channel: %s", ev.error().message().c_str());
      break;
    }
    const CmId* target = ev->type == CmEventType::connect_request ? ev->listen_id : ev->id;
    CmEventSink* sink = target != nullptr ? target->route().sink : nullptr;
    if (sink == nullptr) {
      if (unrouted != nullptr) ++*unrouted;
      WIREUP_LOG(debug, "CM event without a sink: %s", ev->describe().c_str());
      continue;  // acked (and a new id destroyed) as ev goes out of scope
    }
    sink->on_cm_event(*ev);
  }
  return n;
}

}  // namespace wireup::prov
