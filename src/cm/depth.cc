#include "cm/depth.h"

#include <algorithm>
#include <string>

namespace wireup::cm {
namespace {

// ibv_device_attr's bounds are ints; the CM's fields are 8 bits.
uint8_t clamp8(uint32_t v) { return static_cast<uint8_t>(std::min<uint32_t>(v, 255)); }

Result<uint8_t> pick(std::optional<uint8_t> want, uint32_t device_max, const char* what, const char* bound,
                     const prov::DeviceInfo& dev) {
  if (!want) return clamp8(device_max);
  if (*want > device_max)
    return Error::make(ErrorCode::invalid_argument, "rdma_conn_param",
                       std::string(what) + " " + std::to_string(*want) + " is above device " + dev.name + "'s " +
                           bound + " " + std::to_string(device_max));
  return *want;
}

}  // namespace

Result<Depths> local_depths(std::optional<uint8_t> initiator_depth, std::optional<uint8_t> responder_resources,
                            const prov::DeviceInfo& dev) {
  auto init = pick(initiator_depth, dev.max_qp_init_rd_atom, "qp.max_rd_atomic (initiator depth)",
                   "max_qp_init_rd_atom", dev);
  if (!init) return init.error();
  auto resp = pick(responder_resources, dev.max_qp_rd_atom, "qp.max_dest_rd_atomic (responder resources)",
                   "max_qp_rd_atom", dev);
  if (!resp) return resp.error();
  return Depths{*init, *resp};
}

Depths answer_depths(const Depths& local, const Depths& req) {
  return Depths{std::min(local.initiator_depth, req.initiator_depth),
                std::min(local.responder_resources, req.responder_resources)};
}

}  // namespace wireup::cm
