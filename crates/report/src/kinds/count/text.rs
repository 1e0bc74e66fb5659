//! The terminal text of `headroom count` (perf stat's layout), of `count --list` and of the
//! counters sampled beside a benchmark.

#[allow(clippy::wildcard_imports)]
use super::*;

/// perf's value column: counts as integers, scaled values (clocks in msec, MiB, ...) with
/// two decimals (tools/perf/util/stat-display.c: "%18.0f" / "%18.2f").
pub(super) fn value_text(e: &CountedEvent) -> String {
    match e.status {
        CountStatus::NotCounted => "<not counted>".into(),
        CountStatus::NotSupported => "<not supported>".into(),
        CountStatus::Counted => {
            let v = e.value.unwrap_or(0.0);
            if e.unit.is_some() {
                format!("{v:.2}")
            } else {
                format!("{v:.0}")
            }
        }
    }
}

pub(super) fn unit_width(events: &[CountedEvent]) -> usize {
    events
        .iter()
        .filter_map(|e| e.unit.as_ref().map(String::len))
        .max()
        .unwrap_or(0)
        .max(4)
}

/// One event line as perf prints it: value right-aligned in 18 columns, the unit, the
/// name in 32, the metric (`# 0.011 CPUs utilized`), and `(62.50%)` when the counter ran
/// part of the time. Blanks at the end are left off.
pub fn event_line(e: &CountedEvent, unit_w: usize, m: &Metric) -> String {
    let mut line = format!(
        "{:>18} {:<uw$} {:<32}{}",
        value_text(e),
        e.unit.as_deref().unwrap_or(""),
        e.name,
        metric_column(m),
        uw = unit_w
    );
    if let (CountStatus::Counted, Some(p)) = (e.status, e.running_percent) {
        if p < 100.0 {
            line.push_str(&format!("  ({p:.2}%)"));
        }
    }
    line.trim_end().to_string()
}

/// The whole `perf stat` block.
pub(crate) fn render_text(d: &CountDocument) -> String {
    let w = unit_width(&d.events);
    let base = MetricBase::of(&d.events, d.elapsed_s);
    let mut out = format!("\n Performance counter stats for {}:\n\n", d.target);
    for e in &d.events {
        out.push_str(&event_line(e, w, &metric(e, &base)));
        out.push('\n');
    }
    if !d.interrupts.is_empty() {
        out.push('\n');
        // /proc/interrupts counts a device's interrupts on every CPU, whoever caused them.
        for r in &d.interrupts {
            out.push_str(&format!(
                "{:>18} {:<w$} interrupts of {}, system-wide (IRQ {}{})  {}\n",
                r.count,
                "",
                r.device,
                irq_list(&r.irqs),
                if r.names.is_empty() {
                    String::new()
                } else {
                    format!(": {}", r.names.join(", "))
                },
                r.rate_comment()
            ));
        }
    }
    out.push_str(&format!("\n{:>18.9} seconds time elapsed\n", d.elapsed_s));
    if let (Some(u), Some(s)) = (d.user_s, d.sys_s) {
        out.push_str(&format!(
            "\n{u:>18.9} seconds user\n{s:>18.9} seconds sys\n"
        ));
    }
    out.push('\n');
    out
}

pub(crate) fn render_list(
    pmus: &[PmuListing],
    events: &EventListing,
    findings: &[Finding],
) -> String {
    let mut out = String::new();
    for p in pmus {
        out.push_str(&format!("{} (type {})", p.name, p.type_id));
        if let Some(c) = &p.cpumask {
            out.push_str(&format!(
                ", counts on CPU {}",
                model::units::format_cpu_list(c)
            ));
        }
        if let Some(l) = &p.link {
            if l.root_ports.is_empty() {
                out.push_str(&format!(", PCIe {}: {}", l.family, l.covers));
            } else {
                out.push_str(&format!(
                    ", PCIe {}: root port {} ({})",
                    l.family,
                    l.root_ports.join(", "),
                    l.covers
                ));
            }
        }
        out.push('\n');
        if !p.formats.is_empty() {
            out.push_str(&format!("  terms: {}\n", p.formats.join(", ")));
        }
        for e in &p.events {
            out.push_str(&format!("  {}/{}/\n", p.name, e));
        }
    }
    // perf list's sections and tags, so a line reads the same in both.
    let section = |out: &mut String, names: &[String], tag: &str| {
        for n in names {
            out.push_str(&format!("  {n:<50} [{tag}]\n"));
        }
    };
    out.push_str("\nsoftware events (any process, no PMU needed)\n");
    section(&mut out, &events.software, "Software event");
    out.push_str("\ngeneric hardware events (where the CPU's PMU has them)\n");
    section(&mut out, &events.hardware, "Hardware event");
    match &events.tracepoints_missing {
        Some(why) => out.push_str(&format!("\ntracepoints: {why}\n")),
        None => {
            out.push_str(&format!(
                "\ntracepoints ({}; count one as SYSTEM:NAME)\n",
                events.tracepoints.len()
            ));
            section(&mut out, &events.tracepoints, "Tracepoint event");
        }
    }
    for f in findings {
        out.push_str(&format!("\n{}: {}: {}", f.severity, f.subject, f.message));
        if let Some(a) = &f.advice {
            out.push_str(&format!(" ({a})"));
        }
        out.push('\n');
    }
    out
}

/// IRQ numbers as /proc/interrupts names them, comma-separated (`36,37`).
pub(super) fn irq_list(irqs: &[u32]) -> String {
    irqs.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The lines a benchmark prints under its table.
pub fn render_beside(b: &BesideCounters) -> String {
    let mut out = String::new();
    for r in &b.interrupts {
        out.push_str(&format!(
            "Interrupts: {} (IRQ {}{}): {} during the run, {:.1} /s\n",
            r.device,
            irq_list(&r.irqs),
            if r.names.is_empty() {
                String::new()
            } else {
                format!(" {}", r.names.join(", "))
            },
            r.count,
            r.per_second
        ));
    }
    if let Some(p) = &b.pmu {
        let side = |what: &str, bytes: Option<f64>, app: u64, err: Option<f64>| match bytes {
            Some(v) => format!(
                "{what} {v:.0} B vs application {app} B{}",
                err.map(|e| format!(" ({e:+.2} %)")).unwrap_or_default()
            ),
            None => format!("{what} –"),
        };
        out.push_str(&format!(
            "PCIe PMU {} (root port {}): {}; {}{}\n",
            p.pmu,
            p.root_port,
            side("Rx", p.rx_bytes, p.app_read_bytes, p.read_error_percent),
            side("Tx", p.tx_bytes, p.app_write_bytes, p.write_error_percent),
            p.reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
    }
    if let Some(w) = &b.links {
        out.push_str(&crate::kinds::watch::beside::render(w));
    }
    for n in &b.notes {
        out.push_str(&format!("Counters: {n}\n"));
    }
    out
}
