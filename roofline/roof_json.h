/* rmaop-roofline: a small JSON reader (DOM) and writing helpers (json.c).
 * Part of the tool's core; roofline.h includes every part. */
#ifndef RMAOP_ROOFLINE_ROOF_JSON_H
#define RMAOP_ROOFLINE_ROOF_JSON_H

#include <stddef.h>
#include <stdio.h>

/* ---------------------------------------------------------------------------------------------------- */
/* JSON: a small DOM reader for the tool's own files (profiles, rmaop trace files) and writing helpers.  */
/* ---------------------------------------------------------------------------------------------------- */

typedef enum { JSON_NULL = 0, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
  json_type type;
  int boolean;
  double number;
  char *string;             /* JSON_STRING (NUL-terminated; embedded NULs are rejected) */
  size_t count;             /* items of an array, members of an object */
  struct json_value *items; /* array items / object member values */
  char **keys;              /* object member names */
} json_value;

/* Parses @p text (NUL-terminated). On failure returns NULL and writes "line L, column C: why" into @p err. */
json_value *json_parse(const char *text, char *err, size_t errlen);
/* Reads and parses a file; errors name the file. */
json_value *json_parse_file(const char *path, char *err, size_t errlen);
void json_free(json_value *v);
/* Member @p key of an object (NULL when absent or when @p obj is not an object). */
const json_value *json_get(const json_value *obj, const char *key);
/* Writes @p s as a JSON string literal (quotes, escapes). */
void json_write_string(FILE *f, const char *s);
/* Writes a number; non-finite values become null (JSON has no infinity). */
void json_write_number(FILE *f, double x);

#endif
