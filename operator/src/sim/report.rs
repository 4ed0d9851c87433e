//! Report writers: markdown tables, per-job CSV, and hand-written SVG line plots (no
//! plotting crate: a plot is a few hundred bytes of `<polyline>`).

use std::fmt::Write as _;

use super::placement::{FgdRow, PlacementSummary};
use super::stats::cdf;
use super::tenants::{JobRecord, PolicyResult};

/// Per-job records as CSV.
/// `12,345`: numbers in the docs' style (the simulator's and the control-plane bench's).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn jobs_csv(records: &[JobRecord]) -> String {
    let mut s = String::from(
        "id,tenant,gpus,submit,duration,first_start,finish,queue_delay,jct,preemptions,lost_gpu_seconds\n",
    );
    let o = |x: Option<i64>| x.map(|v| v.to_string()).unwrap_or_default();
    for r in records {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{}",
            r.id,
            r.tenant,
            r.gpus,
            r.submit,
            r.duration,
            o(r.first_start),
            o(r.finish),
            o(r.queue_delay()),
            o(r.jct()),
            r.preemptions,
            r.lost_gpu_seconds
        );
    }
    s
}

fn fgd<'a>(rows: &'a [FgdRow], workload: &str, policy: &str) -> Option<&'a FgdRow> {
    rows.iter()
        .find(|r| r.workload == workload && r.policy.ends_with(policy))
}

/// Setup A next to the published FGD and BestFit numbers.
pub fn placement_table(sums: &[PlacementSummary], rows: &[FgdRow]) -> String {
    let mut s = String::from(
        "| trace | seeds | alloc@100 kubetrain / FGD / BestFit | alloc@130 kubetrain / FGD / BestFit | Δ@130 vs FGD | frag ratio@80 kubetrain / FGD | frag ratio@90 kubetrain / FGD | frag amount@90 kubetrain / FGD |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let n = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.2}"));
    for p in sums {
        let f = fgd(rows, &p.workload, "FGD");
        let b = fgd(rows, &p.workload, "BestFit");
        let delta = f.map(|f| p.alloc_130 - f.alloc_130);
        let _ = writeln!(
            s,
            "| {} | {} | **{:.2}** / {} / {} | **{:.2}** / {} / {} | {} | {:.1} / {} | {:.1} / {} | {:.2} / {} |",
            p.workload.trim_start_matches("openb_pod_list_"),
            p.seeds,
            p.alloc_100,
            n(f.map(|r| r.alloc_100)),
            n(b.map(|r| r.alloc_100)),
            p.alloc_130,
            n(f.map(|r| r.alloc_130)),
            n(b.map(|r| r.alloc_130)),
            delta.map_or("–".into(), |d| format!("{d:+.2}")),
            p.frag_ratio_80,
            n(f.map(|r| r.frag_ratio_80)),
            p.frag_ratio_90,
            n(f.map(|r| r.frag_ratio_90)),
            p.frag_amount_90,
            n(f.map(|r| r.frag_amount_90)),
        );
    }
    s
}

/// One of kubetrain's runs of Setup A, by where its shape mix came from.
pub struct MixRun<'a> {
    /// Column label (`snapshot`, `history`, `supplied`).
    pub label: &'a str,
    pub sums: &'a [PlacementSummary],
}

/// `a / b / c` of one value per mix for one trace, `–` where a mix lacks the trace.
fn per_mix(
    mixes: &[MixRun],
    workload: &str,
    value: impl Fn(&PlacementSummary) -> String,
) -> String {
    mixes
        .iter()
        .map(|m| {
            m.sums
                .iter()
                .find(|x| x.workload == workload)
                .map_or("–".to_string(), &value)
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

fn labels(mixes: &[MixRun]) -> String {
    mixes
        .iter()
        .map(|m| m.label)
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Setup A with each shape mix (learned from the snapshot, learned online from the history
/// of arrivals, the trace's distribution supplied as FGD's scorer gets it), beside FGD's
/// published numbers. One row per trace of the first mix.
pub fn mix_table(mixes: &[MixRun], rows: &[FgdRow]) -> String {
    let l = labels(mixes);
    let mut s = format!(
        "| trace | alloc@100 {l} / FGD | alloc@130 {l} / FGD | Δ@130 {l} vs FGD | frag ratio@80 {l} / FGD | frag ratio@90 {l} / FGD |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    let n = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.2}"));
    let Some(first) = mixes.first() else {
        return s;
    };
    for p in first.sums {
        let w = p.workload.as_str();
        let f = fgd(rows, w, "FGD");
        let delta = |x: &PlacementSummary| {
            f.map_or("–".to_string(), |f| {
                format!("{:+.2}", x.alloc_130 - f.alloc_130)
            })
        };
        let _ = writeln!(
            s,
            "| {} | {} / {} | {} / {} | {} | {} / {} | {} / {} |",
            w.trim_start_matches("openb_pod_list_"),
            per_mix(mixes, w, |x| format!("{:.2}", x.alloc_100)),
            n(f.map(|r| r.alloc_100)),
            per_mix(mixes, w, |x| format!("{:.2}", x.alloc_130)),
            n(f.map(|r| r.alloc_130)),
            per_mix(mixes, w, delta),
            per_mix(mixes, w, |x| format!("{:.1}", x.frag_ratio_80)),
            n(f.map(|r| r.frag_ratio_80)),
            per_mix(mixes, w, |x| format!("{:.1}", x.frag_ratio_90)),
            n(f.map(|r| r.frag_ratio_90)),
        );
    }
    s
}

/// kubetrain (each mix) beside FGD run in the same harness on the same seeds (`sim::fgd`),
/// and FGD's published numbers.
pub fn peer_table(mixes: &[MixRun], peer: &[PlacementSummary], rows: &[FgdRow]) -> String {
    let l = labels(mixes);
    let mut s = format!(
        "| trace | alloc@100 {l} / FGD (this run) / FGD (published) | alloc@130 {l} / FGD (this run) / FGD (published) | Δ@130 {l} vs FGD (this run) | frag ratio@90 {l} / FGD (this run) |\n| --- | --- | --- | --- | --- |\n",
    );
    let n = |x: Option<f64>| x.map_or("–".to_string(), |v| format!("{v:.2}"));
    for f in peer {
        let w = f.workload.as_str();
        let publ = fgd(rows, w, "FGD");
        let _ = writeln!(
            s,
            "| {} | {} / {:.2} / {} | {} / {:.2} / {} | {} | {} / {:.1} |",
            w.trim_start_matches("openb_pod_list_"),
            per_mix(mixes, w, |x| format!("{:.2}", x.alloc_100)),
            f.alloc_100,
            n(publ.map(|r| r.alloc_100)),
            per_mix(mixes, w, |x| format!("{:.2}", x.alloc_130)),
            f.alloc_130,
            n(publ.map(|r| r.alloc_130)),
            per_mix(mixes, w, |x| format!("{:+.2}", x.alloc_130 - f.alloc_130)),
            per_mix(mixes, w, |x| format!("{:.1}", x.frag_ratio_90)),
            f.frag_ratio_90,
        );
    }
    s
}

/// Traces where `ours` allocates at least as much as `theirs` at 100 % and at 130 % of
/// demand (`theirs` by trace name; a trace missing from either is not counted).
pub fn at_or_above(ours: &[PlacementSummary], theirs: &[(String, f64, f64)]) -> (usize, usize) {
    let mut met = 0;
    let mut n = 0;
    for o in ours {
        if let Some(t) = theirs.iter().find(|t| t.0 == o.workload) {
            n += 1;
            if o.alloc_100 >= t.1 && o.alloc_130 >= t.2 {
                met += 1;
            }
        }
    }
    (met, n)
}

fn h(secs: f64) -> String {
    if secs >= 3600.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} min", secs / 60.0)
    }
}

/// Setup B, one row per policy.
pub fn tenants_table(results: &[PolicyResult]) -> String {
    let mut s = String::from(
        "| policy | jobs finished | unfinished | avg JCT | p99 JCT | avg queueing | p99 queueing | GPU allocation | preemptions | lost GPU-hours | fragmentation | tenants with anomaly |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in results {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} % | {} | {:.1} | {:.2} % | {} / {} |",
            r.name,
            r.finished,
            r.unfinished,
            h(r.avg_jct_s),
            h(r.p99_jct_s),
            h(r.avg_queue_s),
            h(r.p99_queue_s),
            r.alloc_rate_pct,
            r.preemptions,
            r.lost_gpu_hours,
            r.frag_pct,
            r.tenants_with_anomaly,
            r.tenants.len()
        );
    }
    s
}

/// The reclaim ablation: the same policy with different victim selections.
pub fn reclaim_table(results: &[&PolicyResult]) -> String {
    let mut s = String::from(
        "| policy | victim selection | reclaims | victims | victims per reclaim | lost GPU-hours planned | per reclaim | lost GPU-hours (all preemptions) | preemptions | avg JCT | p99 JCT |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in results {
        let per = |x: f64| {
            if r.reclaims == 0 {
                0.0
            } else {
                x / r.reclaims as f64
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2} | {:.1} | {:.2} | {:.1} | {} | {} | {} |",
            r.name,
            super::tenants::victims_label(r.victims),
            r.reclaims,
            r.reclaim_victims,
            per(r.reclaim_victims as f64),
            r.reclaim_planned_lost_gpu_hours,
            per(r.reclaim_planned_lost_gpu_hours),
            r.lost_gpu_hours,
            r.preemptions,
            h(r.avg_jct_s),
            h(r.p99_jct_s),
        );
    }
    s
}

/// Setup B per tenant: avg / p99 queueing per policy and the sharing anomaly.
pub fn tenant_detail_table(results: &[PolicyResult]) -> String {
    let Some(first) = results.first() else {
        return String::new();
    };
    let mut s = String::from("| tenant | guarantee | jobs | private avg / p99 |");
    let mut sep = String::from("| --- | --- | --- | --- |");
    for r in results {
        let _ = write!(s, " {} avg / p99 (anomaly) |", r.name);
        sep.push_str(" --- |");
    }
    s.push('\n');
    s.push_str(&sep);
    s.push('\n');
    for (i, t) in first.tenants.iter().enumerate() {
        let _ = write!(
            s,
            "| {} | {} GPUs | {} | {} / {} |",
            t.tenant,
            t.guarantee_gpus,
            t.jobs,
            h(t.private_avg_queue_s),
            h(t.private_p99_queue_s)
        );
        for r in results {
            let x = &r.tenants[i];
            let _ = write!(
                s,
                " {} / {} ({:+.1} min) |",
                h(x.avg_queue_s),
                h(x.p99_queue_s),
                x.anomaly_s / 60.0
            );
        }
        s.push('\n');
    }
    s
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// A series: name, points, dashed.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    pub markers: bool,
}

/// A line plot as SVG. With `log_x`, x values ≤ 0 are drawn at the left edge.
pub fn svg_plot(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series],
    log_x: bool,
    y_range: Option<(f64, f64)>,
) -> String {
    let f = Frame::fit(series, log_x, y_range);
    let mut s = f.header(title);
    f.y_grid(&mut s);
    f.x_grid(&mut s);
    f.axes(&mut s, xlabel, ylabel);
    for (i, se) in series.iter().enumerate() {
        f.line(&mut s, i, se);
    }
    s.push_str("</svg>\n");
    s
}

/// The plot's geometry (size and margins, in pixels) and the data range it shows.
#[derive(Clone, Copy)]
struct Frame {
    w: f64,
    hgt: f64,
    l: f64,
    r: f64,
    t: f64,
    b: f64,
    log_x: bool,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    /// The frame that holds every point (`y_range` fixes the y axis; with `log_x` the x
    /// axis spans whole decades).
    fn fit(series: &[Series], log_x: bool, y_range: Option<(f64, f64)>) -> Frame {
        let (w, hgt, l, r, t, b) = (720.0, 440.0, 70.0, 200.0, 40.0, 55.0);
        let mut f = Frame {
            w,
            hgt,
            l,
            r,
            t,
            b,
            log_x,
            x0: f64::MAX,
            x1: f64::MIN,
            y0: f64::MAX,
            y1: f64::MIN,
        };
        let pts = series.iter().flat_map(|s| s.points.iter());
        for &(x, y) in pts {
            f.x0 = f.x0.min(f.tx(x));
            f.x1 = f.x1.max(f.tx(x));
            f.y0 = f.y0.min(y);
            f.y1 = f.y1.max(y);
        }
        if let Some((a, c)) = y_range {
            f.y0 = a;
            f.y1 = c;
        }
        if log_x {
            f.x0 = f.x0.floor();
            f.x1 = f.x1.ceil();
        }
        if f.x1 <= f.x0 {
            f.x1 = f.x0 + 1.0;
        }
        if f.y1 <= f.y0 {
            f.y1 = f.y0 + 1.0;
        }
        f
    }

    /// An x value on the axis's scale (its decade exponent, with `log_x`).
    fn tx(&self, x: f64) -> f64 {
        if self.log_x { x.max(1.0).log10() } else { x }
    }

    /// The pixel column of an x value.
    fn px(&self, x: f64) -> f64 {
        let Frame {
            w, l, r, x0, x1, ..
        } = *self;
        l + (self.tx(x) - x0) / (x1 - x0) * (w - l - r)
    }

    /// The pixel row of a y value, clamped to the frame.
    fn py(&self, y: f64) -> f64 {
        let Frame {
            hgt, t, b, y0, y1, ..
        } = *self;
        hgt - b - (y.clamp(y0, y1) - y0) / (y1 - y0) * (hgt - t - b)
    }

    /// The SVG's opening, white background and title.
    fn header(&self, title: &str) -> String {
        let Frame { w, hgt, l, r, .. } = *self;
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{hgt}\" viewBox=\"0 0 {w} {hgt}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{title}</text>\n",
            (w - r + l) / 2.0
        )
    }

    /// Six horizontal grid lines with their y labels.
    fn y_grid(&self, s: &mut String) {
        let Frame {
            w, l, r, y0, y1, ..
        } = *self;
        for i in 0..=5 {
            let y = y0 + (y1 - y0) * f64::from(i) / 5.0;
            let _ = writeln!(
                s,
                "<line x1=\"{l}\" x2=\"{}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                w - r,
                l - 6.0,
                self.py(y) + 4.0,
                if (y1 - y0) < 10.0 {
                    format!("{y:.2}")
                } else {
                    format!("{y:.0}")
                },
                py = self.py(y)
            );
        }
    }

    /// Vertical grid lines with their x labels: one per decade (as a duration) with
    /// `log_x`, else seven evenly spaced.
    fn x_grid(&self, s: &mut String) {
        let Frame {
            hgt, t, b, x0, x1, ..
        } = *self;
        let xticks: Vec<f64> = if self.log_x {
            (x0 as i64..=x1 as i64)
                .map(|e| 10f64.powi(e as i32))
                .collect()
        } else {
            (0..=6)
                .map(|i| x0 + (x1 - x0) * f64::from(i) / 6.0)
                .collect()
        };
        for x in xticks {
            let label = if self.log_x {
                match x {
                    v if v >= 86_400.0 => format!("{:.0} d", v / 86_400.0),
                    v if v >= 3600.0 => format!("{:.0} h", v / 3600.0),
                    v if v >= 60.0 => format!("{:.0} min", v / 60.0),
                    v => format!("{v:.0} s"),
                }
            } else {
                format!("{x:.0}")
            };
            let _ = writeln!(
                s,
                "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{t}\" y2=\"{}\" stroke=\"#eee\"/><text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
                hgt - b,
                hgt - b + 16.0,
                px = self.px(x)
            );
        }
    }

    /// The plot's border and the axes' labels.
    fn axes(&self, s: &mut String, xlabel: &str, ylabel: &str) {
        let Frame {
            w, hgt, l, r, t, b, ..
        } = *self;
        let _ = writeln!(
            s,
            "<rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{xlabel}</text>\n<text transform=\"translate(18,{}) rotate(-90)\" text-anchor=\"middle\">{ylabel}</text>",
            w - l - r,
            hgt - t - b,
            (w - r + l) / 2.0,
            hgt - 12.0,
            (hgt - b + t) / 2.0
        );
    }

    /// The `i`-th series: its line, its markers if it has them, and its legend entry.
    fn line(&self, s: &mut String, i: usize, se: &Series) {
        let Frame { w, r, t, .. } = *self;
        let c = COLORS[i % COLORS.len()];
        let dash = if se.dashed {
            " stroke-dasharray=\"6,4\""
        } else {
            ""
        };
        let path: Vec<String> = se
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.px(x), self.py(y)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
            path.join(" ")
        );
        if se.markers {
            for &(x, y) in &se.points {
                let _ = writeln!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"/>",
                    self.px(x),
                    self.py(y)
                );
            }
        }
        let ly = t + 14.0 + 20.0 * i as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{c}\" stroke-width=\"2\"{dash}/><text x=\"{}\" y=\"{}\">{}</text>",
            w - r + 12.0,
            w - r + 40.0,
            w - r + 46.0,
            ly + 4.0,
            se.name
        );
    }
}

/// Allocation ratio vs arrived demand for one trace, against FGD's and BestFit's points.
pub fn allocation_svg(sum: &PlacementSummary, rows: &[FgdRow]) -> String {
    let mut series = vec![Series {
        name: "kubetrain".into(),
        points: sum
            .curve
            .iter()
            .enumerate()
            .skip(50)
            .map(|(k, &a)| (k as f64, a))
            .collect(),
        dashed: false,
        markers: false,
    }];
    for p in ["FGD", "BestFit", "Random"] {
        if let Some(r) = fgd(rows, &sum.workload, p) {
            series.push(Series {
                name: format!("{p} (published)"),
                points: vec![(100.0, r.alloc_100), (130.0, r.alloc_130)],
                dashed: true,
                markers: true,
            });
        }
    }
    series.push(Series {
        name: "ideal".into(),
        points: vec![(50.0, 50.0), (100.0, 100.0), (130.0, 100.0)],
        dashed: true,
        markers: false,
    });
    svg_plot(
        &format!(
            "GPU allocation vs arrived demand ({}, {} seeds)",
            sum.workload.trim_start_matches("openb_pod_list_"),
            sum.seeds
        ),
        "arrived GPU demand (% of capacity)",
        "GPUs allocated (%)",
        &series,
        false,
        Some((50.0, 100.0)),
    )
}

/// CDF per policy of a per-job quantity (seconds), log x.
pub fn cdf_svg(
    title: &str,
    xlabel: &str,
    results: &[PolicyResult],
    f: &dyn Fn(&JobRecord) -> Option<i64>,
) -> String {
    let series: Vec<Series> = results
        .iter()
        .map(|r| {
            let v: Vec<f64> = r
                .records
                .iter()
                .filter_map(f)
                .map(|x| x.max(1) as f64)
                .collect();
            Series {
                name: r.name.clone(),
                points: cdf(&v, 400)
                    .into_iter()
                    .map(|(x, y)| (x, 100.0 * y))
                    .collect(),
                dashed: false,
                markers: false,
            }
        })
        .collect();
    svg_plot(title, xlabel, "jobs (%)", &series, true, Some((0.0, 100.0)))
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_are_separated_by_commas() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2000), "2,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
