/* Reads the trace files that rmaop_trace_write_json() writes ({"rank", "size", "backend", "sites": [...]}),
 * so a user's own solver can be placed on the roofline without this tool running it. */
#include "roofline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void roof_trace_path_name(const char *backend, const char *sync, const char *transport, const char *memory, char *name,
                          size_t len) {
  const char *dev = memory && strcmp(memory, "device") == 0 ? ".device" : "";
  if (strcmp(backend, "rma") == 0)
    snprintf(name, len, "rma.%s.%s%s", sync, transport, dev);
  else
    snprintf(name, len, "%s%s", backend, dev);
}

static int site_str(const json_value *o, const char *key, char *out, size_t len) {
  const json_value *v = json_get(o, key);
  if (!v || v->type != JSON_STRING || strlen(v->string) >= len)
    return -1;
  strcpy(out, v->string);
  return 0;
}

static int site_num(const json_value *o, const char *key, double *out) {
  const json_value *v = json_get(o, key);
  if (!v || v->type != JSON_NUMBER || !(v->number >= 0) || !isfinite(v->number))
    return -1;
  *out = v->number;
  return 0;
}

/* One site object; returns the name of the first bad member, NULL when all is well. */
static const char *parse_site(const json_value *o, roof_site *s) {
  char backend[32], sync[32], transport[32];
  if (o->type != JSON_OBJECT)
    return "(not an object)";
  if (site_str(o, "label", s->label, sizeof s->label))
    return "label";
  if (site_str(o, "kind", s->kind, sizeof s->kind))
    return "kind";
  if (site_str(o, "backend", backend, sizeof backend))
    return "backend";
  if (site_str(o, "transport", transport, sizeof transport))
    return "transport";
  if (site_str(o, "sync", sync, sizeof sync))
    return "sync";
  if (site_num(o, "calls", &s->calls))
    return "calls";
  if (site_num(o, "messages", &s->messages))
    return "messages";
  if (site_num(o, "bytes_per_message", &s->bytes_per_message))
    return "bytes_per_message";
  if (site_num(o, "time_total", &s->time_total))
    return "time_total";
  if (site_num(o, "time_inside", &s->time_inside))
    s->time_inside = 0; /* optional: trace files written before it existed */
  if (site_num(o, "time_inside_median", &s->inside_median))
    s->inside_median = 0; /* likewise */
  if (site_num(o, "calls_add", &s->calls_add))
    s->calls_add = 0; /* likewise: no accumulate extra */
  roof_trace_path_name(backend, sync, transport, "host", s->path, sizeof s->path);
  return NULL;
}

/* Same label and kind: keep the slowest rank's view (max of every number). */
static void merge(roof_site *into, const roof_site *s) {
  into->calls = fmax(into->calls, s->calls);
  into->calls_add = fmax(into->calls_add, s->calls_add);
  into->messages = fmax(into->messages, s->messages);
  into->bytes_per_message = fmax(into->bytes_per_message, s->bytes_per_message);
  into->time_total = fmax(into->time_total, s->time_total);
  into->time_inside = fmax(into->time_inside, s->time_inside);
  into->inside_median = fmax(into->inside_median, s->inside_median);
}

static int add_site(roof_site **sites, int *nsites, const roof_site *s) {
  for (int i = 0; i < *nsites; ++i)
    if (strcmp((*sites)[i].label, s->label) == 0 && strcmp((*sites)[i].kind, s->kind) == 0) {
      merge(&(*sites)[i], s);
      return 0;
    }
  roof_site *grown = realloc(*sites, (size_t)(*nsites + 1) * sizeof *grown);
  if (!grown)
    return -1;
  grown[(*nsites)++] = *s;
  *sites = grown;
  return 0;
}

int roof_trace_read(const char *file, roof_site **sites, int *nsites, char *err, size_t errlen) {
  json_value *root = json_parse_file(file, err, errlen);
  if (!root)
    return -1;
  const json_value *arr = json_get(root, "sites");
  int st = 0;
  if (!arr || arr->type != JSON_ARRAY) {
    roof_set_err(err, errlen, "%s: not an rmaop trace file (no \"sites\" array; write one with rmaop_trace_write_json)",
                 file);
    st = -1;
  }
  for (size_t i = 0; !st && i < arr->count; ++i) {
    roof_site s;
    memset(&s, 0, sizeof s);
    const char *badkey = parse_site(&arr->items[i], &s);
    if (badkey) {
      roof_set_err(err, errlen, "%s: sites[%zu].%s: missing, of the wrong type or negative", file, i, badkey);
      st = -1;
    } else if (add_site(sites, nsites, &s)) {
      roof_set_err(err, errlen, "%s: out of memory", file);
      st = -1;
    }
  }
  json_free(root);
  return st;
}
