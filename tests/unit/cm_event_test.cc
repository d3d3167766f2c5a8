// CmEvent: one ack per event, whatever replaces or moves it, and every field carried by a move.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "provider/provider.h"

namespace wireup::prov {
namespace {

// Records each ack by name, so a test sees which event was acked and in what order.
class LoggedAck final : public EventAck {
 public:
  LoggedAck(std::vector<std::string>* log, std::string name) : log_(log), name_(std::move(name)) {}
  void ack() override { log_->push_back(name_); }

 private:
  std::vector<std::string>* log_;
  std::string name_;
};

CmEvent event(std::vector<std::string>* log, const std::string& name, int status) {
  CmEvent e;
  e.type = CmEventType::connect_request;
  e.status = status;
  e.private_data = {1, 2, 3};
  e.qp_num = 0x1234;
  e.responder_resources = 7;
  e.initiator_depth = 5;
  e.srq = 1;
  e.set_ack(std::make_unique<LoggedAck>(log, name));
  return e;
}

TEST(CmEvent, MoveCarriesEveryFieldAndTheAck) {
  std::vector<std::string> log;
  CmEvent a = event(&log, "a", -3);
  CmEvent b(std::move(a));
  EXPECT_TRUE(log.empty()) << "a move is not an ack";
  EXPECT_EQ(b.type, CmEventType::connect_request);
  EXPECT_EQ(b.status, -3);
  EXPECT_EQ(b.private_data, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(b.qp_num, 0x1234u);
  EXPECT_EQ(b.responder_resources, 7);
  EXPECT_EQ(b.initiator_depth, 5);
  EXPECT_EQ(b.srq, 1);
  EXPECT_FALSE(b.acked());
}

TEST(CmEvent, ReplacingAnEventAcksTheOldOneOnce) {
  std::vector<std::string> log;
  {
    CmEvent held = event(&log, "old", 0);
    held = event(&log, "new", -110);
    EXPECT_EQ(log, (std::vector<std::string>{"old"}));
    EXPECT_EQ(held.status, -110);
    held.ack();
    held.ack();
    EXPECT_EQ(log, (std::vector<std::string>{"old", "new"}));
    EXPECT_TRUE(held.acked());
  }
  EXPECT_EQ(log, (std::vector<std::string>{"old", "new"})) << "the destructor acks nothing twice";
}

TEST(CmEvent, AnEventNeverAckedIsAckedWhenItGoes) {
  std::vector<std::string> log;
  { CmEvent e = event(&log, "dropped", 0); }
  EXPECT_EQ(log, (std::vector<std::string>{"dropped"}));
}

}  // namespace
}  // namespace wireup::prov
