/* Unit test of rmaop_status_string (include/rmaop/rmaop.h). Reference: every enumerator's own name. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop/rmaop.h"

START_TEST(test_every_status_has_its_name) {
  static const struct {
    rmaop_status s;
    const char *name;
  } all[] = {
      {RMAOP_OK, "RMAOP_OK"},
      {RMAOP_ERR_ARG, "RMAOP_ERR_ARG"},
      {RMAOP_ERR_MPI, "RMAOP_ERR_MPI"},
      {RMAOP_ERR_CUDA, "RMAOP_ERR_CUDA"},
      {RMAOP_ERR_NCCL, "RMAOP_ERR_NCCL"},
      {RMAOP_ERR_UNSUPPORTED, "RMAOP_ERR_UNSUPPORTED"},
      {RMAOP_ERR_NOMEM, "RMAOP_ERR_NOMEM"},
      {RMAOP_ERR_TIMEOUT, "RMAOP_ERR_TIMEOUT"},
      {RMAOP_ERR_REMOTE, "RMAOP_ERR_REMOTE"},
      {RMAOP_ERR_INTERNAL, "RMAOP_ERR_INTERNAL"},
      {RMAOP_ERR_STATE, "RMAOP_ERR_STATE"},
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
    ck_assert_str_eq(rmaop_status_string(all[i].s), all[i].name);
  ck_assert_int_eq(RMAOP_OK, 0);
}
END_TEST

START_TEST(test_unknown_status) {
  const char *s = rmaop_status_string((rmaop_status)1000);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(strncmp(s, "RMAOP_", 6), 0);
  ck_assert_str_ne(s, "RMAOP_OK");
}
END_TEST

START_TEST(test_last_error_starts_empty) {
  /* Nothing failed in this process yet (this test runs first in its own process). */
  ck_assert_str_eq(rmaop_ctx_last_error(NULL), "");
}
END_TEST

int main(void) {
  Suite *s = suite_create("status");
  TCase *tc = tcase_create("strings");
  tcase_add_test(tc, test_last_error_starts_empty);
  tcase_add_test(tc, test_every_status_has_its_name);
  tcase_add_test(tc, test_unknown_status);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
