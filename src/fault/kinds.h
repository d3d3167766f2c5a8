// The calls of the provider seam a fault can be injected into, each with the errno the real
// library answers when that call fails for a reason the caller cannot prevent (memory, a
// device going, a peer state the CM refuses). The errno is the one rdma-core and the kernel
// return, not a made-up one: the row of each kind (kinds.cc) names the source it follows.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace wireup::fault {

enum class Kind : uint8_t {
  create_channel,   // rdma_create_event_channel
  create_id,        // rdma_create_id
  get_event,        // rdma_get_cm_event (an event read; a would-block answer is never a fault)
  bind_addr,        // rdma_bind_addr
  resolve_addr,     // rdma_resolve_addr
  resolve_route,    // rdma_resolve_route
  listen,           // rdma_listen
  connect,          // rdma_connect
  accept,           // rdma_accept
  reject,           // rdma_reject
  establish,        // rdma_establish
  disconnect,       // rdma_disconnect
  init_qp_attr,     // rdma_init_qp_attr
  migrate,          // rdma_migrate_id
  set_option,       // rdma_set_option (TOS, reuseaddr, ACK timeout)
  alloc_pd,         // ibv_alloc_pd
  create_cq,        // ibv_create_cq
  create_qp,        // ibv_create_qp
  reg_mr,           // ibv_reg_mr
  create_srq,       // ibv_create_srq
  modify_qp,        // ibv_modify_qp
  post_send,        // ibv_post_send
  post_recv,        // ibv_post_recv
  addr_event,       // ADDR_RESOLVED turned into ADDR_ERROR (the kernel's addr_handler)
  route_event,      // ROUTE_RESOLVED turned into ROUTE_ERROR (cma_query_handler)
};
inline constexpr size_t kKindCount = static_cast<size_t>(Kind::route_event) + 1;

struct KindInfo {
  Kind kind;
  std::string_view name;    // the kind's name ("create_qp"), as a sweep names it
  std::string_view call;    // the library call the error names ("ibv_create_qp")
  int err;                  // the errno the real library answers
  std::string_view source;  // where that answer comes from
};

std::span<const KindInfo> kinds();
const KindInfo& info(Kind k);
std::optional<Kind> kind_named(std::string_view name);

}  // namespace wireup::fault
