// The PMIx bootstrap without a server (host, no launcher): one sentence saying so, state
// no_server (the caller falls back to another bootstrap), and nothing left initialized.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bootstrap/pmix_session.h"

namespace wireup::bootstrap {
namespace {

// The variables a PMIx launcher sets for its children (a test run under mpirun has them).
const char* const kServerVars[] = {"PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21",
                                   "PMIX_SERVER_URI2", "PMIX_NAMESPACE", "PMIX_RANK"};

class NoServer : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kServerVars) unsetenv(v);
  }
  void TearDown() override { SetUp(); }
};

TEST_F(NoServer, NothingAnnouncedIsNoServerWithASentence) {
  EXPECT_FALSE(PmixSession::server_announced());
  PmixSession::Opened o = PmixSession::open();
  EXPECT_EQ(o.state, PmixOpen::no_server) << o.why;
  EXPECT_EQ(o.session, nullptr);
  EXPECT_NE(o.why.find("no PMIx server"), std::string::npos) << o.why;
  EXPECT_NE(o.why.find("PMIX_SERVER_URI"), std::string::npos) << "names what it looked for: " << o.why;
}

// A stale announcement (a launcher that is gone): PMIx_Init answers UNREACHABLE, which is
// still "no server" (fall back), and the sentence names the call and its status.
TEST_F(NoServer, AnnouncedButUnreachableIsNoServerNamingTheCall) {
  setenv("PMIX_NAMESPACE", "wireup-test-ns", 1);
  setenv("PMIX_RANK", "0", 1);
  // Port 1 on loopback: nothing listens there.
  setenv("PMIX_SERVER_URI41", "wireup-test-ns.0;tcp4://127.0.0.1:1", 1);
  ASSERT_TRUE(PmixSession::server_announced());
  PmixSession::Opened o = PmixSession::open();
  EXPECT_EQ(o.state, PmixOpen::no_server) << to_string(o.state) << ": " << o.why;
  EXPECT_EQ(o.session, nullptr);
  EXPECT_NE(o.why.find("PMIx_Init"), std::string::npos) << o.why;
  EXPECT_NE(o.why.find("UNREACHABLE"), std::string::npos) << o.why;
}

TEST(PmixOpenNames, EveryStateHasOne) {
  EXPECT_STREQ(to_string(PmixOpen::connected), "connected");
  EXPECT_STREQ(to_string(PmixOpen::no_server), "no_server");
  EXPECT_STREQ(to_string(PmixOpen::failed), "failed");
}

}  // namespace
}  // namespace wireup::bootstrap
