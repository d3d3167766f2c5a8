// Simulated device, PD, CQ and MR. The QP is in qp.cc.
#include "provider/sim/verbs.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "common/log.h"

namespace wireup::prov::sim {

SimDeviceSpec SimDeviceSpec::mlx5(std::string name) {
  SimDeviceSpec s;
  s.name = std::move(name);
  return s;
}

SimDeviceSpec SimDeviceSpec::rxe(std::string name) {
  SimDeviceSpec s;
  s.name = std::move(name);
  s.vendor_id = 0xFFFFFF;  // what rxe reports
  s.vendor_part_id = 0;
  s.ece_supported = false;
  s.ece_options = 0;
  s.max_qp = 0x10000;
  s.max_rd_atomic = 128;
  s.enforces_rd_atomic_depth = false;  // rxe_resp.c: no depth check, the oldest resource is reused
  s.active_mtu = 1024;  // a 1500-byte netdev
  return s;
}

SimDevice::SimDevice(Core& c, uint32_t n, uint32_t i, const SimDeviceSpec& spec)
    : core(c), node(n), index(i), spec_(spec) {
  info_.name = spec.name;
  if (info_.name.empty())
    info_.name = (spec.vendor_id == 0xFFFFFF ? "rxe" : "mlx5_") + std::to_string(i);
  info_.transport = spec.transport;
  info_.vendor_id = spec.vendor_id;
  info_.vendor_part_id = spec.vendor_part_id;
  info_.node_guid = (uint64_t{0x0002c903} << 32) | (uint64_t{n} << 4) | i;
  info_.fw_ver = "sim";
  info_.netdev = "sim" + std::to_string(i);  // pci_bus_id stays empty: no hwloc object behind it
  info_.max_qp = spec.max_qp;
  info_.max_qp_rd_atom = spec.max_rd_atomic;
  info_.max_qp_init_rd_atom = spec.max_rd_atomic;
  PortInfo p;
  p.port_num = 1;
  p.state = spec.port_state;
  p.link_layer = spec.link_layer;
  p.active_mtu = spec.active_mtu;
  info_.ports.push_back(p);
}

Error SimDevice::gone(const char* call) const {
  return Error::from_errno(call, EIO, "device " + info_.name + " was removed");
}

Result<std::unique_ptr<Pd>> SimDevice::alloc_pd() {
  if (removed) return gone("ibv_alloc_pd");
  core.charge(node, core.latency.alloc_pd);
  return std::unique_ptr<Pd>(new SimPd(*this));
}

Result<std::unique_ptr<Cq>> SimDevice::create_cq(int cqe, bool with_comp_channel) {
  if (removed) return gone("ibv_create_cq");
  if (cqe <= 0)
    return Error::from_errno("ibv_create_cq", EINVAL, std::to_string(cqe) + " entries");
  core.charge(node, core.latency.create_cq);
  return std::unique_ptr<Cq>(new SimCq(core, cqe, with_comp_channel));
}

SimPd::SimPd(SimDevice& dev) : dev_(dev) { ++dev_.core.stats.pds_alive; }

SimPd::~SimPd() {
  if (!regions.empty())
    WIREUP_LOG(warn, "sim: PD destroyed with %zu MR(s) still registered (ibv_dealloc_pd: EBUSY)",
               regions.size());
  --dev_.core.stats.pds_alive;
}

Result<std::unique_ptr<Mr>> SimPd::reg_mr(void* addr, size_t len, uint32_t access_flags) {
  if (dev_.removed) return dev_.gone("ibv_reg_mr");
  if (addr == nullptr || len == 0)
    return Error::from_errno("ibv_reg_mr", EINVAL, std::to_string(len) + " bytes");
  // ib_core's ib_check_mr_access: remote write or atomic access needs local write too.
  if ((access_flags & (access::remote_write | access::remote_atomic)) != 0 &&
      (access_flags & access::local_write) == 0)
    return Error::from_errno("ibv_reg_mr", EINVAL, "REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE");
  const uint32_t key = dev_.core.next_key++;
  regions[key] = Region{reinterpret_cast<uint64_t>(addr), len, access_flags};
  dev_.core.charge(dev_.node, dev_.core.latency.reg_mr);
  ++dev_.core.stats.mrs_alive;
  return std::unique_ptr<Mr>(new SimMr(*this, key));
}

Result<std::unique_ptr<Srq>> SimPd::create_srq(const SrqInitAttr& a) {
  if (dev_.removed) return dev_.gone("ibv_create_srq");
  if (a.max_wr == 0 || a.max_sge == 0)
    return Error::from_errno("ibv_create_srq", EINVAL,
                             std::to_string(a.max_wr) + " WRs of " + std::to_string(a.max_sge) + " SGEs");
  return std::unique_ptr<Srq>(new SimSrq(*this, a));
}

SimMr::~SimMr() {
  pd_.regions.erase(key_);
  --pd_.sim_device().core.stats.mrs_alive;
}

SimCq::SimCq(Core& core, int cqe, bool with_comp_channel) : core_(core), cqe_(static_cast<size_t>(cqe)) {
  if (with_comp_channel) efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ++core_.stats.cqs_alive;
}

SimCq::~SimCq() {
  if (efd_ >= 0) ::close(efd_);
  --core_.stats.cqs_alive;
}

void SimCq::push(const WorkCompletion& wc) {
  if (q_.size() >= cqe_) {
    // A real CQ overruns into IBV_EVENT_CQ_ERR; here the completion is lost, loudly.
    WIREUP_LOG(error, "sim: CQ of %zu entries overrun; completion of wr_id %llu lost", cqe_,
               static_cast<unsigned long long>(wc.wr_id));
    return;
  }
  q_.push_back(wc);
  if (armed_ && efd_ >= 0) {
    uint64_t one = 1;
    if (::write(efd_, &one, sizeof one) == sizeof one) armed_ = false;
  }
}

Result<int> SimCq::poll(std::span<WorkCompletion> wc) {
  // The responses of the READ/atomics in flight come back now (qp_data.cc); a QP with more
  // to come lists itself again. Dead handles (destroyed QPs) are skipped.
  if (!senders.empty()) {
    std::vector<Handle> listed;
    listed.swap(senders);
    for (Handle h : listed)
      if (SimQp* q = core_.qps.get(h)) q->retire();
  }
  int n = 0;
  while (static_cast<size_t>(n) < wc.size() && !q_.empty()) {
    wc[static_cast<size_t>(n++)] = q_.front();
    q_.pop_front();
  }
  return n;
}

Status SimCq::req_notify() {
  armed_ = true;
  return Status::ok();
}

Status SimCq::consume_event() {
  if (efd_ < 0)
    return Error::make(ErrorCode::invalid_state, "ibv_get_cq_event", "CQ has no completion channel");
  uint64_t v = 0;
  if (::read(efd_, &v, sizeof v) != sizeof v)
    return Error::make(ErrorCode::would_block, "ibv_get_cq_event", "no completion event pending");
  return Status::ok();
}

}  // namespace wireup::prov::sim
