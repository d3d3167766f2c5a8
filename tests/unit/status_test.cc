// Status and Result: a would-block answer never allocates (every idle progress() meets one), a
// failure keeps its call, errno and detail through every copy and propagation, and a Result is
// never built from an ok Status.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

#include "common/status.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// Counts every allocation of this test program.
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace wireup {
namespace {

Result<int> poll_once() { return Status::would_block<"rdma_get_cm_event">(); }
Status poll_through() {
  WIREUP_TRY(poll_once());
  return Status::ok();
}
Result<long> poll_twice_through() {
  WIREUP_TRY(poll_through());
  return 1L;
}

TEST(Status, WouldBlockAllocatesNothingThroughResultsAndPropagation) {
  (void)poll_twice_through();  // the shared Error is built once, at the first use
  const long before = g_allocations.load();
  for (int i = 0; i < 100; ++i) {
    Result<long> r = poll_twice_through();
    ASSERT_FALSE(r);
    ASSERT_EQ(r.code(), ErrorCode::would_block);
    Status copy = r.status();
    Status again = copy;
    ASSERT_EQ(again.error().err, EAGAIN);
  }
  EXPECT_EQ(g_allocations.load() - before, 0);
  EXPECT_EQ(poll_once().error().call, "rdma_get_cm_event");
}

TEST(Status, AFailureKeepsItsCallErrnoAndDetailThroughCopies) {
  Result<int> r = Error::from_errno("ibv_create_qp", ENOMEM, "the transport's factory").with_qpn(0x11);
  Status s = r.status();
  Status copy = s;
  s = Status::ok();
  EXPECT_TRUE(s.is_ok());
  EXPECT_EQ(copy.code(), ErrorCode::resource_exhausted);
  EXPECT_EQ(copy.error().call, "ibv_create_qp");
  EXPECT_EQ(copy.error().qpn, 0x11u);
  EXPECT_NE(copy.message().find("the transport's factory"), std::string::npos) << copy.message();
  Result<int> again = copy;
  EXPECT_EQ(again.error().err, ENOMEM);
}

#ifdef NDEBUG
TEST(Status, AResultFromAnOkStatusIsAnErrorNamingTheBug) {
  Result<int> r = Status::ok();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.code(), ErrorCode::invalid_state);
  EXPECT_NE(r.error().message().find("ok Status"), std::string::npos) << r.error().message();
}
#else
TEST(StatusDeathTest, AResultFromAnOkStatusIsAnAssertion) {
  EXPECT_DEATH({ Result<int> r = Status::ok(); (void)r; }, "never from an ok Status");
}
#endif

}  // namespace
}  // namespace wireup
