// The device watch's decisions by themselves: what each async event asks of the engine, and
// the device lost once.
#include "wireup/device_watch.h"

#include <gtest/gtest.h>

namespace wireup {
namespace {

using prov::DeviceEventType;

TEST(DeviceWatch, CommEstIsAnsweredOnlyOnOurQps) {
  EXPECT_EQ(classify(DeviceEventType::comm_est, true), DeviceAction::tell_cm);
  EXPECT_EQ(classify(DeviceEventType::comm_est, false), DeviceAction::not_ours);
}

TEST(DeviceWatch, AFatalDeviceIsLostWhoeverTheEventNames) {
  EXPECT_EQ(classify(DeviceEventType::device_fatal, false), DeviceAction::lose_device);
  EXPECT_EQ(classify(DeviceEventType::device_fatal, true), DeviceAction::lose_device);
}

TEST(DeviceWatch, PortDownAndUpAskForTheRailOtherPortChangesAreNoted) {
  // PORT_ERR / PORT_ACTIVE move the port's rail (RailRoutes::port_down / port_up decide how);
  // whatever the event names, it is about the port, never a connection.
  EXPECT_EQ(classify(DeviceEventType::port_err, false), DeviceAction::port_down);
  EXPECT_EQ(classify(DeviceEventType::port_active, false), DeviceAction::port_up);
  for (DeviceEventType t : {DeviceEventType::lid_change, DeviceEventType::gid_change, DeviceEventType::pkey_change,
                            DeviceEventType::sm_change, DeviceEventType::client_reregister})
    EXPECT_EQ(classify(t, false), DeviceAction::note_port) << prov::to_string(t);
}

TEST(DeviceWatch, APortEventNamesItsRailsPort) {
  EXPECT_TRUE(names_port(1, 1));
  EXPECT_FALSE(names_port(2, 1)) << "port 2 of a two-port HCA is another rail's";
  EXPECT_TRUE(names_port(0, 1)) << "an event that names no port is the device's";
  EXPECT_TRUE(names_port(2, 0)) << "a rail whose port is unknown takes its device's events";
}

TEST(DeviceWatch, ErrorsOnObjectsAreOursOnlyWhenTheQpIs) {
  for (DeviceEventType t : {DeviceEventType::qp_fatal, DeviceEventType::qp_req_err, DeviceEventType::qp_access_err,
                            DeviceEventType::path_mig_err, DeviceEventType::qp_last_wqe_reached}) {
    EXPECT_EQ(classify(t, true), DeviceAction::warn_connection) << prov::to_string(t);
    EXPECT_EQ(classify(t, false), DeviceAction::not_ours) << prov::to_string(t);
  }
  // CQ, SRQ and WQ events never name a QP: the transport's, reported to it.
  EXPECT_EQ(classify(DeviceEventType::cq_err, false), DeviceAction::not_ours);
  EXPECT_EQ(classify(DeviceEventType::srq_limit_reached, false), DeviceAction::not_ours);
}

TEST(DeviceWatch, TheDeviceIsLostOnce) {
  DeviceWatch w;
  EXPECT_FALSE(w.lost());
  EXPECT_TRUE(w.lose());
  EXPECT_TRUE(w.lost());
  EXPECT_FALSE(w.lose());  // the second removal event of the same device changes nothing
  EXPECT_TRUE(w.devices().empty());
}

}  // namespace
}  // namespace wireup
