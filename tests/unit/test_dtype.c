/* Unit test of the dtype and name helpers (include/rmaop/rmaop.h). Reference: the C sizes of float,
 * double, float _Complex, double _Complex and the names listed in the header. No MPI. */
#include <check.h>
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "rmaop/rmaop.h"

START_TEST(test_sizes) {
  ck_assert_uint_eq(rmaop_dtype_size(RMAOP_F32), sizeof(float));
  ck_assert_uint_eq(rmaop_dtype_size(RMAOP_F64), sizeof(double));
  ck_assert_uint_eq(rmaop_dtype_size(RMAOP_C64), sizeof(float _Complex));
  ck_assert_uint_eq(rmaop_dtype_size(RMAOP_C128), sizeof(double _Complex));
  ck_assert_uint_eq(rmaop_dtype_size((rmaop_dtype)4), 0);
  ck_assert_uint_eq(rmaop_dtype_size((rmaop_dtype)-1), 0);
}
END_TEST

START_TEST(test_names_round_trip) {
  const char *names[] = {"f32", "f64", "c64", "c128"};
  for (int d = 0; d < 4; ++d) {
    ck_assert_str_eq(rmaop_dtype_name((rmaop_dtype)d), names[d]);
    rmaop_dtype parsed = (rmaop_dtype)99;
    ck_assert_int_eq(rmaop_dtype_parse(names[d], &parsed), RMAOP_OK);
    ck_assert_int_eq(parsed, d);
  }
  ck_assert_str_eq(rmaop_dtype_name((rmaop_dtype)7), "invalid");
}
END_TEST

START_TEST(test_parse_errors) {
  rmaop_dtype d = RMAOP_C64;
  ck_assert_int_eq(rmaop_dtype_parse("float128", &d), RMAOP_ERR_ARG);
  ck_assert_int_eq(d, RMAOP_C64); /* outputs are written only on success */
  ck_assert_ptr_nonnull(strstr(rmaop_ctx_last_error(NULL), "float128"));
  ck_assert_int_eq(rmaop_dtype_parse(NULL, &d), RMAOP_ERR_ARG);
  ck_assert_int_eq(rmaop_dtype_parse("f64", NULL), RMAOP_ERR_ARG);
  ck_assert_int_eq(rmaop_dtype_parse("F64", &d), RMAOP_ERR_ARG); /* names are exact */
}
END_TEST

START_TEST(test_other_names) {
  ck_assert_str_eq(rmaop_sync_name(RMAOP_SYNC_FENCE), "fence");
  ck_assert_str_eq(rmaop_sync_name(RMAOP_SYNC_PSCW), "pscw");
  ck_assert_str_eq(rmaop_sync_name(RMAOP_SYNC_LOCK), "lock");
  ck_assert_str_eq(rmaop_sync_name((rmaop_sync)3), "invalid");
  ck_assert_str_eq(rmaop_transport_name(RMAOP_TRANSPORT_AUTO), "auto");
  ck_assert_str_eq(rmaop_transport_name(RMAOP_TRANSPORT_MPI), "mpi");
  ck_assert_str_eq(rmaop_transport_name(RMAOP_TRANSPORT_SHM), "shm");
  ck_assert_str_eq(rmaop_transport_name(RMAOP_TRANSPORT_IPC), "ipc");
  ck_assert_str_eq(rmaop_transport_name((rmaop_transport)-1), "invalid");
  ck_assert_str_eq(rmaop_memory_name(RMAOP_MEMORY_HOST), "host");
  ck_assert_str_eq(rmaop_memory_name(RMAOP_MEMORY_DEVICE), "device");
  ck_assert_str_eq(rmaop_memory_name((rmaop_memory)2), "invalid");
}
END_TEST

START_TEST(test_backends_available) {
  const char *b = rmaop_backends_available();
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_nonnull(strstr(b, "rma"));
  ck_assert_ptr_nonnull(strstr(b, "twosided"));
  ck_assert_int_eq(strncmp(b, "rma,", 4), 0); /* "rma,twosided[,nccl]": the default first */
}
END_TEST

int main(void) {
  Suite *s = suite_create("dtype");
  TCase *tc = tcase_create("names");
  tcase_add_test(tc, test_sizes);
  tcase_add_test(tc, test_names_round_trip);
  tcase_add_test(tc, test_parse_errors);
  tcase_add_test(tc, test_other_names);
  tcase_add_test(tc, test_backends_available);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
