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

TEST(DeviceWatch, PortChangesAreNotedNotActedOn) {
  // A port going down does not take the rail down: its connections report their own errors.
  for (DeviceEventType t : {DeviceEventType::port_active, DeviceEventType::port_err, DeviceEventType::lid_change,
                            DeviceEventType::gid_change, DeviceEventType::pkey_change, DeviceEventType::sm_change,
                            DeviceEventType::client_reregister})
    EXPECT_EQ(classify(t, false), DeviceAction::note_port) << prov::to_string(t);
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
