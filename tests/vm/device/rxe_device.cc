#include "tests/vm/device/rxe_device.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

namespace wireup::vmtest {

int sh(const std::string& cmd) {
  std::fprintf(stderr, "[device] $ %s\n", cmd.c_str());
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

RxeDevice::RxeDevice(std::string name, std::string netdev, std::string addr)
    : name_(std::move(name)), netdev_(std::move(netdev)), addr_(std::move(addr)) {
  sh("rdma link delete " + name_ + " 2>/dev/null; ip link del " + netdev_ + " 2>/dev/null; true");
  if (sh("ip link add " + netdev_ + " type dummy") != 0) return;
  if (sh("ip addr add " + addr_ + "/24 dev " + netdev_) != 0) return;
  if (sh("ip link set " + netdev_ + " up") != 0) return;
  if (sh("rdma link add " + name_ + " type rxe netdev " + netdev_) != 0) return;
  for (int i = 0; i < 100; ++i) {
    if (sh("rdma link show " + name_ + "/1 | grep -q 'state ACTIVE'") == 0) {
      ok_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

RxeDevice::~RxeDevice() {
  // rxe cannot take a device away from a process that has it open, and librdmacm keeps its
  // device contexts open while the process lives: a delete from here would block until this
  // process exits. So the clean-up runs detached and finishes after the exit (a delete already
  // in flight, likewise, and the netdev goes after it).
  const bool pending = deleting_.valid() && deleting_.wait_for(std::chrono::seconds(1)) != std::future_status::ready;
  std::string rm = "for i in $(seq 120); do ip link del " + netdev_ + " 2>/dev/null && break; sleep 1; done";
  if (!pending) rm = "rdma link delete " + name_ + " 2>/dev/null; " + rm;
  sh("nohup sh -c '" + rm + "' >/dev/null 2>&1 &");
}

void RxeDevice::start_delete() {
  // A detached thread and a promise, not std::async: its future would block in its
  // destructor on a delete that never returns. The kernel's wait is bounded by timeout(1).
  auto done = std::make_shared<std::promise<int>>();
  deleting_ = done->get_future();
  std::thread([done, n = name_] { done->set_value(sh("timeout 120 rdma link delete " + n)); }).detach();
}

bool RxeDevice::delete_returned(std::chrono::milliseconds d, int* rc) {
  if (!deleting_.valid()) return false;
  if (deleting_.wait_for(d) != std::future_status::ready) return false;
  *rc = deleting_.get();
  return true;
}

namespace {
int count_lines(const std::string& cmd) {
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return -1;
  int n = 0;
  char line[1024];
  while (std::fgets(line, sizeof line, f) != nullptr) ++n;
  const int rc = ::pclose(f);
  return WIFEXITED(rc) && WEXITSTATUS(rc) <= 1 ? n : -1;  // grep -c style: 1 = no match
}
}  // namespace

int RxeDevice::own_cm_ids() const {
  return count_lines("timeout 5 rdma resource show cm_id | grep '" + name_ + "' | grep 'pid " +
                     std::to_string(::getpid()) + " '");
}

int RxeDevice::own_qps() const {
  return count_lines("timeout 5 rdma resource show qp | grep '" + name_ + "' | grep 'pid " +
                     std::to_string(::getpid()) + " '");
}

bool RxeDevice::exists() const { return sh("rdma link show " + name_ + " >/dev/null 2>&1") == 0; }

}  // namespace wireup::vmtest
