// A soft-RoCE device of the test's own inside the VM (a dummy netdev with its address and an
// rxe on it), so that removing it, taking its port down or moving its address leaves rxe0 and
// the rest of the suite alone.
#pragma once

#include <chrono>
#include <future>
#include <string>

namespace wireup::vmtest {

// Runs a shell command, returns its exit status; the command line is echoed on stderr.
int sh(const std::string& cmd);

class RxeDevice {
 public:
  // ip link add NETDEV type dummy, ADDR/24 on it, up, rdma link add NAME type rxe netdev NETDEV;
  // waits (at most 5 s) for its port to be ACTIVE. ok() says whether all of that worked.
  RxeDevice(std::string name, std::string netdev, std::string addr);
  // Deletes what is left (the rxe first, then the netdev), waiting for a delete in flight.
  ~RxeDevice();
  bool ok() const { return ok_; }
  const std::string& addr() const { return addr_; }
  const std::string& name() const { return name_; }

  // `rdma link delete NAME` on a thread of its own: with rxe it may not return before every
  // user of the device has closed it.
  void start_delete();
  // Whether the delete in flight has returned within `d` (and then its exit status in *rc).
  bool delete_returned(std::chrono::milliseconds d, int* rc);
  bool exists() const;
  // Lines of `rdma resource show cm_id` (and `qp`) on this device that belong to this process.
  int own_cm_ids() const;
  int own_qps() const;

 private:
  std::string name_, netdev_, addr_;
  bool ok_ = false;
  std::future<int> deleting_;
};

}  // namespace wireup::vmtest
