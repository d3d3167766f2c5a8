#include "fault/kinds.h"

#include <cerrno>

namespace wireup::fault {
namespace {

// rdma-core: librdmacm/cma.c (the user library), libibverbs/verbs.c and providers/rxe,
// providers/mlx5; Linux: drivers/infiniband/core/cma.c (rdma_cm), ucma.c (its char device),
// cm.c (the IB CM), uverbs_cmd.c (verbs objects).
constexpr KindInfo kTable[] = {
    {Kind::create_channel, "create_channel", "rdma_create_event_channel", ENOMEM,
     "librdmacm/cma.c rdma_create_event_channel: malloc of the channel (NULL, errno from malloc)"},
    {Kind::create_id, "create_id", "rdma_create_id", ENOMEM,
     "librdmacm/cma.c ucma_alloc_id (calloc); core/ucma.c ucma_create_id -> ucma_alloc_ctx (kzalloc)"},
    {Kind::get_event, "get_event", "rdma_get_cm_event", ENOMEM,
     "librdmacm/cma.c rdma_get_cm_event: the event's malloc precedes the read, so the kernel "
     "keeps the event (core/ucma.c ucma_get_event removes it only once copied out)"},
    {Kind::bind_addr, "bind_addr", "rdma_bind_addr", EADDRINUSE,
     "core/cma.c rdma_bind_addr -> cma_get_port -> cma_use_port -> cma_check_port: another id bound to "
     "the same address and port (EADDRNOTAVAIL when either is the wildcard)"},
    {Kind::resolve_addr, "resolve_addr", "rdma_resolve_addr", ENODEV,
     "core/cma.c rdma_resolve_addr -> cma_bind_addr / rdma_translate_ip: no device for the source"},
    {Kind::resolve_route, "resolve_route", "rdma_resolve_route", ENOMEM,
     "core/cma.c cma_resolve_iboe_route: kzalloc of the path record"},
    {Kind::listen, "listen", "rdma_listen", EADDRINUSE,
     "core/cma.c rdma_listen -> cma_bind_listen -> cma_check_port (an id bound with REUSEADDR): "
     "another id holds the address and port"},
    {Kind::connect, "connect", "rdma_connect", EINVAL,
     "core/cma.c rdma_connect_locked (id not in ROUTE_QUERY) / cm.c ib_send_cm_req"},
    {Kind::accept, "accept", "rdma_accept", EINVAL,
     "core/cma.c rdma_accept: the id's state is not RDMA_CM_CONNECT (on failure it also sends a REJ) / "
     "cm.c ib_send_cm_rep: cm_id not in REQ_RCVD"},
    {Kind::reject, "reject", "rdma_reject", EINVAL,
     "core/cma.c rdma_reject: the id has no IB CM id / cm.c ib_send_cm_rej: cm_id state"},
    {Kind::establish, "establish", "rdma_establish", EINVAL,
     "librdmacm/cma.c rdma_establish (EINVAL if the id has a QP) -> ucma_process_conn_resp: "
     "UCMA_CMD_ACCEPT; core/ucma.c ucma_accept -> core/cma.c rdma_accept: state not "
     "RDMA_CM_CONNECT, or cma_rep_recv -> cm.c ib_send_cm_rtu: cm_id not in REP_RCVD"},
    {Kind::disconnect, "disconnect", "rdma_disconnect", EINVAL,
     "librdmacm/cma.c rdma_disconnect -> ucma_shutdown: an id without a device; core/cma.c "
     "rdma_disconnect: an id without an IB CM id (never connected). A DREQ the IB CM refuses (the "
     "peer's came first) is answered with a DREP and the call returns 0"},
    {Kind::init_qp_attr, "init_qp_attr", "rdma_init_qp_attr", EINVAL,
     "core/cma.c rdma_init_qp_attr -> ib_cm_init_qp_attr: cm_id state"},
    {Kind::migrate, "migrate", "rdma_migrate_id", ENOENT,
     "core/ucma.c ucma_migrate_id: the id is gone from its current channel's file (destroyed, or "
     "being closed after DEVICE_REMOVAL: ENXIO) since the lookup; librdmacm/cma.c rdma_migrate_id "
     "allocates nothing when given a channel, so no ENOMEM on this path"},
    {Kind::set_option, "set_option", "rdma_set_option", EINVAL,
     "core/ucma.c ucma_set_option_id: an option value of the wrong length (TOS, REUSEADDR, "
     "ACK_TIMEOUT), or what rdma_set_reuseaddr / rdma_set_ack_timeout refuse"},
    {Kind::alloc_pd, "alloc_pd", "ibv_alloc_pd", ENOMEM,
     "core/uverbs_cmd.c ib_uverbs_alloc_pd; providers/rxe rxe_alloc_pd (pool limit)"},
    {Kind::create_cq, "create_cq", "ibv_create_cq", ENOMEM,
     "core/uverbs_cmd.c create_cq; sw/rxe rxe_create_cq (pool limit)"},
    {Kind::create_qp, "create_qp", "ibv_create_qp", ENOMEM,
     "core/uverbs_cmd.c create_qp; sw/rxe rxe_create_qp (pool limit, queue allocation)"},
    {Kind::reg_mr, "reg_mr", "ibv_reg_mr", ENOMEM,
     "core/uverbs_cmd.c ib_uverbs_reg_mr -> ib_umem_get (pinned-memory limit)"},
    {Kind::create_srq, "create_srq", "ibv_create_srq", ENOMEM,
     "core/uverbs_cmd.c ib_uverbs_create_srq; sw/rxe rxe_create_srq"},
    {Kind::modify_qp, "modify_qp", "ibv_modify_qp", EINVAL,
     "core/verbs.c ib_modify_qp_is_ok: attributes or transition refused"},
    {Kind::post_send, "post_send", "ibv_post_send", ENOMEM,
     "providers/mlx5/qp.c mlx5_post_send: send queue full"},
    {Kind::post_recv, "post_recv", "ibv_post_recv", ENOMEM,
     "providers/mlx5/qp.c mlx5_post_recv: receive queue full"},
    {Kind::addr_event, "addr_event", "RDMA_CM_EVENT_ADDR_ERROR", ENODEV,
     "core/cma.c addr_handler: status of rdma_resolve_ip (no route to a device)"},
    {Kind::route_event, "route_event", "RDMA_CM_EVENT_ROUTE_ERROR", ETIMEDOUT,
     "core/cma.c cma_query_handler: the SA path query timed out"},
};
static_assert(std::size(kTable) == kKindCount, "one row per Kind");

constexpr bool rows_in_order() {
  for (size_t i = 0; i < std::size(kTable); ++i)
    if (static_cast<size_t>(kTable[i].kind) != i) return false;
  return true;
}
static_assert(rows_in_order(), "rows in Kind order: info() indexes the table");

}  // namespace

std::span<const KindInfo> kinds() { return kTable; }
const KindInfo& info(Kind k) { return kTable[static_cast<size_t>(k)]; }
std::optional<Kind> kind_named(std::string_view name) {
  for (const KindInfo& i : kTable)
    if (i.name == name) return i.kind;
  return std::nullopt;
}

}  // namespace wireup::fault
