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
  wireup_params_t p = {0, 2, 1, 42, NULL};
  wireup_t* w = NULL;
  wireup_context_t* ctx = NULL;
  size_t len = 0;

  EXPECT(strcmp(wireup_strerror(WIREUP_OK), "success") == 0);
  EXPECT(strlen(wireup_strerror(WIREUP_ERR_NO_DEVICE)) > 0);

  wireup_context_params_init(&cp);
  EXPECT(cp.local_rank == -1 && cp.provider == NULL);

  s = wireup_create(NULL, &p, no_qp, NULL, &w);
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
