/* Unit test of the host element kernel rmaop__host_apply (src/core/dtype.c), which every backend's unpack
 * uses. Reference: a plain typed loop, dst[i] = src[i] or dst[i] += src[i], in the dtype's arithmetic. */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"

enum { N = 37 };

static double val(int i, int s) {
  return sin(0.37 * i + s) * pow(10.0, (i * 7 + s) % 9 - 4);
}

#define CHECK_KERNEL(T, dt, MAKE)                                                                                      \
  do {                                                                                                                 \
    T dst[N + 2], src[N + 2], want[N + 2];                                                                             \
    for (int i = 0; i < N + 2; ++i) {                                                                                  \
      dst[i] = MAKE(i, 1);                                                                                             \
      src[i] = MAKE(i, 2);                                                                                             \
    }                                                                                                                  \
    /* ADD on [1, N+1): the guard elements 0 and N+1 stay untouched. */                                                \
    memcpy(want, dst, sizeof want);                                                                                    \
    for (int i = 1; i <= N; ++i)                                                                                       \
      want[i] += src[i];                                                                                               \
    rmaop__host_apply(dt, dst + 1, src + 1, N, RMAOP_ADD);                                                             \
    ck_assert_mem_eq(dst, want, sizeof want);                                                                          \
    /* INSERT */                                                                                                       \
    for (int i = 1; i <= N; ++i)                                                                                       \
      want[i] = src[i];                                                                                                \
    rmaop__host_apply(dt, dst + 1, src + 1, N, RMAOP_INSERT);                                                          \
    ck_assert_mem_eq(dst, want, sizeof want);                                                                          \
    /* n = 0 and negative n touch nothing */                                                                           \
    rmaop__host_apply(dt, dst, src + 3, 0, RMAOP_INSERT);                                                              \
    rmaop__host_apply(dt, dst, src + 3, -5, RMAOP_ADD);                                                                \
    ck_assert_mem_eq(dst, want, sizeof want);                                                                          \
  } while (0)

#define MAKE_F(i, s) ((float)val(i, s))
#define MAKE_D(i, s) (val(i, s))
#define MAKE_CF(i, s) ((float _Complex)(val(i, s) + I * val(i + 100, s)))
#define MAKE_CD(i, s) (val(i, s) + I * val(i + 100, s))

START_TEST(test_f32) {
  CHECK_KERNEL(float, RMAOP_F32, MAKE_F);
}
END_TEST
START_TEST(test_f64) {
  CHECK_KERNEL(double, RMAOP_F64, MAKE_D);
}
END_TEST
START_TEST(test_c64) {
  CHECK_KERNEL(float _Complex, RMAOP_C64, MAKE_CF);
}
END_TEST
START_TEST(test_c128) {
  CHECK_KERNEL(double _Complex, RMAOP_C128, MAKE_CD);
}
END_TEST

int main(void) {
  Suite *s = suite_create("host_kernels");
  TCase *tc = tcase_create("apply");
  tcase_add_test(tc, test_f32);
  tcase_add_test(tc, test_f64);
  tcase_add_test(tc, test_c64);
  tcase_add_test(tc, test_c128);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
