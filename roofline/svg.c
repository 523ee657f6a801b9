/* SVG plots, drawn the way Ding et al. (SC'23 workshops) and their Message-Roofline-Model repository draw
 * the message roofline: log-log, x = bytes per message, y = GB/s, one horizontal ceiling per path, one
 * latency diagonal n*s/L per message count. Added here: the fitted roof L + n*max(o, s/beta) (the per-message
 * cost the pure model ignores) and the trace sites with a line up to what their path attains.
 * Plain SVG 1.1, no scripts or external fonts, so any viewer (and rsvg-convert) renders it. */
#include "roofline.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#define GB 1e9

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
#define NCOLORS (int)(sizeof palette / sizeof *palette)
static const double diag_n[] = {1, 8, 64};
static const char *const diag_dash[] = {"1,3", "5,3", "12,4"};

/* A log-log frame: data range -> pixel box. */
typedef struct {
  double lx0, lx1, ly0, ly1; /* log10 of the data range */
  double px0, px1, py0, py1; /* pixel box (py0 top) */
} frame;

static double fx(const frame *fr, double x) {
  return fr->px0 + (log10(x) - fr->lx0) / (fr->lx1 - fr->lx0) * (fr->px1 - fr->px0);
}
static double fy(const frame *fr, double y) {
  return fr->py1 - (log10(y) - fr->ly0) / (fr->ly1 - fr->ly0) * (fr->py1 - fr->py0);
}
/* log10 of a range end, kept finite: the axes step through every decade between the ends, so an infinite end
 * (a bound past DBL_MAX, or 0 from a denormal halved) would never finish. */
static double range_log10(double v) {
  return log10(fmin(fmax(v, DBL_MIN), DBL_MAX));
}
static int inside_y(const frame *fr, double y) {
  return y > 0 && isfinite(y) && log10(y) >= fr->ly0 - 1e-9 && log10(y) <= fr->ly1 + 1e-9;
}

static void text_escaped(FILE *f, const char *s) {
  for (; *s; ++s) {
    switch (*s) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      fputc(*s, f);
    }
  }
}

static void text(FILE *f, double x, double y, const char *anchor, int size, const char *extra, const char *s) {
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s%s>", x, y, anchor, size,
          extra ? " " : "", extra ? extra : "");
  text_escaped(f, s);
  fputs("</text>\n", f);
}

static void header(FILE *f, int w, int h) {
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
          w, h, w, h);
  fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w, h);
}

/* Gridlines, ticks and labels of a frame: x at powers of 8 bytes (8 B, 64 B, 512 B, ...), y at decades. */
static void axes(FILE *f, const frame *fr, const char *xlabel, const char *ylabel) {
  const double l8 = log10(8.0);
  char buf[32];
  fprintf(f, "<g class=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\">\n");
  for (double e = ceil(fr->ly0 - 1e-9); e <= fr->ly1 + 1e-9; e += 1)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", fr->px0, fy(fr, pow(10, e)), fr->px1,
            fy(fr, pow(10, e)));
  for (double e = ceil(fr->lx0 / l8 - 1e-9); e * l8 <= fr->lx1 + 1e-9; e += 1)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", fx(fr, pow(8, e)), fr->py0,
            fx(fr, pow(8, e)), fr->py1);
  fprintf(f, "</g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n",
          fr->px0, fr->py0, fr->px1 - fr->px0, fr->py1 - fr->py0);
  fprintf(f, "<g class=\"ticks\">\n");
  for (double e = ceil(fr->ly0 - 1e-9); e <= fr->ly1 + 1e-9; e += 1) {
    snprintf(buf, sizeof buf, "%g", pow(10, e));
    text(f, fr->px0 - 6, fy(fr, pow(10, e)) + 4, "end", 11, NULL, buf);
  }
  for (double e = ceil(fr->lx0 / l8 - 1e-9); e * l8 <= fr->lx1 + 1e-9; e += 1) {
    roof_format_bytes(pow(8, e), buf, sizeof buf);
    text(f, fx(fr, pow(8, e)), fr->py1 + 16, "middle", 11, NULL, buf);
  }
  fprintf(f, "</g>\n");
  text(f, 0.5 * (fr->px0 + fr->px1), fr->py1 + 36, "middle", 13, "class=\"xlabel\"", xlabel);
  char rot[120];
  snprintf(rot, sizeof rot, "class=\"ylabel\" transform=\"rotate(-90 %.1f %.1f)\"", fr->px0 - 52,
           0.5 * (fr->py0 + fr->py1));
  text(f, fr->px0 - 52, 0.5 * (fr->py0 + fr->py1), "middle", 13, rot, ylabel);
}

/* A curve y(x) sampled log-uniformly up to @p xmax, cut where it leaves the frame's y range. */
typedef double (*curve_fn)(const roof_fit *fit, double n, double s);

static void curve(FILE *f, const frame *fr, const roof_fit *fit, double n, curve_fn g, double scale, double xmax,
                  const char *style) {
  int open = 0;
  double lx1 = fmin(log10(xmax), fr->lx1);
  for (int i = 0; i <= 240 && lx1 > fr->lx0; ++i) {
    double x = pow(10, fr->lx0 + (lx1 - fr->lx0) * i / 240.0), y = g(fit, n, x) * scale;
    if (!inside_y(fr, y)) {
      if (open)
        fprintf(f, "\"/>\n");
      open = 0;
      continue;
    }
    if (!open)
      fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
    fprintf(f, "%.1f,%.1f ", fx(fr, x), fy(fr, y));
    open = 1;
  }
  if (open)
    fprintf(f, "\"/>\n");
}

/* The latency diagonal stops where it meets the ceiling (NaN ends the polyline). */
static double pure_diag(const roof_fit *fit, double n, double s) {
  return s <= roof_elbow(fit, n) * (1 + 1e-9) ? n * s / roof_latency(fit) : NAN;
}
/* The ceiling seen by single-message epochs (a step at the split). */
static double beta_at(const roof_fit *fit, double n, double s) {
  return (void)n, roof_beta_at(fit, 1, s);
}
static double model_us(const roof_fit *fit, double n, double m) {
  return roof_time(fit, n, m) * 1e6;
}

static int finish(FILE *f, const char *file, char *err, size_t errlen) {
  fputs("</svg>\n", f);
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  if (bad)
    return roof_set_err(err, errlen, "writing \"%s\" failed", file), -1;
  return 0;
}

/* ---- the message roofline of a run -------------------------------------------------------------------- */

static void roof_range(const roof_run *runs, int nruns, const roof_profile *prof, frame *fr) {
  double xlo = 8, xhi = 64.0 * 1024 * 1024, ylo = INFINITY, yhi = 0;
  for (int k = 0; k < nruns; ++k)
    for (int i = 0; i < runs[k].nsites; ++i) {
      const roof_analysis *a = &runs[k].an[i];
      if (a->site->bytes_per_message <= 0 || a->achieved <= 0)
        continue;
      xlo = fmin(xlo, a->site->bytes_per_message / 2);
      xhi = fmax(xhi, a->site->bytes_per_message * 2);
      ylo = fmin(ylo, a->achieved / GB);
      yhi = fmax(yhi, a->achieved / GB);
    }
  for (int j = 0; j < prof->npaths; ++j) {
    const roof_fit *fit = &prof->paths[j].fit;
    ylo = fmin(ylo, roof_fitted_bw(fit, 1, xlo) / GB);
    if (isfinite(roof_ceiling(fit)))
      yhi = fmax(yhi, roof_ceiling(fit) / GB);
    for (int i = 0; i < fit->npieces; ++i)
      if (isfinite(fit->piece[i].beta))
        yhi = fmax(yhi, fit->piece[i].beta / GB);
  }
  if (!(ylo > 0) || !isfinite(ylo))
    ylo = 1e-4;
  if (!(yhi > ylo) || !isfinite(yhi))
    yhi = ylo * 1e4;
  fr->lx0 = range_log10(xlo);
  fr->lx1 = range_log10(xhi);
  fr->ly0 = floor(range_log10(ylo) - 0.2);
  fr->ly1 = ceil(range_log10(yhi) + 0.2);
}

/* Per path: ceiling (dashed; a step where the fit split), diagonals n = 1, 8, 64 up to their elbow, and the
 * fitted roof for n = 1 (solid). */
static void draw_path(FILE *f, const frame *fr, const roof_path *p, const char *color, int first) {
  const roof_fit *fit = &p->fit;
  char style[160];
  fprintf(f, "<g class=\"path\" id=\"path-%s\">\n", p->name);
  snprintf(style, sizeof style, "class=\"ceiling\" stroke=\"%s\" stroke-width=\"1.6\" stroke-dasharray=\"8,4\"", color);
  curve(f, fr, fit, 1, beta_at, 1 / GB, pow(10, fr->lx1), style);
  for (int d = 0; d < 3; ++d) {
    double elbow = roof_elbow(fit, diag_n[d]);
    snprintf(style, sizeof style,
             "class=\"diagonal\" stroke=\"%s\" stroke-width=\"1\" stroke-opacity=\"0.75\" stroke-dasharray=\"%s\"",
             color, diag_dash[d]);
    curve(f, fr, fit, diag_n[d], pure_diag, 1 / GB, elbow, style);
    if (first && log10(elbow) > fr->lx0 && log10(elbow) < fr->lx1 && inside_y(fr, roof_ceiling(fit) / GB)) {
      char lab[16];
      snprintf(lab, sizeof lab, "n=%g", diag_n[d]);
      text(f, fx(fr, elbow) - 4, fy(fr, roof_ceiling(fit) / GB) + 14, "end", 11, "fill=\"#444444\"", lab);
    }
  }
  snprintf(style, sizeof style, "class=\"fitted-roof\" stroke=\"%s\" stroke-width=\"2.2\"", color);
  curve(f, fr, fit, 1, roof_fitted_bw, 1 / GB, pow(10, fr->lx1), style);
  fputs("</g>\n", f);
}

static int path_index(const roof_profile *prof, const char *name) {
  for (int j = 0; j < prof->npaths; ++j)
    if (strcmp(prof->paths[j].name, name) == 0)
      return j;
  return -1;
}

/* Labels already placed (pixel boxes), so a new one moves down until it overlaps none. */
typedef struct {
  double x0[64], y0[64], x1[64], y1[64];
  int n;
} label_boxes;

static double place_label(label_boxes *b, double x, double y, double w) {
  for (int tries = 0; tries < 12; ++tries, y += 13) {
    int clash = 0;
    for (int i = 0; i < b->n && !clash; ++i)
      clash = x < b->x1[i] && x + w > b->x0[i] && y - 11 < b->y1[i] && y + 2 > b->y0[i];
    if (!clash)
      break;
  }
  if (b->n < 64) {
    b->x0[b->n] = x, b->x1[b->n] = x + w, b->y0[b->n] = y - 11, b->y1[b->n] = y + 2;
    ++b->n;
  }
  return y;
}

/* A site: a marker in its path's colour (circle plan, square reduce), a dotted line to its path's fitted
 * roof at its n (the gap is 1/E), and its label the first time the label appears. */
static void draw_site(FILE *f, const frame *fr, const roof_analysis *a, const roof_profile *prof, int label_it,
                      label_boxes *boxes) {
  const roof_site *s = a->site;
  if (s->bytes_per_message <= 0 || a->achieved <= 0)
    return;
  int j = path_index(prof, s->path);
  const char *color = j >= 0 ? palette[j % NCOLORS] : "#000000";
  double x = fx(fr, s->bytes_per_message), y = fy(fr, a->achieved / GB);
  fprintf(f, "<g class=\"site\">\n");
  if (a->home >= 0 && inside_y(fr, a->on[a->home].fitted_bw / GB))
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"2,2\"/>\n", x, y,
            x, fy(fr, a->on[a->home].fitted_bw / GB), color);
  if (strcmp(s->kind, "reduce") == 0)
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"%s\" stroke=\"black\"/>\n", x - 4.5,
            y - 4.5, color);
  else
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" stroke=\"black\"/>\n", x, y, color);
  if (label_it) {
    char lab[ROOF_LABEL_MAX + 48];
    snprintf(lab, sizeof lab, "%s (%s, n=%g)", s->label, s->kind, s->messages);
    text(f, x + 8, place_label(boxes, x + 8, y - 7, 6.2 * (double)strlen(lab)), "start", 11, "class=\"site-label\"",
         lab);
  }
  fputs("</g>\n", f);
}

static void legend(FILE *f, const roof_profile *prof, double x, double y) {
  static const char *const key[] = {"solid: fitted roof for n = 1,",
                                    "   n s / (L + n max(o, s/\xce\xb2))",
                                    "long dashes: ceiling \xce\xb2 (n = 1; per piece,",
                                    "   small to large epochs)",
                                    "diagonals n s / L for n = 1, 8, 64",
                                    "   (dots, short, long dashes)",
                                    "\xe2\x97\x8f plan site  \xe2\x96\xa0 reduce site",
                                    "   colour: the path it ran on;",
                                    "   dotted: up to that path's roof"};
  fprintf(f, "<g class=\"legend\">\n");
  text(f, x, y, "start", 13, "font-weight=\"bold\"", "paths: ceiling \xce\xb2, latency L");
  for (int j = 0; j < prof->npaths; ++j) {
    const roof_fit *fit = &prof->paths[j].fit;
    char lab[160];
    double yy = y + 22 + 32 * j;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n", x, yy - 4,
            x + 24, yy - 4, palette[j % NCOLORS]);
    snprintf(lab, sizeof lab, "%s%s", prof->paths[j].name, fit->poor ? "  (fit: poor)" : "");
    text(f, x + 30, yy, "start", 12, fit->poor ? "fill=\"#b00000\"" : NULL, lab);
    int n = snprintf(lab, sizeof lab, "\xce\xb2 =");
    for (int i = 0; i < fit->npieces; ++i)
      n += snprintf(lab + n, sizeof lab - (size_t)n, "%s%.3g", i ? " / " : " ", fit->piece[i].beta / GB);
    snprintf(lab + n, sizeof lab - (size_t)n, " GB/s, L = %.3g us", roof_latency(fit) * 1e6);
    text(f, x + 30, yy + 13, "start", 11, "fill=\"#444444\"", lab);
  }
  double ky = y + 32 * prof->npaths + 40;
  text(f, x, ky, "start", 13, "font-weight=\"bold\"", "key");
  for (size_t i = 0; i < sizeof key / sizeof *key; ++i) { /* SVG collapses spaces: indent by position */
    size_t indent = strspn(key[i], " ");
    text(f, x + 4.0 * (double)indent, ky + 18 + 15 * (double)i, "start", 11, NULL, key[i] + indent);
  }
  fprintf(f, "</g>\n");
}

int roof_svg_roofline(const char *file, const roof_run *runs, int nruns, const roof_profile *prof, char *err,
                      size_t errlen) {
  FILE *f = fopen(file, "w");
  if (!f)
    return roof_set_err(err, errlen, "cannot write \"%s\": %s", file, strerror(errno)), -1;
  frame fr = {.px0 = 90, .px1 = 820, .py0 = 70, .py1 = 660};
  char sub[240];
  roof_range(runs, nruns, prof, &fr);
  header(f, 1120, 730);
  text(f, 455, 28, "middle", 17, "font-weight=\"bold\"", "Message roofline (rmaop-roofline)");
  snprintf(sub, sizeof sub,
           "%d ranks, %s memory; model of Ding, Haseeb, Groves, Williams (SC'23 workshops); "
           "sites measured inside rmaop's calls",
           prof->ranks, prof->memory);
  text(f, 455, 48, "middle", 11, "fill=\"#444444\"", sub);
  axes(f, &fr, "bytes per message", "bandwidth (GB/s)");
  for (int j = 0; j < prof->npaths; ++j)
    draw_path(f, &fr, &prof->paths[j], palette[j % NCOLORS], j == 0);
  label_boxes boxes = {.n = 0};
  for (int k = 0; k < nruns; ++k)
    for (int i = 0; i < runs[k].nsites; ++i) {
      int first = 1; /* the runs on other paths repeat the same labels: name each once */
      for (int kk = 0; kk < k && first; ++kk)
        for (int ii = 0; ii < runs[kk].nsites && first; ++ii)
          first = strcmp(runs[kk].sites[ii].label, runs[k].sites[i].label) != 0;
      draw_site(f, &fr, &runs[k].an[i], prof, first, &boxes);
    }
  legend(f, prof, 840, 80);
  return finish(f, file, err, errlen);
}

/* ---- probe data against the fit: one panel per path ------------------------------------------------- */

static void probe_range(const roof_profile *prof, frame *fr) {
  double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
  for (int j = 0; j < prof->npaths; ++j)
    for (int i = 0; i < prof->paths[j].npoints; ++i) {
      const roof_point *q = &prof->paths[j].points[i];
      xlo = fmin(xlo, q->m);
      xhi = fmax(xhi, q->m);
      ylo = fmin(ylo, q->t * 1e6);
      yhi = fmax(yhi, q->t * 1e6);
    }
  if (!(xhi > 0))
    xlo = 8, xhi = 1 << 20, ylo = 1, yhi = 1e3;
  fr->lx0 = range_log10(xlo) - 0.1;
  fr->lx1 = range_log10(xhi) + 0.1;
  fr->ly0 = floor(range_log10(ylo));
  fr->ly1 = ceil(range_log10(yhi));
  if (fr->ly1 <= fr->ly0)
    fr->ly1 = fr->ly0 + 1;
}

static void probe_panel(FILE *f, const roof_path *p, frame fr, const int *ns, int nn) {
  char title[240];
  axes(f, &fr, "bytes per message", "time per epoch (us)");
  snprintf(title, sizeof title, "%s%s", p->name, p->fit.poor ? "  (fit: poor)" : "");
  text(f, fr.px0, fr.py0 - 24, "start", 13,
       p->fit.poor ? "font-weight=\"bold\" fill=\"#b00000\"" : "font-weight=\"bold\"", title);
  snprintf(title, sizeof title, "\xce\xb1=%.3g us  o=%.3g us  \xce\xb2=%.3g GB/s%s  rel. resid. median %.2f max %.2f",
           p->fit.alpha * 1e6, p->fit.piece[0].o * 1e6, p->fit.piece[0].beta / GB,
           p->fit.npieces > 1 ? " (+pieces)" : "", p->fit.rel_median, p->fit.rel_max);
  text(f, fr.px0, fr.py0 - 8, "start", 10, "fill=\"#444444\"", title);
  for (int c = 0; c < nn; ++c) {
    char style[96];
    snprintf(style, sizeof style, "class=\"fit\" stroke=\"%s\" stroke-width=\"1.5\"", palette[c % NCOLORS]);
    curve(f, &fr, &p->fit, ns[c], model_us, 1, pow(10, fr.lx1), style);
    for (int i = 0; i < p->npoints; ++i)
      if (p->points[i].n == ns[c] && inside_y(&fr, p->points[i].t * 1e6))
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"%s\"/>\n", fx(&fr, p->points[i].m),
                fy(&fr, p->points[i].t * 1e6), palette[c % NCOLORS]);
  }
}

/* Distinct message counts over all paths, ascending (they share colours across panels). */
static int probe_counts(const roof_profile *prof, int *ns, int max) {
  int nn = 0;
  for (int j = 0; j < prof->npaths; ++j)
    for (int i = 0; i < prof->paths[j].npoints; ++i) {
      int n = prof->paths[j].points[i].n, seen = 0;
      for (int c = 0; c < nn && !seen; ++c)
        seen = ns[c] == n;
      if (!seen && nn < max)
        ns[nn++] = n;
    }
  for (int a = 1; a < nn; ++a)
    for (int b = a; b > 0 && ns[b - 1] > ns[b]; --b) {
      int t = ns[b];
      ns[b] = ns[b - 1];
      ns[b - 1] = t;
    }
  return nn;
}

int roof_svg_probe(const char *file, const roof_profile *prof, char *err, size_t errlen) {
  FILE *f = fopen(file, "w");
  if (!f)
    return roof_set_err(err, errlen, "cannot write \"%s\": %s", file, strerror(errno)), -1;
  int ns[32], nn = probe_counts(prof, ns, 32), cols = prof->npaths > 1 ? 2 : 1;
  int rows = (prof->npaths + cols - 1) / cols;
  const double pw = 580, ph = 340;
  int w = (int)(cols * pw), h = (int)(80 + rows * ph);
  frame base = {0};
  probe_range(prof, &base);
  header(f, w, h);
  text(f, w / 2.0, 26, "middle", 15, "font-weight=\"bold\"",
       "rmaop-roofline probe: median epoch time (points) and fit T(n,m) = \xce\xb1 + n o + n m / \xce\xb2 (lines)");
  for (int c = 0; c < nn; ++c) {
    char lab[32];
    snprintf(lab, sizeof lab, "n = %d", ns[c]);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"48\" r=\"4\" fill=\"%s\"/>\n", 40 + 90.0 * c, palette[c % NCOLORS]);
    text(f, 48 + 90.0 * c, 52, "start", 12, NULL, lab);
  }
  for (int j = 0; j < prof->npaths; ++j) {
    frame fr = base;
    fr.px0 = (j % cols) * pw + 90;
    fr.px1 = (j % cols) * pw + pw - 20;
    fr.py0 = 80 + (j / cols) * ph + 40;
    fr.py1 = 80 + (j / cols) * ph + ph - 55;
    fprintf(f, "<g class=\"panel\" id=\"panel-%s\">\n", prof->paths[j].name);
    probe_panel(f, &prof->paths[j], fr, ns, nn);
    fputs("</g>\n", f);
  }
  return finish(f, file, err, errlen);
}
