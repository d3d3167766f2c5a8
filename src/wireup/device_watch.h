// The devices an engine watches (one subscription per distinct device of its rails, however
// many rails share it), what each of their async events asks of the engine, and whether the
// engine lost its device as a whole.
//
// The engine keeps the actions (answering COMM_EST, losing a rail or the device: they touch
// the pairs); this part decides which one an event calls for, so the decision is one table
// that can be read and tested by itself.
#pragma once

#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "provider/provider.h"

namespace wireup {

// What a device event asks of the engine.
enum class DeviceAction : uint8_t {
  tell_cm,          // COMM_EST on a QP of ours still accepting: rdma_notify (engine_device.cc)
  lose_device,      // DEVICE_FATAL: the device (or, with others left, its rail) is gone
  port_down,        // PORT_ERR: the port's rail takes no new attempt while others are up
  port_up,          // PORT_ACTIVE: the port's rail, if it was down, takes new attempts again
  note_port,        // LID, GID, P_Key, SM changes: logged and reported, nothing to do
  warn_connection,  // an error on a QP (or CQ, SRQ, WQ) of one of our connections: reported
  not_ours          // about an object that is not the engine's: reported for the transport
};
const char* to_string(DeviceAction a);
// `ours`: the event names a QP of one of the engine's pairs.
DeviceAction classify(prov::DeviceEventType t, bool ours);

// A port event of one of the engine's rails: whether it names the rail's port. An event with
// port 0 names none in particular (a transport's copy that lost it): taken as the device's.
inline bool names_port(uint8_t event_port, uint8_t rail_port) {
  return event_port == 0 || rail_port == 0 || event_port == rail_port;
}

class DeviceWatch {
 public:
  // Subscribes `sink` to `d`'s async events unless it is subscribed already (two rails on
  // ports of one HCA share its events).
  Status watch(prov::Device& d, prov::DeviceEventSink& sink, prov::AsyncOwner owner);
  std::vector<prov::Device*> devices() const;
  // Reads the devices whose events are worth a read at `now` (on rdma each read is a system
  // call that nearly always finds nothing, so the device says when: async_worth_reading).
  // Returns the events handed to their sinks.
  int dispatch(Nanos now);

  // Whether the engine lost its device as a whole (every rail): from then on it accepts and
  // starts nothing. Returns false when it was lost already.
  bool lose() { return !std::exchange(lost_, true); }
  bool lost() const { return lost_; }

  void clear() { subs_.clear(); }

 private:
  // Events read per device per dispatch: a burst (every QP of a removed device) is spread
  // over several progress() calls instead of stalling one.
  static constexpr int kPerDispatch = 64;
  std::vector<prov::DeviceSubscription> subs_;
  bool lost_ = false;
};

}  // namespace wireup
