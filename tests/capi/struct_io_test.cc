// The struct_size rule (wireup.h, "Growing structs") on structs made for the test: an older
// caller's struct is a prefix of the library's, a newer caller's has a tail the library does
// not know. src/capi/struct_io.h does the copying for every public struct.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "capi/struct_io.h"

namespace wireup::capi {
namespace {

// What this library knows (v2); v1 is the first layout shipped, v3 a later one.
struct V1 {
  uint32_t struct_size;
  uint32_t a;
  uint64_t b;
};
struct V2 {
  uint32_t struct_size;
  uint32_t a;
  uint64_t b;
  uint64_t c;  // appended in v2: default 7
};
struct V3 {
  uint32_t struct_size;
  uint32_t a;
  uint64_t b;
  uint64_t c;
  uint64_t d;  // appended in v3: this library does not know it
};
constexpr size_t kFirst = sizeof(V1);

V2 defaults() { return V2{sizeof(V2), 0, 0, 7}; }

TEST(StructIo, AnOlderCallerGetsTheDefaultsOfWhatItLacks) {
  const V1 in{sizeof(V1), 1, 2};
  V2 ours = defaults();
  ASSERT_TRUE(struct_in(&in, &ours, sizeof ours, kFirst, "V"));
  EXPECT_EQ(ours.a, 1u);
  EXPECT_EQ(ours.b, 2u);
  EXPECT_EQ(ours.c, 7u) << "a field past the caller's struct keeps its default";
}

TEST(StructIo, AnOlderCallerIsWrittenOnlyUpToItsSize) {
  struct {
    V1 out;
    uint64_t guard;
  } mem;
  std::memset(&mem, 0xab, sizeof mem);
  mem.out.struct_size = sizeof(V1);
  const V2 ours{sizeof(V2), 1, 2, 3};
  ASSERT_TRUE(struct_out(&mem.out, &ours, sizeof ours, kFirst, "V"));
  EXPECT_EQ(mem.out.struct_size, sizeof(V1)) << "struct_size stays the caller's";
  EXPECT_EQ(mem.out.a, 1u);
  EXPECT_EQ(mem.out.b, 2u);
  EXPECT_EQ(mem.guard, 0xababababababababull) << "written past the caller's struct";
}

TEST(StructIo, ANewerCallerWithNothingNewSetIsTaken) {
  V3 in{};
  in.struct_size = sizeof in;
  in.a = 1;
  in.c = 9;
  V2 ours = defaults();
  ASSERT_TRUE(struct_in(&in, &ours, sizeof ours, kFirst, "V"));
  EXPECT_EQ(ours.a, 1u);
  EXPECT_EQ(ours.c, 9u);
}

TEST(StructIo, ANewerCallerAskingForSomethingNewIsRefused) {
  V3 in{};
  in.struct_size = sizeof in;
  in.d = 1;  // set in the tail this library does not know
  V2 ours = defaults();
  const Status s = struct_in(&in, &ours, sizeof ours, kFirst, "V");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_NE(s.message().find("V: invalid argument: struct_size 32 > this library's 24 and byte 24"), std::string::npos) << s.message();
  EXPECT_EQ(ours.c, 7u) << "nothing copied on failure";
}

TEST(StructIo, ANewerCallersOutputTailIsZeroed) {
  V3 out;
  std::memset(&out, 0xff, sizeof out);
  out.struct_size = sizeof out;
  const V2 ours{sizeof(V2), 1, 2, 3};
  ASSERT_TRUE(struct_out(&out, &ours, sizeof ours, kFirst, "V"));
  EXPECT_EQ(out.struct_size, sizeof(V3));
  EXPECT_EQ(out.c, 3u);
  EXPECT_EQ(out.d, 0u) << "a field this library does not fill reads 0";
}

TEST(StructIo, ASizeBelowTheFirstLayoutIsNamedWithBothSizes) {
  V2 in = defaults();
  in.struct_size = 8;
  V2 ours = defaults();
  Status s = struct_in(&in, &ours, sizeof ours, kFirst, "wireup_thing_t");
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("wireup_thing_t: invalid argument: struct_size 8 is below the smallest layout (16 bytes; this library's is 24)"),
            std::string::npos)
      << s.message();
  in.struct_size = 0;  // never initialized
  s = struct_out(&in, &ours, sizeof ours, kFirst, "wireup_thing_t");
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("struct_size 0 is below"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace wireup::capi
