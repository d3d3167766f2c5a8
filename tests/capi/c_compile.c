/* wireup.h is C: this file is compiled as strict C11 with -Wall -Wextra -Werror -pedantic
 * and linked against libwireup.a and the C++ runtime, the way C middleware embeds it.
 * Run, it checks what needs no device: status texts, misuse answers, and that context
 * creation either works or fails with a message. */
#include <stdio.h>
#include <string.h>

#include "wireup/wireup.h"

static int failures = 0;

#define EXPECT(cond)                                               \
  do {                                                             \
    if (!(cond)) {                                                 \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                  \
    }                                                              \
  } while (0)

static int no_qp(void* arg, const wireup_qp_request_t* req, struct ibv_qp** out) {
  (void)arg;
  (void)req;
  (void)out;
  return 95; /* EOPNOTSUPP */
}

int main(void) {
  wireup_status_t s;
  wireup_context_params_t cp;
  wireup_params_t p;
  wireup_t* w = NULL;
  wireup_context_t* ctx = NULL;
  size_t len = 0;

  EXPECT(strcmp(wireup_strerror(WIREUP_OK), "success") == 0);
  EXPECT(strlen(wireup_strerror(WIREUP_ERR_NO_DEVICE)) > 0);

  wireup_context_params_init(&cp);
  EXPECT(cp.local_rank == -1 && cp.provider == NULL && cp.struct_size == sizeof cp);
  wireup_params_init(&p);
  p.nranks = 2;
  p.lanes = 1;
  p.job_key = 42;
  p.qp_create = no_qp;
  EXPECT(p.struct_size == sizeof p && p.qp_release == NULL && p.qp_arg == NULL);

  {
    unsigned major = 99, minor = 99, patch = 99;
    wireup_version(&major, &minor, &patch);
    EXPECT(major == WIREUP_VERSION_MAJOR && minor == WIREUP_VERSION_MINOR && patch == WIREUP_VERSION_PATCH);
    EXPECT(strcmp(wireup_version_string(), WIREUP_VERSION_STRING) == 0);
    EXPECT(WIREUP_VERSION == WIREUP_VERSION_OF(WIREUP_VERSION_MAJOR, WIREUP_VERSION_MINOR, WIREUP_VERSION_PATCH));
    wireup_version(NULL, NULL, NULL);
  }
  {
    wireup_result_t r;
    wireup_lane_event_t lev;
    WIREUP_STRUCT_INIT(&r);
    EXPECT(r.struct_size == sizeof r && r.qp == NULL);
    lev.struct_size = (uint32_t)offsetof(wireup_lane_event_t, index);
    EXPECT(WIREUP_HAS_FIELD(&lev, type) && !WIREUP_HAS_FIELD(&lev, index));
    EXPECT(strcmp(wireup_error_kind_name(WIREUP_ERROR_RTU_LOST), "rtu_lost") == 0);
    EXPECT(strcmp(wireup_ece_outcome_name(WIREUP_ECE_NEGOTIATED), "negotiated") == 0);
    EXPECT(strcmp(wireup_reject_reason_name(WIREUP_REJECT_WRONG_JOB_KEY), "wrong_job_key") == 0);
    EXPECT(strcmp(wireup_tally_group_name(WIREUP_TALLY_FAILURES), "failures") == 0);
  }

  s = wireup_create(NULL, &p, &w);
  EXPECT(s == WIREUP_ERR_INVALID_ARGUMENT && w == NULL);
  EXPECT(strstr(wireup_last_error(NULL), "context is NULL") != NULL);
  EXPECT(wireup_progress(NULL, NULL) == WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT(wireup_local_address(NULL, NULL, &len) == WIREUP_ERR_INVALID_ARGUMENT);
  EXPECT(wireup_fd(NULL) == -1 && wireup_done(NULL) == -1 && wireup_result_count(NULL) == 0);
  wireup_destroy(NULL);
  /* The async-event hand-over (wireup_events.h) is C too; the event type stays opaque here. */
  EXPECT(wireup_context_async_event(NULL, NULL) == WIREUP_ERR_INVALID_ARGUMENT);
  {
    wireup_device_event_t dev_ev;
    memset(&dev_ev, 0, sizeof dev_ev);
    dev_ev.object = WIREUP_DEVICE_OBJECT_SRQ;
    EXPECT(dev_ev.handle == NULL && dev_ev.object == WIREUP_DEVICE_OBJECT_SRQ);
  }

  s = wireup_context_create(&cp, &ctx);
  if (s == WIREUP_OK) {
    printf("c_compile: context on %s, listening on %s\n", wireup_context_device_name(ctx),
           wireup_context_listen_address(ctx));
    EXPECT(wireup_context_destroy(ctx) == WIREUP_OK);
  } else {
    printf("c_compile: no context here (%s): %s\n", wireup_strerror(s), wireup_last_error(NULL));
    EXPECT(ctx == NULL && strlen(wireup_last_error(NULL)) > 0);
  }
  printf("c_compile: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
