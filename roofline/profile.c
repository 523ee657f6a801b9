/* Machine profiles: the probe's raw medians and the fitted model per path, as JSON (format
 * "rmaop-roofline-profile", version 1). The reader accepts exactly what the writer produces (plus extra
 * members, ignored) and names the file and the field of anything missing or malformed. The cold-cache members
 * ("cache" at the top, "cold" per path, with its optional "reduce_curve" and "reduce_curve_same_bytes") and the
 * accumulate point ("accumulate" per path) are optional: profiles of older probes lack them and load with no
 * cold term and no accumulate extra. */
#include "roofline.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_FORMAT "rmaop-roofline-profile"
#define PROFILE_VERSION 1

const char *const roof_host_paths[] = {"rma.fence.shm", "rma.fence.mpi", "rma.pscw.shm", "rma.pscw.mpi",
                                       "rma.lock.shm",  "rma.lock.mpi",  "twosided",     NULL};
const char *const roof_device_paths[] = {"rma.fence.ipc", "rma.fence.mpi", "rma.pscw.ipc",
                                         "rma.pscw.mpi",  "rma.lock.ipc",  "rma.lock.mpi",
                                         "twosided",      "nccl",          NULL};

static int in_list(const char *s, const char *const *list) {
  for (; *list; ++list)
    if (strcmp(s, *list) == 0)
      return 1;
  return 0;
}

static void known_paths(char *buf, size_t len) {
  snprintf(buf, len, "rma.{fence,pscw,lock}.{shm,mpi,ipc}, twosided, nccl; append \".device\" for device memory");
}

int roof_path_parse(const char *name, char *backend, char *sync, char *transport, char *memory, char *err,
                    size_t errlen) {
  char base[ROOF_NAME_MAX], known[160];
  const char *dev = strstr(name, ".device");
  int is_dev = dev && strcmp(dev, ".device") == 0;
  size_t blen = is_dev ? (size_t)(dev - name) : strlen(name);
  known_paths(known, sizeof known);
  if (blen >= sizeof base)
    return roof_set_err(err, errlen, "unknown path \"%s\" (known: %s)", name, known), -1;
  memcpy(base, name, blen);
  base[blen] = 0;
  if (!in_list(base, roof_host_paths) && !in_list(base, roof_device_paths))
    return roof_set_err(err, errlen, "unknown path \"%s\" (known: %s)", name, known), -1;
  strcpy(memory, is_dev ? "device" : "host");
  if (strncmp(base, "rma.", 4) == 0) {
    strcpy(backend, "rma");
    sscanf(base + 4, "%15[^.].%15s", sync, transport);
  } else {
    strcpy(backend, base);
    strcpy(sync, "-");
    strcpy(transport, "-");
  }
  return 0;
}

const roof_path *roof_profile_find(const roof_profile *p, const char *name) {
  for (int i = 0; i < p->npaths; ++i)
    if (strcmp(p->paths[i].name, name) == 0)
      return &p->paths[i];
  return NULL;
}

void roof_profile_free(roof_profile *p) {
  for (int i = 0; i < p->npaths; ++i) {
    free(p->paths[i].points);
    free(p->paths[i].rpoints);
  }
  free(p->paths);
  memset(p, 0, sizeof *p);
}

/* ---- writing ---------------------------------------------------------------------------------------- */

static void write_num(FILE *f, const char *key, double x, int comma) {
  fprintf(f, "\"%s\": ", key);
  json_write_number(f, x);
  if (comma)
    fputs(", ", f);
}

static void write_fit(FILE *f, const roof_fit *fit) {
  fputs("\"fit\": {", f);
  write_num(f, "alpha", fit->alpha, 1);
  fprintf(f, "\"split_on\": \"%s\", \"pieces\": [", fit->split_bytes ? "bytes" : "m");
  for (int i = 0; i < fit->npieces; ++i) {
    fputs(i ? ", {" : "{", f);
    write_num(f, "upto", fit->piece[i].upto, 1); /* the last piece's infinity is written as null */
    write_num(f, "o", fit->piece[i].o, 1);
    write_num(f, "beta", fit->piece[i].beta, 0);
    fputs("}", f);
  }
  fputs("],\n    ", f);
  write_num(f, "rel_median", fit->rel_median, 1);
  write_num(f, "rel_max", fit->rel_max, 1);
  fprintf(f, "\"npoints\": %d, \"quality\": \"%s\"},\n   ", fit->npoints, fit->poor ? "poor" : "good");
  /* Derived numbers for people and scripts; the reader recomputes them from the fit. */
  fputs("\"derived\": {", f);
  write_num(f, "L", roof_latency(fit), 1);
  write_num(f, "ceiling", roof_ceiling(fit), 1);
  write_num(f, "elbow_n1", roof_elbow(fit, 1), 1);
  write_num(f, "elbow_n8", roof_elbow(fit, 8), 1);
  write_num(f, "elbow_n64", roof_elbow(fit, 64), 0);
  fputs("},\n   ", f);
}

static void write_reduce(FILE *f, const roof_path *p) {
  fputs(",\n   \"reduce\": {\"fit\": {", f);
  write_num(f, "alpha", p->rfit.alpha, 1);
  write_num(f, "beta", p->rfit.beta, 1);
  write_num(f, "rel_median", p->rfit.rel_median, 1);
  write_num(f, "rel_max", p->rfit.rel_max, 1);
  fprintf(f, "\"npoints\": %d, \"quality\": \"%s\"}, \"points\": [", p->rfit.npoints, p->rfit.poor ? "poor" : "good");
  for (int i = 0; i < p->nrpoints; ++i)
    fprintf(f, "%s{\"count\": %lld, \"t\": %.9g, \"reps\": %d}", i ? ", " : "", (long long)p->rpoints[i].count,
            p->rpoints[i].t, p->rpoints[i].reps);
  fputs("]}", f);
}

static void write_cold_point(FILE *f, const char *key, const roof_cold_point *c, const char *shape) {
  fprintf(f, "\"%s\": {%s, ", key, shape);
  write_num(f, "warm", c->warm, 1);
  write_num(f, "cold", c->cold, 1);
  write_num(f, "penalty", c->penalty, 1);
  fprintf(f, "\"reps\": %d}", c->reps);
}

static void write_curve_points(FILE *f, const double *bytes, const double *t, int n) {
  for (int i = 0; i < n; ++i)
    fprintf(f, "%s{\"bytes\": %.0f, \"t\": %.9g}", i ? ", " : "", bytes[i], t[i]);
}

/* Written only when measured: a profile without "cold" is one from an older probe (or device memory). */
static void write_cold(FILE *f, const roof_cold *c) {
  if (!c->has_epoch && !c->has_reduce)
    return;
  fputs(",\n   \"cold\": {", f);
  write_num(f, "sweep_bytes", c->sweep_bytes, 0);
  if (c->has_epoch) {
    fputs(", ", f);
    write_cold_point(f, "epoch", &c->epoch, "\"n\": 1, \"m\": 8");
  }
  if (c->has_reduce) {
    fputs(", ", f);
    write_cold_point(f, "reduce", &c->reduce, "\"count\": 1");
  }
  if (c->has_reduce && c->nrcurve > 0) {
    fputs(",\n    \"reduce_curve\": [", f);
    write_curve_points(f, c->rcurve_bytes, c->rcurve_t, c->nrcurve);
    fputs("]", f);
  }
  if (c->has_reduce && c->nscurve > 0) {
    fputs(",\n    \"reduce_curve_same_bytes\": [", f);
    write_curve_points(f, c->scurve_bytes, c->scurve_t, c->nscurve);
    fputs("]", f);
  }
  if (c->has_reduce && c->has_after_epoch) {
    fputs(",\n    ", f);
    write_cold_point(f, "reduce_after_epoch", &c->after_epoch, "\"count\": 1, \"after\": \"8 B epoch\"");
  }
  if (c->has_epoch && c->has_overlap) {
    char shape[160];
    snprintf(shape, sizeof shape, "\"n\": 1, \"m\": 8, \"between_bytes\": %.0f, \"between_seconds\": %.9g",
             c->overlap_bytes, c->overlap_seconds);
    fputs(",\n    ", f);
    write_cold_point(f, "epoch_overlapped", &c->overlap, shape);
  }
  fputs("}", f);
}

/* Written only when measured: older probes did not. */
static void write_add(FILE *f, const roof_add_point *a) {
  if (!a->has)
    return;
  fputs(",\n   \"accumulate\": {\"n\": 1, \"m\": 8, ", f);
  write_num(f, "insert", a->insert, 1);
  write_num(f, "add", a->add, 1);
  write_num(f, "extra", a->extra, 1);
  fprintf(f, "\"reps\": %d}", a->reps);
}

static void write_cache(FILE *f, const roof_cache *c) {
  if (!c->has)
    return;
  fputs(" \"cache\": {", f);
  write_num(f, "llc_bytes", c->llc_bytes, 1);
  fprintf(f, "\"llc_source\": ");
  json_write_string(f, c->llc_source);
  fputs(", ", f);
  write_num(f, "sweep_bytes", c->sweep_bytes, 1);
  fprintf(f, "\"sweep_barriers\": %d, \"curve_path\": ", c->sweep_barriers);
  json_write_string(f, c->curve_path);
  fputs(",\n  ", f);
  write_num(f, "curve_warm", c->curve_warm, 1);
  if (c->share_bytes > 0) {
    write_num(f, "share_cache_bytes", c->share_cache_bytes, 1);
    write_num(f, "share_bytes", c->share_bytes, 1);
    write_num(f, "share_ratio", c->share_ratio, 1);
  }
  fputs("\"curve\": [", f);
  write_curve_points(f, c->curve_bytes, c->curve_t, c->ncurve);
  fputs("],\n  \"rule\": \"a site whose solver touches d bytes per rank between two of its calls pays, per call, the "
        "fraction (t(d) - curve_warm) / (t(sweep_bytes) - curve_warm) of its path's cold penalty (curve t "
        "interpolated in log d, nondecreasing)\"},\n",
        f);
}

static void write_path(FILE *f, const roof_path *p) {
  fputs("  {\"name\": ", f);
  json_write_string(f, p->name);
  /* escaped: the reader takes any string here (only the name is checked) */
  const char *keys[] = {"backend", "sync", "transport", "memory"},
             *vals[] = {p->backend, p->sync, p->transport, p->memory};
  for (int i = 0; i < 4; ++i) {
    fprintf(f, ", \"%s\": ", keys[i]);
    json_write_string(f, vals[i]);
  }
  fputs(",\n   ", f);
  write_fit(f, &p->fit);
  fputs("\"points\": [", f);
  for (int i = 0; i < p->npoints; ++i)
    fprintf(f, "%s{\"n\": %d, \"m\": %.0f, \"t\": %.9g, \"reps\": %d}", i ? ",\n     " : "", p->points[i].n,
            p->points[i].m, p->points[i].t, p->points[i].reps);
  fputs("]", f);
  if (p->has_rfit)
    write_reduce(f, p);
  write_cold(f, &p->cold);
  write_add(f, &p->add);
  fputs("}", f);
}

int roof_profile_write(const roof_profile *p, const char *file, char *err, size_t errlen) {
  FILE *f = fopen(file, "w");
  if (!f)
    return roof_set_err(err, errlen, "cannot write \"%s\": %s", file, strerror(errno)), -1;
  fprintf(f, "{\"format\": \"%s\", \"version\": %d, \"created\": ", PROFILE_FORMAT, PROFILE_VERSION);
  json_write_string(f, p->created);
  fprintf(f, ", \"ranks\": %d, \"memory\": ", p->ranks);
  json_write_string(f, p->memory);
  fprintf(f, ", \"quick\": %s,\n \"pattern\": ", p->quick ? "true" : "false");
  json_write_string(f, p->pattern);
  fputs(",\n \"model\": \"T(n,m) = alpha + n*o + n*m/beta [seconds; beta in bytes/s]; (o, beta) of the first piece "
        "whose upto >= m (split_on m) or n*m (split_on bytes); L = T(1,8)\",\n",
        f);
  write_cache(f, &p->cache);
  fputs(" \"paths\": [\n", f);
  for (int i = 0; i < p->npaths; ++i) {
    write_path(f, &p->paths[i]);
    fputs(i + 1 < p->npaths ? ",\n" : "\n", f);
  }
  fputs(" ]}\n", f);
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  if (bad)
    return roof_set_err(err, errlen, "writing \"%s\" failed", file), -1;
  return 0;
}

/* ---- reading ---------------------------------------------------------------------------------------- */

typedef struct {
  const char *file;
  char *err;
  size_t errlen;
  char where[96]; /* "paths[2].fit" */
} reader;

static int bad(reader *r, const char *key, const char *what) {
  roof_set_err(r->err, r->errlen, "%s: %s%s%s: %s", r->file, r->where, *r->where ? "." : "", key, what);
  return -1;
}

/* A number member; null reads as +infinity only where @p inf_ok (beta of a path with no bandwidth term). */
static int get_num(reader *r, const json_value *o, const char *key, double *out, int inf_ok) {
  const json_value *v = json_get(o, key);
  if (!v)
    return bad(r, key, "missing");
  if (v->type == JSON_NULL && inf_ok)
    return *out = INFINITY, 0;
  if (v->type != JSON_NUMBER)
    return bad(r, key, "not a number");
  *out = v->number;
  return 0;
}

static int get_nonneg(reader *r, const json_value *o, const char *key, double *out, int inf_ok) {
  if (get_num(r, o, key, out, inf_ok))
    return -1;
  if (!(*out >= 0))
    return bad(r, key, "must be >= 0");
  return 0;
}

static int get_int(reader *r, const json_value *o, const char *key, int *out, int min) {
  double d;
  if (get_num(r, o, key, &d, 0))
    return -1;
  if (d != floor(d) || d < min || d > 1e9)
    return bad(r, key, "not an integer in range");
  *out = (int)d;
  return 0;
}

static int get_str(reader *r, const json_value *o, const char *key, char *out, size_t len) {
  const json_value *v = json_get(o, key);
  if (!v)
    return bad(r, key, "missing");
  if (v->type != JSON_STRING)
    return bad(r, key, "not a string");
  if (strlen(v->string) >= len)
    return bad(r, key, "too long");
  strcpy(out, v->string);
  return 0;
}

static const json_value *get_array(reader *r, const json_value *o, const char *key) {
  const json_value *v = json_get(o, key);
  if (!v)
    return bad(r, key, "missing"), NULL;
  if (v->type != JSON_ARRAY)
    return bad(r, key, "not an array"), NULL;
  return v;
}

/* One piece: upto (null only for the last), o >= 0, beta > 0 (null: no bandwidth term). */
static int read_piece(reader *r, const json_value *o, int last, roof_piece *p) {
  const json_value *upto = json_get(o, "upto");
  if (o->type != JSON_OBJECT)
    return bad(r, "pieces", "an item is not an object");
  if (last && upto && upto->type == JSON_NULL)
    p->upto = INFINITY;
  else if (get_nonneg(r, o, "upto", &p->upto, 0))
    return -1;
  if (get_nonneg(r, o, "o", &p->o, 0) || get_nonneg(r, o, "beta", &p->beta, 1))
    return -1;
  if (!(p->beta > 0))
    return bad(r, "beta", "must be > 0");
  return 0;
}

static int read_pieces(reader *r, const json_value *o, roof_fit *f) {
  const json_value *a = get_array(r, o, "pieces"), *so = json_get(o, "split_on");
  if (!a)
    return -1;
  if (a->count < 1 || a->count > ROOF_MAX_PIECES)
    return bad(r, "pieces", "must hold 1 to 3 pieces");
  if (so && (so->type != JSON_STRING || (strcmp(so->string, "m") && strcmp(so->string, "bytes"))))
    return bad(r, "split_on", "neither \"m\" nor \"bytes\"");
  f->split_bytes = so && strcmp(so->string, "bytes") == 0;
  f->npieces = (int)a->count;
  for (int i = 0; i < f->npieces; ++i) {
    if (read_piece(r, &a->items[i], i + 1 == f->npieces, &f->piece[i]))
      return -1;
    if (i > 0 && !(f->piece[i].upto > f->piece[i - 1].upto))
      return bad(r, "pieces", "upto must increase");
  }
  f->piece[f->npieces - 1].upto = INFINITY;
  return 0;
}

static int read_fit(reader *r, const json_value *o, roof_fit *f) {
  if (!o || o->type != JSON_OBJECT)
    return bad(r, "fit", "missing or not an object");
  char quality[16];
  size_t len = strlen(r->where);
  strncat(r->where, ".fit", sizeof r->where - len - 1);
  int st = get_nonneg(r, o, "alpha", &f->alpha, 0) || read_pieces(r, o, f) ||
           get_nonneg(r, o, "rel_median", &f->rel_median, 0) || get_nonneg(r, o, "rel_max", &f->rel_max, 0) ||
           get_int(r, o, "npoints", &f->npoints, 0) || get_str(r, o, "quality", quality, sizeof quality);
  if (!st && strcmp(quality, "good") && strcmp(quality, "poor"))
    st = bad(r, "quality", "neither \"good\" nor \"poor\"");
  f->poor = !st && strcmp(quality, "poor") == 0;
  r->where[len] = 0;
  return st ? -1 : 0;
}

static int read_points(reader *r, const json_value *path, roof_path *p) {
  const json_value *a = get_array(r, path, "points");
  if (!a)
    return -1;
  p->points = calloc(a->count ? a->count : 1, sizeof *p->points);
  if (!p->points)
    return bad(r, "points", "out of memory");
  size_t len = strlen(r->where);
  for (size_t i = 0; i < a->count; ++i) {
    roof_point *q = &p->points[i];
    snprintf(r->where + len, sizeof r->where - len, ".points[%zu]", i);
    if (get_int(r, &a->items[i], "n", &q->n, 1) || get_num(r, &a->items[i], "m", &q->m, 0) ||
        get_num(r, &a->items[i], "t", &q->t, 0) || get_int(r, &a->items[i], "reps", &q->reps, 0))
      return -1;
    if (!(q->m > 0) || !(q->t > 0))
      return bad(r, "t", "m and t must be > 0");
  }
  r->where[len] = 0;
  p->npoints = (int)a->count;
  return 0;
}

static int read_reduce(reader *r, const json_value *red, roof_path *p) {
  const json_value *fit = json_get(red, "fit"), *a = get_array(r, red, "points");
  char quality[16];
  if (!a)
    return -1;
  if (!fit || fit->type != JSON_OBJECT)
    return bad(r, "reduce.fit", "missing or not an object");
  if (get_nonneg(r, fit, "alpha", &p->rfit.alpha, 0) || get_nonneg(r, fit, "beta", &p->rfit.beta, 1) ||
      get_nonneg(r, fit, "rel_median", &p->rfit.rel_median, 0) || get_nonneg(r, fit, "rel_max", &p->rfit.rel_max, 0) ||
      get_int(r, fit, "npoints", &p->rfit.npoints, 0) || get_str(r, fit, "quality", quality, sizeof quality))
    return -1;
  if (!(p->rfit.beta > 0))
    return bad(r, "reduce.fit.beta", "must be > 0");
  p->rfit.poor = strcmp(quality, "good") != 0;
  p->rpoints = calloc(a->count ? a->count : 1, sizeof *p->rpoints);
  if (!p->rpoints)
    return bad(r, "reduce.points", "out of memory");
  for (size_t i = 0; i < a->count; ++i) {
    double count;
    if (get_nonneg(r, &a->items[i], "count", &count, 0) || get_num(r, &a->items[i], "t", &p->rpoints[i].t, 0) ||
        get_int(r, &a->items[i], "reps", &p->rpoints[i].reps, 0))
      return -1;
    if (count != floor(count) || count > 9007199254740992.0) /* 2^53: converts to int64_t exactly */
      return bad(r, "reduce.points.count", "not an integer in range");
    p->rpoints[i].count = (int64_t)count;
  }
  p->nrpoints = (int)a->count;
  p->has_rfit = 1;
  return 0;
}

static int read_cold_point(reader *r, const json_value *o, const char *key, roof_cold_point *c) {
  const json_value *v = json_get(o, key);
  if (!v || v->type != JSON_OBJECT)
    return bad(r, key, "missing or not an object");
  if (get_nonneg(r, v, "warm", &c->warm, 0) || get_nonneg(r, v, "cold", &c->cold, 0) ||
      get_nonneg(r, v, "penalty", &c->penalty, 0) || get_int(r, v, "reps", &c->reps, 0))
    return -1;
  return 0;
}

/* An optional member: *out is NULL when absent or null, the object otherwise; anything else is an error. */
static int optional_object(reader *r, const json_value *parent, const char *key, const json_value **out) {
  const json_value *o = json_get(parent, key);
  *out = o && o->type != JSON_NULL ? o : NULL;
  return *out && o->type != JSON_OBJECT ? bad(r, key, "not an object") : 0;
}

/* A path's optional member @p key (-1: not an object). When present, messages name it from here on: the
 * reader's place gets ".key" appended, and *mark is where to cut it off again. */
static int enter_optional(reader *r, const json_value *path, const char *key, const json_value **o, size_t *mark) {
  if (optional_object(r, path, key, o))
    return -1;
  *mark = strlen(r->where);
  if (*o)
    snprintf(r->where + *mark, sizeof r->where - *mark, ".%s", key);
  return 0;
}

/* A curve's points, array @p key of {"bytes", "t"}: bytes > 0, increasing, and below @p below when that is
 * > 0 (a path's reduction curve ends below its full sweep, which `reduce` holds). */
static int read_curve_points(reader *r, const json_value *o, const char *key, double below, double *bytes, double *t,
                             int *n) {
  const json_value *a = get_array(r, o, key);
  if (!a)
    return -1;
  if (a->count > (below > 0 ? ROOF_MAX_CURVE - 1 : ROOF_MAX_CURVE))
    return bad(r, key, below > 0 ? "more than 15 points" : "more than 16 points");
  for (size_t i = 0; i < a->count; ++i) {
    if (get_nonneg(r, &a->items[i], "bytes", &bytes[i], 0) || get_nonneg(r, &a->items[i], "t", &t[i], 0))
      return -1;
    if (!(bytes[i] > (i ? bytes[i - 1] : 0)))
      return bad(r, key, "bytes must be > 0 and increase");
    if (below > 0 && !(bytes[i] < below))
      return bad(r, key, "bytes must stay below the full sweep (sweep_bytes)");
  }
  *n = (int)a->count;
  return 0;
}

/* Optional (older probes did not measure it): absent leaves the path without a cold penalty. */
static int read_cold(reader *r, const json_value *path, roof_cold *c) {
  const json_value *o;
  size_t len;
  if (enter_optional(r, path, "cold", &o, &len))
    return -1;
  if (!o)
    return 0;
  int st = get_nonneg(r, o, "sweep_bytes", &c->sweep_bytes, 0);
  c->has_epoch = !st && json_get(o, "epoch");
  c->has_reduce = !st && json_get(o, "reduce");
  if (!st && c->has_epoch)
    st = read_cold_point(r, o, "epoch", &c->epoch);
  if (!st && c->has_reduce)
    st = read_cold_point(r, o, "reduce", &c->reduce);
  if (!st && c->has_reduce && json_get(o, "reduce_curve"))
    st = read_curve_points(r, o, "reduce_curve", c->sweep_bytes, c->rcurve_bytes, c->rcurve_t, &c->nrcurve);
  if (!st && c->has_reduce && json_get(o, "reduce_curve_same_bytes"))
    st = read_curve_points(r, o, "reduce_curve_same_bytes", c->sweep_bytes, c->scurve_bytes, c->scurve_t, &c->nscurve);
  c->has_after_epoch = !st && c->has_reduce && json_get(o, "reduce_after_epoch");
  if (c->has_after_epoch)
    st = read_cold_point(r, o, "reduce_after_epoch", &c->after_epoch);
  const json_value *ov = NULL;
  size_t at = 0;
  if (!st && c->has_epoch)
    st = enter_optional(r, o, "epoch_overlapped", &ov, &at);
  c->has_overlap = ov != NULL;
  if (ov) {
    st = read_cold_point(r, o, "epoch_overlapped", &c->overlap) ||
         get_nonneg(r, ov, "between_bytes", &c->overlap_bytes, 0) ||
         get_nonneg(r, ov, "between_seconds", &c->overlap_seconds, 0);
    r->where[at] = 0;
  }
  r->where[len] = 0;
  if (st)
    c->has_epoch = c->has_reduce = c->nrcurve = c->nscurve = c->has_after_epoch = c->has_overlap = 0;
  return st ? -1 : 0;
}

/* Optional (older probes did not measure it): absent leaves the path without an accumulate extra. */
static int read_add(reader *r, const json_value *path, roof_add_point *a) {
  const json_value *o;
  size_t len;
  if (enter_optional(r, path, "accumulate", &o, &len))
    return -1;
  if (!o)
    return 0;
  int st = get_nonneg(r, o, "insert", &a->insert, 0) || get_nonneg(r, o, "add", &a->add, 0) ||
           get_nonneg(r, o, "extra", &a->extra, 0) || get_int(r, o, "reps", &a->reps, 0);
  r->where[len] = 0;
  a->has = !st;
  return st ? -1 : 0;
}

/* Optional, like a path's "cold": without it every site is predicted warm. */
static int read_cache(reader *r, const json_value *root, roof_cache *c) {
  const json_value *o;
  if (optional_object(r, root, "cache", &o))
    return -1;
  if (!o)
    return 0;
  snprintf(r->where, sizeof r->where, "cache");
  int st = get_nonneg(r, o, "llc_bytes", &c->llc_bytes, 0) ||
           get_str(r, o, "llc_source", c->llc_source, sizeof c->llc_source) ||
           get_nonneg(r, o, "sweep_bytes", &c->sweep_bytes, 0) ||
           get_str(r, o, "curve_path", c->curve_path, sizeof c->curve_path) ||
           get_nonneg(r, o, "curve_warm", &c->curve_warm, 0) ||
           read_curve_points(r, o, "curve", 0, c->curve_bytes, c->curve_t, &c->ncurve);
  if (!st && !(c->sweep_bytes > 0))
    st = bad(r, "sweep_bytes", "must be > 0");
  c->sweep_barriers = 3; /* profiles written by older versions of the probe (no sweep_barriers field) */
  if (!st && json_get(o, "sweep_barriers"))
    st = get_int(r, o, "sweep_barriers", &c->sweep_barriers, 0);
  c->share_bytes = c->share_ratio = c->share_cache_bytes = 0; /* older probes (no share_bytes field): not measured */
  if (!st && json_get(o, "share_bytes"))
    st = get_nonneg(r, o, "share_cache_bytes", &c->share_cache_bytes, 0) ||
         get_nonneg(r, o, "share_bytes", &c->share_bytes, 0) || get_nonneg(r, o, "share_ratio", &c->share_ratio, 0);
  r->where[0] = 0;
  c->has = !st;
  return st ? -1 : 0;
}

static int read_path(reader *r, const json_value *o, roof_path *p) {
  char b[16], s[16], t[16], m[16], why[ROOF_ERR_MAX];
  if (o->type != JSON_OBJECT)
    return bad(r, "", "not an object");
  if (get_str(r, o, "name", p->name, sizeof p->name) || get_str(r, o, "backend", p->backend, sizeof p->backend) ||
      get_str(r, o, "sync", p->sync, sizeof p->sync) || get_str(r, o, "transport", p->transport, sizeof p->transport) ||
      get_str(r, o, "memory", p->memory, sizeof p->memory))
    return -1;
  if (roof_path_parse(p->name, b, s, t, m, why, sizeof why))
    return bad(r, "name", why);
  if (read_fit(r, json_get(o, "fit"), &p->fit) || read_points(r, o, p))
    return -1;
  const json_value *red;
  if (optional_object(r, o, "reduce", &red) || (red && read_reduce(r, red, p)))
    return -1;
  return read_cold(r, o, &p->cold) || read_add(r, o, &p->add) ? -1 : 0;
}

static int read_header(reader *r, const json_value *root, roof_profile *p) {
  char format[64];
  int version;
  if (root->type != JSON_OBJECT)
    return bad(r, "(top level)", "not an object");
  if (get_str(r, root, "format", format, sizeof format))
    return -1;
  if (strcmp(format, PROFILE_FORMAT) != 0)
    return bad(r, "format", "not \"" PROFILE_FORMAT "\"");
  if (get_int(r, root, "version", &version, 0))
    return -1;
  if (version != PROFILE_VERSION)
    return bad(r, "version", "unsupported (this tool reads version 1)");
  const json_value *quick = json_get(root, "quick");
  p->quick = quick && quick->type == JSON_BOOL && quick->boolean;
  if (get_int(r, root, "ranks", &p->ranks, 1) || get_str(r, root, "memory", p->memory, sizeof p->memory) ||
      get_str(r, root, "pattern", p->pattern, sizeof p->pattern))
    return -1;
  const json_value *created = json_get(root, "created");
  if (created && created->type == JSON_STRING)
    snprintf(p->created, sizeof p->created, "%s", created->string);
  return 0;
}

int roof_profile_read(const char *file, roof_profile *out, char *err, size_t errlen) {
  reader r = {.file = file, .err = err, .errlen = errlen};
  roof_profile p;
  memset(&p, 0, sizeof p);
  json_value *root = json_parse_file(file, err, errlen);
  if (!root)
    return -1;
  int st = read_header(&r, root, &p);
  if (!st)
    st = read_cache(&r, root, &p.cache);
  const json_value *paths = st ? NULL : get_array(&r, root, "paths");
  if (!st && !paths)
    st = -1;
  if (!st && paths->count == 0)
    st = bad(&r, "paths", "empty: the probe measured no path");
  if (!st && !(p.paths = calloc(paths->count, sizeof *p.paths)))
    st = bad(&r, "paths", "out of memory");
  for (size_t i = 0; !st && i < paths->count; ++i) {
    snprintf(r.where, sizeof r.where, "paths[%zu]", i);
    st = read_path(&r, &paths->items[i], &p.paths[i]);
    p.npaths = (int)i + 1; /* so a failure frees what was read */
  }
  json_free(root);
  if (st) {
    roof_profile_free(&p);
    return -1;
  }
  *out = p;
  return 0;
}
