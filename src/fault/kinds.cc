#include "fault/kinds.h"

#include <cerrno>

namespace wireup::fault {
namespace {

// rdma-core: librdmacm/cma.c (the user library), libibverbs/verbs.c and providers/rxe,
// providers/mlx5; Linux: drivers/infiniband/core/cma.c (rdma_cm), ucma.c (its char device),
// cm.c (the IB CM), uverbs_cmd.c and verbs.c (verbs objects), sw/rxe (the kernel's rxe). Each
// row was read in the source (Linux 6.1, rdma-core master of 2026): notes/fault-sweep.md lists
// what was read per row. Where rxe and mlx5 differ the row says so: rxe's object pools answer a
// full pool with EINVAL (__rxe_add_to_pool), mlx5's firmware LIM_ERR with ENOMEM.
constexpr KindInfo kTable[] = {
    {Kind::create_channel, "create_channel", "rdma_create_event_channel", ENOMEM,
     "librdmacm/cma.c rdma_create_event_channel: malloc of the channel"},
    {Kind::create_id, "create_id", "rdma_create_id", ENOMEM,
     "librdmacm/cma.c ucma_alloc_id (calloc); core/ucma.c ucma_create_id -> ucma_alloc_ctx (kzalloc)"},
    {Kind::get_event, "get_event", "rdma_get_cm_event", ENOMEM,
     "librdmacm/cma.c rdma_get_cm_event: the event's malloc precedes the read, so the kernel "
     "keeps the event (core/ucma.c ucma_get_event removes it only once copied out)"},
    {Kind::bind_addr, "bind_addr", "rdma_bind_addr", EADDRINUSE,
     "core/cma.c cma_use_port -> cma_check_port: the same specific addr:port bound (a wildcard: EADDRNOTAVAIL)"},
    {Kind::resolve_addr, "resolve_addr", "rdma_resolve_addr", ENODEV,
     "core/cma.c rdma_resolve_addr -> rdma_bind_addr -> cma_acquire_dev_by_src_ip: the source netdev has no RDMA device"},
    {Kind::resolve_route, "resolve_route", "rdma_resolve_route", ENOMEM,
     "core/cma.c cma_resolve_iboe_route: kzalloc of the path record"},
    {Kind::listen, "listen", "rdma_listen", EADDRINUSE,
     "core/cma.c rdma_listen -> cma_check_port: a port shared through REUSEADDR must now be unique"},
    {Kind::connect, "connect", "rdma_connect", EINVAL,
     "core/cma.c rdma_connect_locked (id not in ROUTE_RESOLVED) / cm.c ib_send_cm_req (cm_id not IDLE)"},
    {Kind::accept, "accept", "rdma_accept", EINVAL,
     "core/cma.c rdma_accept (id not in CONNECT) / cm.c ib_send_cm_rep: cm_id not in REQ_RCVD"},
    {Kind::reject, "reject", "rdma_reject", EINVAL,
     "core/cma.c rdma_reject / cm.c ib_send_cm_rej: cm_id state"},
    {Kind::establish, "establish", "rdma_establish", EINVAL,
     "librdmacm/cma.c rdma_establish -> ucma_process_conn_resp; core/cm.c ib_send_cm_rtu: cm_id not in REP_RCVD"},
    {Kind::disconnect, "disconnect", "rdma_disconnect", EINVAL,
     "core/cma.c rdma_disconnect: no IB cm_id (never connected); after the peer's DREQ it answers 0"},
    {Kind::init_qp_attr, "init_qp_attr", "rdma_init_qp_attr", EINVAL,
     "core/cma.c rdma_init_qp_attr -> ib_cm_init_qp_attr: cm_id state"},
    {Kind::migrate, "migrate", "rdma_migrate_id", EINVAL,
     "core/ucma.c ucma_migrate_id: the fd is not a ucma file (it allocates nothing: no ENOMEM)"},
    {Kind::set_option, "set_option", "rdma_set_option", EINVAL,
     "core/ucma.c ucma_set_option_id"},
    {Kind::alloc_pd, "alloc_pd", "ibv_alloc_pd", ENOMEM,
     "core/uverbs_cmd.c ib_uverbs_alloc_pd: rdma_zalloc_drv_obj (rxe's full pool: EINVAL)"},
    {Kind::create_cq, "create_cq", "ibv_create_cq", ENOMEM,
     "core/uverbs_cmd.c create_cq: rdma_zalloc_drv_obj; sw/rxe rxe_cq_from_init: rxe_queue_init"},
    {Kind::create_qp, "create_qp", "ibv_create_qp", ENOMEM,
     "core/verbs.c create_qp: rdma_zalloc_drv_obj_numa; sw/rxe rxe_qp_init_req: rxe_queue_init"},
    {Kind::reg_mr, "reg_mr", "ibv_reg_mr", ENOMEM,
     "core/uverbs_cmd.c ib_uverbs_reg_mr -> ib_umem_get (pinned-memory limit)"},
    {Kind::create_srq, "create_srq", "ibv_create_srq", ENOMEM,
     "core/verbs.c ib_create_srq_user: rdma_zalloc_drv_obj; sw/rxe rxe_srq_from_init: rxe_queue_init"},
    {Kind::modify_qp, "modify_qp", "ibv_modify_qp", EINVAL,
     "core/verbs.c ib_modify_qp_is_ok: attributes or transition refused"},
    {Kind::post_send, "post_send", "ibv_post_send", ENOMEM,
     "providers/mlx5/qp.c mlx5_post_send: send queue full"},
    {Kind::post_recv, "post_recv", "ibv_post_recv", ENOMEM,
     "providers/mlx5/qp.c mlx5_post_recv: receive queue full"},
    {Kind::addr_event, "addr_event", "RDMA_CM_EVENT_ADDR_ERROR", ENODEV,
     "core/cma.c addr_handler -> cma_acquire_dev_by_src_ip: the resolved netdev has no RDMA device"},
    {Kind::route_event, "route_event", "RDMA_CM_EVENT_ROUTE_ERROR", ETIMEDOUT,
     "core/cma.c cma_query_handler <- sa_query.c send_handler: the SA path query timed out (IB only)"},
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
