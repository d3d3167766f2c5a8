// The rdma provider: the devices librdmacm opened, channels, ids, and the poll-based wait.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

#include "common/log.h"
#include "provider/rdma/convert.h"
#include "provider/rdma/rdma.h"

namespace wireup::prov::rdma {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// /sys/class/infiniband/<dev>/device -> ../../../0000:81:00.0 for PCI devices; software
// devices (rxe) have no such link.
std::string pci_bus_id_of(const std::string& ibdev) {
  char buf[PATH_MAX];
  std::string link = "/sys/class/infiniband/" + ibdev + "/device";
  ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  const char* base = std::strrchr(buf, '/');
  std::string id = base ? base + 1 : buf;
  // A PCI bus id looks like dddd:bb:dd.f
  if (id.size() == 12 && id[4] == ':' && id[7] == ':' && id[10] == '.') return id;
  return {};
}

}  // namespace

DeviceInfo describe_device(ibv_context* ctx) {
  DeviceInfo info;
  info.name = ibv_get_device_name(ctx->device);
  ibv_device_attr attr;
  std::memset(&attr, 0, sizeof attr);
  if (ibv_query_device(ctx, &attr) == 0) {
    info.vendor_id = attr.vendor_id;
    info.vendor_part_id = attr.vendor_part_id;
    info.node_guid = attr.node_guid;
    info.fw_ver = attr.fw_ver;
    info.max_qp = static_cast<uint32_t>(attr.max_qp);
    info.max_qp_rd_atom = static_cast<uint32_t>(std::max(attr.max_qp_rd_atom, 0));
    info.max_qp_init_rd_atom = static_cast<uint32_t>(std::max(attr.max_qp_init_rd_atom, 0));
    for (uint8_t p = 1; p <= attr.phys_port_cnt; ++p) {
      ibv_port_attr pa;
      std::memset(&pa, 0, sizeof pa);
      if (ibv_query_port(ctx, p, &pa) != 0) continue;
      PortInfo pi;
      pi.port_num = p;
      pi.state = from_ibv(pa.state);
      pi.link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
      pi.active_mtu = 128u << pa.active_mtu;  // enum ibv_mtu 1 = 256 bytes
      info.ports.push_back(pi);
    }
  } else {
    WIREUP_LOG(warn, "ibv_query_device(%s): %s", info.name.c_str(), std::strerror(errno));
  }
  if (ctx->device->transport_type == IBV_TRANSPORT_IWARP)
    info.transport = "iWARP";
  else if (!info.ports.empty() && info.ports[0].link_layer == "Ethernet")
    info.transport = "RoCE";
  else if (ctx->device->transport_type == IBV_TRANSPORT_IB)
    info.transport = "InfiniBand";
  else
    info.transport = "unknown";
  info.pci_bus_id = pci_bus_id_of(info.name);
  info.netdev = read_line("/sys/class/infiniband/" + info.name + "/ports/1/gid_attrs/ndevs/0");
  return info;
}

Result<std::unique_ptr<RdmaProvider>> RdmaProvider::create() {
  std::unique_ptr<RdmaProvider> p(new RdmaProvider());
  int num = 0;
  errno = 0;
  p->contexts_ = rdma_get_devices(&num);
  if (p->contexts_ == nullptr || num == 0) {
    int err = errno;
    return Error{ErrorCode::no_device, "rdma_get_devices", err, {}, 0,
                 "no RDMA device found on this machine (load a driver, or create a soft-RoCE "
                 "device with 'rdma link add rxe0 type rxe netdev <iface>')"};
  }
  for (int i = 0; i < num; ++i) {
    auto d = std::make_unique<RdmaDevice>(p->contexts_[i], describe_device(p->contexts_[i]));
    if (Status s = d->make_async_nonblocking(); !s) return s.error();
    p->devices_.push_back(std::move(d));
  }
  return p;
}

RdmaProvider::~RdmaProvider() {
  devices_.clear();
  if (contexts_ != nullptr) rdma_free_devices(contexts_);
}

Result<std::vector<Device*>> RdmaProvider::devices() {
  std::vector<Device*> out;
  for (auto& d : devices_) out.push_back(d.get());
  return out;
}

RdmaDevice* RdmaProvider::device_for(ibv_context* ctx) const {
  for (auto& d : devices_)
    if (d->ctx() == ctx) return d.get();
  return nullptr;
}

Result<std::unique_ptr<EventChannel>> RdmaProvider::create_channel() {
  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == nullptr) return Error::from_errno("rdma_create_event_channel", errno);
  // Non-blocking: progress() must never sleep inside rdma_get_cm_event.
  int flags = fcntl(ch->fd, F_GETFL);
  if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    int err = errno;
    rdma_destroy_event_channel(ch);
    return Error::from_errno("fcntl(O_NONBLOCK)", err, "on the rdma_cm event channel fd");
  }
  return std::unique_ptr<EventChannel>(new RdmaEventChannel(*this, ch));
}

Result<std::unique_ptr<CmId>> RdmaProvider::create_id(EventChannel& ch, PortSpace ps, Route route) {
  auto* rch = dynamic_cast<RdmaEventChannel*>(&ch);
  if (rch == nullptr)
    return Error::make(ErrorCode::invalid_argument, "rdma_create_id", "channel belongs to another provider");
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(rch->get(), &id, nullptr, ps == PortSpace::tcp ? RDMA_PS_TCP : RDMA_PS_IB) != 0)
    return Error::from_errno("rdma_create_id", errno);
  return std::unique_ptr<CmId>(std::make_unique<RdmaCmId>(*this, id, *rch, route));
}

Status RdmaProvider::wait(std::span<EventChannel* const> channels, std::span<Device* const> devices, Nanos timeout) {
  std::vector<pollfd> fds;
  for (EventChannel* c : channels) fds.push_back(pollfd{c->fd(), POLLIN, 0});
  for (Device* d : devices)
    if (d->async_fd() >= 0) fds.push_back(pollfd{d->async_fd(), POLLIN, 0});
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout + std::chrono::microseconds(999));
  int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(ms.count(), INT_MAX)));
  if (rc < 0 && errno != EINTR) return Error::from_errno("poll", errno, "on rdma_cm channel and device async fds");
  // Tell each channel and device whose fd is readable, so the next progress reads it
  // (worth_reading, async_worth_reading).
  for (size_t c = 0; c < channels.size(); ++c)
    if (rc > 0 && (fds[c].revents & POLLIN) != 0)
      if (auto* r = dynamic_cast<RdmaEventChannel*>(channels[c])) r->saw_readable();
  size_t i = channels.size();
  for (Device* d : devices)
    if (d->async_fd() >= 0) {
      if (rc > 0 && (fds[i].revents & POLLIN) != 0)
        if (auto* r = dynamic_cast<RdmaDevice*>(d)) r->saw_readable();
      ++i;
    }
  return Status::ok();
}

}  // namespace wireup::prov::rdma

namespace wireup::prov {

Result<std::unique_ptr<Provider>> create_rdma_provider() {
  auto p = rdma::RdmaProvider::create();
  if (!p) return p.error();
  return std::unique_ptr<Provider>(std::move(p).value());
}

}  // namespace wireup::prov
