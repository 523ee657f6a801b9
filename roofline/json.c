/* A minimal JSON reader (RFC 8259) for the tool's own files: profiles and rmaop trace files. It builds a
 * small tree, rejects anything malformed with "line L, column C: why", and limits nesting so hostile input
 * cannot exhaust the stack. Writing is a few helpers; the callers print the structure themselves. */
#include "roofline.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_FILE (256u << 20) /* profiles and traces are kilobytes; refuse to slurp anything absurd */

typedef struct {
  const char *text, *p;
  char *err;
  size_t errlen;
  int failed;
} parser;

void roof_set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Records the first error only, with the line and column of the parser's position. */
static void fail(parser *ps, const char *why) {
  if (ps->failed)
    return;
  ps->failed = 1;
  int line = 1, col = 1;
  for (const char *c = ps->text; c < ps->p; ++c) {
    if (*c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  roof_set_err(ps->err, ps->errlen, "line %d, column %d: %s", line, col, why);
}

static void skip_ws(parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
    ++ps->p;
}

static int parse_value(parser *ps, json_value *v, int depth);

static int hex4(const char *s, unsigned *out) {
  unsigned u = 0;
  for (int i = 0; i < 4; ++i) {
    char c = s[i];
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                        : 16u;
    if (d > 15)
      return -1;
    u = u * 16 + d;
  }
  *out = u;
  return 0;
}

static size_t utf8_put(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* \uXXXX (with a surrogate pair when needed) at ps->p (just after the 'u'); appends UTF-8 to *o. */
static int parse_unicode(parser *ps, char **o) {
  unsigned cp, lo;
  if (hex4(ps->p, &cp))
    return fail(ps, "bad \\u escape (4 hex digits expected)"), -1;
  ps->p += 4;
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (ps->p[0] != '\\' || ps->p[1] != 'u' || hex4(ps->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
      return fail(ps, "unpaired UTF-16 surrogate in \\u escape"), -1;
    ps->p += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
    return fail(ps, "unpaired UTF-16 surrogate in \\u escape"), -1;
  }
  if (cp == 0)
    return fail(ps, "\\u0000 is not allowed in strings here"), -1;
  *o += utf8_put(*o, cp);
  return 0;
}

static int parse_escape(parser *ps, char **o) {
  char c = *ps->p++;
  const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
  const char *hit = c ? strchr(from, c) : NULL;
  if (hit) {
    *(*o)++ = to[hit - from];
    return 0;
  }
  if (c == 'u')
    return parse_unicode(ps, o);
  --ps->p;
  fail(ps, "unknown escape in string");
  return -1;
}

/* A string literal at ps->p (on the opening quote). The decoded text is never longer than the literal. */
static char *parse_string(parser *ps) {
  const char *start = ++ps->p;
  size_t cap = 1;
  for (const char *c = start; *c && *c != '"'; ++c)
    cap += (*c == '\\' && c[1]) ? (++c, 2) : 1;
  char *out = malloc(cap + 4), *o = out;
  if (!out)
    return fail(ps, "out of memory"), NULL;
  while (*ps->p != '"') {
    unsigned char c = (unsigned char)*ps->p;
    if (c == 0)
      return free(out), fail(ps, "unterminated string"), NULL;
    if (c < 0x20)
      return free(out), fail(ps, "control character in string (escape it)"), NULL;
    ++ps->p;
    if (c == '\\') {
      if (parse_escape(ps, &o))
        return free(out), NULL;
    } else {
      *o++ = (char)c;
    }
  }
  ++ps->p;
  *o = 0;
  return out;
}

/* Checks the RFC 8259 number grammar before strtod, which would accept "inf", "0x10", ".5" or "1.". */
static int parse_number(parser *ps, json_value *v) {
  const char *s = ps->p, *c = s;
  if (*c == '-')
    ++c;
  if (*c == '0')
    ++c;
  else if (*c >= '1' && *c <= '9')
    while (*c >= '0' && *c <= '9')
      ++c;
  else
    return fail(ps, "invalid number"), -1;
  if (*c == '.') {
    if (!(*++c >= '0' && *c <= '9'))
      return ps->p = c, fail(ps, "digit expected after '.'"), -1;
    while (*c >= '0' && *c <= '9')
      ++c;
  }
  if (*c == 'e' || *c == 'E') {
    ++c;
    if (*c == '+' || *c == '-')
      ++c;
    if (!(*c >= '0' && *c <= '9'))
      return ps->p = c, fail(ps, "digit expected in exponent"), -1;
    while (*c >= '0' && *c <= '9')
      ++c;
  }
  errno = 0;
  v->type = JSON_NUMBER;
  v->number = strtod(s, NULL);
  if (errno == ERANGE && isinf(v->number))
    return fail(ps, "number out of range"), -1;
  ps->p = c;
  return 0;
}

static int literal(parser *ps, const char *word, json_value *v, json_type t, int b) {
  size_t n = strlen(word);
  if (strncmp(ps->p, word, n) != 0)
    return fail(ps, "unexpected character (expected a value)"), -1;
  ps->p += n;
  v->type = t;
  v->boolean = b;
  return 0;
}

/* Grows the items (and keys) arrays of an array/object by doubling. */
static int push(parser *ps, json_value *v, size_t *cap, int with_key) {
  if (v->count < *cap)
    return 0;
  size_t nc = *cap ? 2 * *cap : 8;
  json_value *items = realloc(v->items, nc * sizeof *items);
  if (!items)
    return fail(ps, "out of memory"), -1;
  v->items = items;
  if (with_key) {
    char **keys = realloc(v->keys, nc * sizeof *keys);
    if (!keys)
      return fail(ps, "out of memory"), -1;
    v->keys = keys;
  }
  *cap = nc;
  return 0;
}

static int parse_array(parser *ps, json_value *v, int depth) {
  size_t cap = 0;
  v->type = JSON_ARRAY;
  ++ps->p;
  skip_ws(ps);
  if (*ps->p == ']')
    return ++ps->p, 0;
  for (;;) {
    if (push(ps, v, &cap, 0))
      return -1;
    json_value *item = &v->items[v->count];
    memset(item, 0, sizeof *item);
    ++v->count; /* counted before parsing so a failure frees what the item already holds */
    if (parse_value(ps, item, depth + 1))
      return -1;
    skip_ws(ps);
    if (*ps->p == ',') {
      ++ps->p;
      continue;
    }
    if (*ps->p == ']')
      return ++ps->p, 0;
    return fail(ps, "expected ',' or ']' in array"), -1;
  }
}

static int parse_member(parser *ps, json_value *v, size_t *cap, int depth) {
  skip_ws(ps);
  if (*ps->p != '"')
    return fail(ps, "expected a string key in object"), -1;
  if (push(ps, v, cap, 1))
    return -1;
  char *key = parse_string(ps);
  if (!key)
    return -1;
  json_value *item = &v->items[v->count];
  memset(item, 0, sizeof *item);
  v->keys[v->count++] = key;
  skip_ws(ps);
  if (*ps->p != ':')
    return fail(ps, "expected ':' after object key"), -1;
  ++ps->p;
  return parse_value(ps, item, depth + 1);
}

static int parse_object(parser *ps, json_value *v, int depth) {
  size_t cap = 0;
  v->type = JSON_OBJECT;
  ++ps->p;
  skip_ws(ps);
  if (*ps->p == '}')
    return ++ps->p, 0;
  for (;;) {
    if (parse_member(ps, v, &cap, depth))
      return -1;
    skip_ws(ps);
    if (*ps->p == ',') {
      ++ps->p;
      continue;
    }
    if (*ps->p == '}')
      return ++ps->p, 0;
    return fail(ps, "expected ',' or '}' in object"), -1;
  }
}

static int parse_value(parser *ps, json_value *v, int depth) {
  if (depth > JSON_MAX_DEPTH)
    return fail(ps, "nesting deeper than 64 levels"), -1;
  skip_ws(ps);
  switch (*ps->p) {
  case '{':
    return parse_object(ps, v, depth);
  case '[':
    return parse_array(ps, v, depth);
  case '"':
    v->type = JSON_STRING;
    v->string = parse_string(ps);
    return v->string ? 0 : -1;
  case 't':
    return literal(ps, "true", v, JSON_BOOL, 1);
  case 'f':
    return literal(ps, "false", v, JSON_BOOL, 0);
  case 'n':
    return literal(ps, "null", v, JSON_NULL, 0);
  case '\0':
    return fail(ps, "unexpected end of input (expected a value)"), -1;
  default:
    return parse_number(ps, v);
  }
}

static void free_members(json_value *v) {
  for (size_t i = 0; i < v->count; ++i) {
    free_members(&v->items[i]);
    if (v->keys)
      free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
}

void json_free(json_value *v) {
  if (!v)
    return;
  free_members(v);
  free(v);
}

json_value *json_parse(const char *text, char *err, size_t errlen) {
  parser ps = {.text = text, .p = text, .err = err, .errlen = errlen};
  json_value *v = calloc(1, sizeof *v);
  if (!text || !v) {
    free(v);
    roof_set_err(err, errlen, "%s", text ? "out of memory" : "no input");
    return NULL;
  }
  if (parse_value(&ps, v, 0) == 0) {
    skip_ws(&ps);
    if (*ps.p)
      fail(&ps, "unexpected text after the JSON value");
  }
  if (ps.failed) {
    json_free(v);
    return NULL;
  }
  return v;
}

/* Reads a whole file; NULL with a message naming the file on any failure. */
static char *slurp(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return roof_set_err(err, errlen, "cannot open \"%s\": %s", path, strerror(errno)), NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (n + 1 >= cap) {
      char *grown = cap >= JSON_MAX_FILE ? NULL : realloc(buf, cap * 2);
      if (!grown) {
        free(buf);
        buf = NULL;
        roof_set_err(err, errlen, "\"%s\" is too large or memory ran out", path);
        break;
      }
      buf = grown;
      cap *= 2;
    }
    errno = 0;
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0)
      break;
  }
  if (buf && ferror(f)) {
    free(buf);
    buf = NULL;
    roof_set_err(err, errlen, "cannot read \"%s\": %s", path, strerror(errno));
  }
  fclose(f);
  if (!buf)
    return NULL;
  buf[n] = 0;
  if (strlen(buf) != n)
    return free(buf), roof_set_err(err, errlen, "\"%s\" contains NUL bytes: not JSON", path), NULL;
  return buf;
}

json_value *json_parse_file(const char *path, char *err, size_t errlen) {
  char *text = slurp(path, err, errlen);
  if (!text)
    return NULL;
  char why[ROOF_ERR_MAX];
  json_value *v = json_parse(text, why, sizeof why);
  free(text);
  if (!v)
    roof_set_err(err, errlen, "\"%s\" is not valid JSON: %s", path, why);
  return v;
}

const json_value *json_get(const json_value *obj, const char *key) {
  if (!obj || obj->type != JSON_OBJECT)
    return NULL;
  for (size_t i = 0; i < obj->count; ++i)
    if (strcmp(obj->keys[i], key) == 0)
      return &obj->items[i];
  return NULL;
}

void json_write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

void json_write_number(FILE *f, double x) {
  if (isfinite(x))
    fprintf(f, "%.9g", x);
  else
    fputs("null", f);
}
