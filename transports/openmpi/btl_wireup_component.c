/*
 * btl_wireup_component.c -- the component: MCA parameters, init (one module per process) and
 * the progress function Open MPI calls from opal_progress().
 */
#include "btl_wireup.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static int component_register(void);
static int component_open(void);
static int component_close(void);
static mca_btl_base_module_t** component_init(int* num_btls, bool enable_progress_threads, bool enable_mpi_threads);
static int component_progress(void);

static char* mode_name = "on_demand";

mca_btl_wireup_component_t mca_btl_wireup_component = {
    .super =
        {
            .btl_version =
                {
                    MCA_BTL_DEFAULT_VERSION("wireup"),
                    .mca_open_component = component_open,
                    .mca_close_component = component_close,
                    .mca_register_component_params = component_register,
                },
            .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .btl_init = component_init,
            /* NULL on purpose: the BML registers a BTL's progress only once a proc is reachable
             * through it, and a rank on demand must answer a peer's connection request before
             * it has added that peer. The component registers its own (component_init). */
            .btl_progress = NULL,
        },
};

static int component_register(void) {
  mca_btl_wireup_component_t* c = &mca_btl_wireup_component;
  mca_base_component_t* v = &c->super.btl_version;
  (void)mca_base_component_var_register(
      v, "mode", "How the lanes to a peer connect: on_demand (at the first message to it) or bulk (every peer of the job at MPI_Init)",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &mode_name);
  c->lanes = 0;
  (void)mca_base_component_var_register(v, "lanes", "Connections (QPs) per peer; 0 = wireup's engine.lanes",
                                        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_4,
                                        MCA_BASE_VAR_SCOPE_READONLY, &c->lanes);
  c->config_file = NULL;
  (void)mca_base_component_var_register(
      v, "config", "A wireup TOML tuning file (default: $WIREUP_CONFIG, ./wireup.toml, /etc/wireup/wireup.toml); WIREUP_<SECTION>_<KEY> variables override it",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &c->config_file);
  c->counters = 0;
  (void)mca_base_component_var_register(v, "counters", "Print what the BTL moved at finalize (one line per rank)",
                                        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4,
                                        MCA_BASE_VAR_SCOPE_READONLY, &c->counters);
  c->send_frags = 256;
  (void)mca_base_component_var_register(v, "send_frags", "Registered send buffers per process",
                                        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                        MCA_BASE_VAR_SCOPE_READONLY, &c->send_frags);
  c->recv_frags = 512;
  (void)mca_base_component_var_register(v, "recv_frags", "Receive buffers posted to each rail's shared receive queue",
                                        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                        MCA_BASE_VAR_SCOPE_READONLY, &c->recv_frags);
  c->verbose = 0;
  (void)mca_base_component_var_register(v, "verbose", "Log connection events (lanes ready, closed, failed)",
                                        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5,
                                        MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);
  /* The usual btl_wireup_{eager_limit,max_send_size,...} parameters, with the template's
   * values as defaults. */
  return mca_btl_base_param_register(v, &btl_wireup_module_template);
}

static int component_open(void) {
  mca_btl_wireup_component.module = NULL;
  return OPAL_SUCCESS;
}

static int component_close(void) { return OPAL_SUCCESS; }

static mca_btl_base_module_t** component_init(int* num_btls, bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  mca_btl_wireup_component_t* c = &mca_btl_wireup_component;
  *num_btls = 0;
  if (strcmp(mode_name, "on_demand") == 0) {
    c->mode = BTL_WIREUP_ON_DEMAND;
  } else if (strcmp(mode_name, "bulk") == 0) {
    c->mode = BTL_WIREUP_BULK;
  } else {
    opal_output(0, "btl wireup: btl_wireup_mode is \"%s\": it must be on_demand or bulk", mode_name);
    return NULL;
  }
  if (c->lanes < 0 || c->lanes > BTL_WIREUP_MAX_LANES) {
    opal_output(0, "btl wireup: btl_wireup_lanes is %d: it must be 0 (wireup's engine.lanes) .. %d", c->lanes,
                BTL_WIREUP_MAX_LANES);
    return NULL;
  }
  if (c->send_frags < 16 || c->recv_frags < 16) {
    opal_output(0, "btl wireup: btl_wireup_send_frags %d / btl_wireup_recv_frags %d: each must be at least 16",
                c->send_frags, c->recv_frags);
    return NULL;
  }
  mca_btl_wireup_module_t* m = calloc(1, sizeof *m);
  if (m == NULL) return NULL;
  m->super = btl_wireup_module_template;
  m->super.btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t);
  m->locking = enable_mpi_threads;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&m->lock, &a);
  pthread_mutexattr_destroy(&a);
  if (btl_wireup_conn_open(m) != OPAL_SUCCESS) {
    /* The reason is printed already; without this BTL, Open MPI's selection decides. */
    btl_wireup_conn_close(m);
    free(m);
    return NULL;
  }
  mca_btl_base_module_t** btls = malloc(sizeof *btls);
  if (btls == NULL) {
    btl_wireup_conn_close(m);
    free(m);
    return NULL;
  }
  btls[0] = &m->super;
  c->module = m;
  opal_progress_register(component_progress);
  *num_btls = 1;
  return btls;
}

static int component_progress(void) {
  mca_btl_wireup_module_t* m = mca_btl_wireup_component.module;
  if (m == NULL) return 0;
  BTL_WIREUP_LOCK(m);
  int n = btl_wireup_poll(m);
  /* wireup's own work (CM events, retries, its deadline) is rare once the lanes stand: every
   * call while lanes this rank asked for are being connected, else one call in 64. A call of
   * wireup_progress costs an epoll_wait, and a latency-bound loop polls the CQs thousands of
   * times between two messages. (Gating by the clock instead measured slower in the VM: its
   * clock source is the HPET, so every clock_gettime is a system call there.) */
  if (m->w != NULL && (m->connecting || (++m->progress_calls & 63) == 0)) n += btl_wireup_conn_progress(m);
  BTL_WIREUP_UNLOCK(m);
  return n;
}

/* Called by the module's finalize: the component has no module any more. */
void btl_wireup_component_forget(void);
void btl_wireup_component_forget(void) {
  opal_progress_unregister(component_progress);
  mca_btl_wireup_component.module = NULL;
}
