/* Unit test of the configuration rows (the core's in src/core/config.c, each backend's in its table) and of the README's table of RMAOP_* variables.
 * Reference: the README (path in argv[1]) must list every variable of the table with its default, and
 * must not document a variable the table lacks. Exit 77 (ctest: skipped) when the README is absent. */
#include <check.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

static const char *readme_path;
static char *readme; /* whole file */

START_TEST(test_table_well_formed) {
  ck_assert_ptr_nonnull(rmaop__config_row(0));
  for (int i = 0; rmaop__config_row(i); ++i) {
    const rmaop__config_entry *e = rmaop__config_row(i);
    ck_assert_ptr_nonnull(e->env);
    ck_assert_ptr_nonnull(e->deflt);
    ck_assert_ptr_nonnull(e->values);
    ck_assert_ptr_nonnull(e->help);
    ck_assert_msg(strncmp(e->env, "RMAOP_", 6) == 0, "%s lacks the RMAOP_ prefix", e->env);
    ck_assert_msg(strlen(e->help) > 0, "%s has no help text", e->env);
    for (int j = 0; j < i; ++j)
      ck_assert_msg(strcmp(e->env, rmaop__config_row(j)->env) != 0, "%s twice", e->env);
  }
}
END_TEST

/* The variables the context reads (rmaop.h, rmaop_ctx_create) are all in the table. */
START_TEST(test_table_has_context_variables) {
  const char *needed[] = {"RMAOP_BACKEND", "RMAOP_MEMORY",  "RMAOP_RMA_SYNC", "RMAOP_RMA_TRANSPORT",
                          "RMAOP_TRACE",   "RMAOP_TIMEOUT", "RMAOP_IPC_PATH"};
  const char *defaults[] = {"rma", "host", "lock", "auto", "0", "300", "auto"}; /* rmaop_ctx_options in rmaop.h */
  for (size_t k = 0; k < sizeof needed / sizeof needed[0]; ++k) {
    int found = 0;
    for (int i = 0; rmaop__config_row(i); ++i)
      if (strcmp(rmaop__config_row(i)->env, needed[k]) == 0) {
        found = 1;
        ck_assert_msg(strcmp(rmaop__config_row(i)->deflt, defaults[k]) == 0,
                      "%s defaults to \"%s\", header says \"%s\"", needed[k], rmaop__config_row(i)->deflt,
                      defaults[k]);
      }
    ck_assert_msg(found, "%s is not in the configuration table", needed[k]);
  }
}
END_TEST

/* The README line (a table row, starting with '|') that names `env` as a whole word, or NULL. */
static const char *readme_row(const char *env, char *line, size_t cap) {
  size_t len = strlen(env);
  for (const char *p = readme; (p = strstr(p, env)) != NULL; p += len) {
    if (isalnum((unsigned char)p[len]) || p[len] == '_')
      continue;
    if (p > readme && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
      continue;
    const char *b = p;
    while (b > readme && b[-1] != '\n')
      --b;
    const char *e = strchr(p, '\n');
    if (!e)
      e = p + strlen(p);
    if (*b != '|')
      continue;
    size_t n = (size_t)(e - b) < cap - 1 ? (size_t)(e - b) : cap - 1;
    memcpy(line, b, n);
    line[n] = '\0';
    return line;
  }
  return NULL;
}

START_TEST(test_readme_lists_table) {
  char line[1024];
  for (int i = 0; rmaop__config_row(i); ++i) {
    const rmaop__config_entry *e = rmaop__config_row(i);
    ck_assert_msg(readme_row(e->env, line, sizeof line) != NULL, "%s: no table row names %s", readme_path, e->env);
    if (e->deflt[0])
      ck_assert_msg(strstr(line, e->deflt) != NULL, "%s: the row of %s does not show its default \"%s\": %s",
                    readme_path, e->env, e->deflt, line);
  }
}
END_TEST

START_TEST(test_readme_has_no_unknown_variable) {
  for (const char *p = readme; (p = strstr(p, "RMAOP_")) != NULL;) {
    const char *b = p;
    while (b > readme && b[-1] != '\n')
      --b;
    size_t n = 0;
    while (isupper((unsigned char)p[n]) || isdigit((unsigned char)p[n]) || p[n] == '_')
      ++n;
    if (*b == '|' && n > 6) { /* a table row: every RMAOP_* variable named there must exist */
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)n, p);
      /* RMAOP_WITH_* are CMake options, RMAOP_ERR_* / RMAOP_OK statuses: not environment variables. */
      int other = strncmp(name, "RMAOP_WITH_", 11) == 0 || strncmp(name, "RMAOP_ERR_", 10) == 0 ||
                  strncmp(name, "RMAOP_BUILD_", 12) == 0 || strncmp(name, "RMAOP_WARNINGS", 14) == 0 ||
                  strncmp(name, "RMAOP_HAVE_", 11) == 0;
      int found = other;
      for (int i = 0; rmaop__config_row(i) && !found; ++i)
        found = strcmp(rmaop__config_row(i)->env, name) == 0;
      ck_assert_msg(found, "%s documents %s, which no configuration row (src/core/config.c, the backends' tables) has", readme_path, name);
    }
    p += n ? n : 1;
  }
}
END_TEST

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s)
    s[n] = '\0';
  fclose(f);
  return s;
}

int main(int argc, char **argv) {
  readme_path = argc > 1 ? argv[1] : "README.md";
  readme = slurp(readme_path);
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("table");
  tcase_add_test(tc, test_table_well_formed);
  tcase_add_test(tc, test_table_has_context_variables);
  suite_add_tcase(s, tc);
  if (readme) {
    TCase *tr = tcase_create("readme");
    tcase_add_test(tr, test_readme_lists_table);
    tcase_add_test(tr, test_readme_has_no_unknown_variable);
    suite_add_tcase(s, tr);
  }
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  free(readme);
  if (failed)
    return EXIT_FAILURE;
  if (!readme) {
    printf("README %s not found: the table checks passed, the README checks were skipped\n", readme_path);
    return 77;
  }
  return EXIT_SUCCESS;
}
