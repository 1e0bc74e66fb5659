//! The words of `bench latency --split` and `--analyze`: a late wake-up explained part by
//! part (rtla timerlat's auto-analysis layout), what delayed the wake-ups over a run, and the
//! one cause that mattered most, for the terminal, the reports and the findings alike.
//!
//! Names from the kernel (task names, interrupt actions) are shown through
//! [`crate::outside::line`]: a task may name itself anything.

use crate::outside;
use model::latency::split::{Analysis, Blocking, Cause, Interference, Source, TaskInfo};
use model::latency::trace::Irq;

/// What moves an interrupt off the measured CPUs.
const MOVE_IRQ: &str = "move that interrupt off the measured CPUs with \
                        /proc/irq/N/smp_affinity_list (or keep it off at boot with irqaffinity= \
                        and isolcpus=)";

/// A task as the explanations name it: `hog (pid 4242, SCHED_FIFO 60)`,
/// `kworker/1:1H (pid 54, SCHED_OTHER nice -20)`, `<idle>`.
pub fn task(t: &TaskInfo) -> String {
    if t.is_idle() {
        return "<idle> (the CPU was idle)".to_string();
    }
    let name = if t.comm.is_empty() {
        "a task".to_string()
    } else {
        outside::line(&t.comm).into_owned()
    };
    let class = match (t.policy.as_deref(), t.rt_priority(), t.nice()) {
        (Some(p), Some(rt), _) => format!(", {p} {rt}"),
        (None, Some(rt), _) => format!(", real-time priority {rt}"),
        (Some(p), None, Some(0)) => format!(", {p}"),
        (Some(p), None, Some(n)) => format!(", {p} nice {n}"),
        (None, None, Some(n)) => format!(", nice {n}"),
        (Some(p), None, None) => format!(", {p}"),
        (None, None, None) => String::new(),
    };
    format!("{name} (pid {}{class})", t.pid)
}

/// A hard interrupt: `IRQ 36 virtio1-req.0`, or an x86 system vector `local_timer (vector
/// 236)`.
pub fn irq(i: &Irq) -> String {
    let name = outside::line(&i.name);
    if i.vector {
        format!("{name} (vector {})", i.number)
    } else {
        format!("IRQ {} {name}", i.number)
    }
}

/// What a source is: an interrupt, a softirq, a task.
pub fn source(s: &Source) -> String {
    match s {
        Source::Irq(i) => irq(i),
        Source::Softirq { name, .. } => format!("softirq {}", outside::line(name)),
        Source::Thread(t) => task(t),
        Source::OtherThreads => "other threads".to_string(),
    }
}

/// Microseconds with two decimals, as rtla prints them.
pub fn us2(ns: i64) -> String {
    format!("{:.2}", ns as f64 / 1000.0)
}

fn share(ns: i64, total: u64) -> String {
    if total == 0 {
        return String::new();
    }
    format!(" ({:.1} %)", ns as f64 * 100.0 / total as f64)
}

/// One part of an explained wake-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub label: String,
    pub ns: i64,
    /// A line under the part before it (one interrupt of "interrupts after the wake-up").
    pub sub: bool,
    /// What goes after the time (the task running at the expiry, how long a thread held the
    /// CPU in all).
    pub note: String,
}

/// The heading of an explained wake-up: which thread, how late, when, on which CPUs.
pub fn analysis_title(a: &Analysis) -> String {
    format!(
        "thread {} (tid {}) woke {} us late at {:.3} s (wake-up {}), timer on CPU {}, ran on \
         CPU {}",
        a.thread,
        a.tid,
        us2(a.thread_latency_ns as i64),
        a.at_ns as f64 / 1e9,
        a.cycle,
        a.timer_cpu,
        a.cpu
    )
}

/// One wake-up part by part, in the order they happened; the parts that are not `sub` add
/// up to the thread latency.
pub fn analysis_parts(a: &Analysis) -> Vec<Part> {
    let mut out = Vec::new();
    let part = |label: &str, ns: i64, note: String| Part {
        label: label.to_string(),
        ns,
        sub: false,
        note,
    };
    let sub = |label: String, ns: u64, note: String| Part {
        label,
        ns: ns as i64,
        sub: true,
        note,
    };
    let at_expiry = match &a.running_at_expiry {
        None => "the CPU was idle: exit from idle".to_string(),
        Some(t) => format!("the CPU was running {}", task(t)),
    };
    out.push(part(
        "IRQ latency (expiry to the timer interrupt)",
        a.irq_latency_ns as i64,
        at_expiry,
    ));
    for i in &a.before_timer_irq {
        out.push(sub(
            format!("{} ran before it", source(&i.source)),
            i.ns,
            "held the timer interrupt back".into(),
        ));
    }
    out.push(part(
        "timer interrupt",
        a.timer_irq_ns as i64,
        String::new(),
    ));
    let list = |out: &mut Vec<Part>, title: &str, v: &[Interference]| {
        if v.is_empty() {
            return;
        }
        let ns: u64 = v.iter().map(|i| i.ns).sum();
        out.push(part(title, ns as i64, String::new()));
        for i in v {
            let times = if i.count > 1 {
                format!("{} times", i.count)
            } else {
                String::new()
            };
            out.push(sub(source(&i.source), i.ns, times));
        }
    };
    list(&mut out, "interrupts after the wake-up", &a.irqs);
    list(&mut out, "softirqs", &a.softirqs);
    if !a.threads.is_empty() {
        let ns: u64 = a.threads.iter().map(|b| b.ns).sum();
        out.push(part("threads that held the CPU", ns as i64, String::new()));
        for b in &a.threads {
            let held = match b.held_ns {
                Some(h) => format!("held it {} us in all", us2(h as i64)),
                None if a.records_lost => {
                    "how long it held it is unknown: events of this CPU were lost".to_string()
                }
                None => String::new(),
            };
            out.push(sub(task(&b.task), b.ns, held));
        }
    }
    out.push(part(
        "the thread's own way back to user space",
        a.switch_to_user_ns as i64,
        String::new(),
    ));
    if a.unaccounted_ns != 0 {
        out.push(part(
            "unaccounted (no event covers it)",
            a.unaccounted_ns,
            String::new(),
        ));
    }
    out
}

/// One wake-up explained, line by line (rtla's layout): each part with its time and share of
/// the thread latency, the parts adding up to the last line.
pub fn analysis_lines(a: &Analysis) -> Vec<String> {
    let total = a.thread_latency_ns;
    let mut out = vec![format!("{}:", analysis_title(a))];
    for p in analysis_parts(a) {
        let note = if p.note.is_empty() {
            String::new()
        } else {
            format!(" ({})", p.note)
        };
        out.push(if p.sub {
            format!("    {:<42} {:>10} us{note}", p.label, us2(p.ns))
        } else {
            format!(
                "  {:<44} {:>10} us{}{note}",
                p.label,
                us2(p.ns),
                share(p.ns, total)
            )
        });
    }
    out.push(format!("  {}", "-".repeat(60)));
    out.push(format!(
        "  {:<44} {:>10} us (100 %); wake-up to switch {} us",
        "thread latency",
        us2(total as i64),
        us2(a.wakeup_to_switch_ns as i64)
    ));
    out
}

/// The share of the thread latency `ns` is, as the explanations print it (`(99.8 %)`).
pub fn share_of(ns: i64, total: u64) -> String {
    share(ns, total).trim().to_string()
}

/// One line per source of [`model::latency::split::Split::causes`]: what delayed the
/// wake-ups over the run.
pub fn cause_line(c: &Cause) -> String {
    format!(
        "{}: {} {}, {} us in all, at most {} us",
        source(&c.source),
        c.wakeups,
        if c.wakeups == 1 {
            "wake-up"
        } else {
            "wake-ups"
        },
        us2(c.total_ns as i64),
        us2(c.max_ns as i64)
    )
}

/// The part of a wake-up that took the most, in words, with its time and what to do about
/// it; `measuring_priority` is the measuring threads' SCHED_FIFO priority (0: normal).
pub fn main_cause(a: &Analysis, measuring_priority: u8) -> (String, u64, String) {
    let mut best: (String, u64, String) = (String::new(), 0, String::new());
    let mut consider = |what: String, ns: u64, advice: String| {
        if ns > best.1 {
            best = (what, ns, advice);
        }
    };
    let held_back: u64 = a.before_timer_irq.iter().map(|i| i.ns).sum();
    let irq_words = if held_back * 2 >= a.irq_latency_ns && held_back > 0 {
        (
            format!(
                "the timer interrupt came late: {} ran when the timer expired",
                a.before_timer_irq
                    .iter()
                    .map(|i| source(&i.source))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            MOVE_IRQ.to_string(),
        )
    } else if a.running_at_expiry.is_none() {
        (
            "the timer interrupt came late: the CPU was idle and its exit from idle took the \
             time"
                .to_string(),
            "keep the measured CPUs out of deep idle states (hold /dev/cpu_dma_latency at 0, \
             or boot with processor.max_cstate=1 or idle=poll); in a virtual machine the host \
             wakes the vCPU"
                .to_string(),
        )
    } else {
        (
            format!(
                "the timer interrupt came late: interrupts were disabled on the CPU (by {} or \
                 the kernel code it ran) or the CPU was held by firmware or a hypervisor",
                a.running_at_expiry.as_ref().map(task).unwrap_or_default()
            ),
            "find the section with interrupts off with the irqsoff tracer \
             (CONFIG_IRQSOFF_TRACER); in a virtual machine, the host's scheduling of the vCPU"
                .to_string(),
        )
    };
    consider(irq_words.0, a.irq_latency_ns, irq_words.1);
    consider(
        "the timer interrupt itself".to_string(),
        a.timer_irq_ns,
        "nothing to change: it is the kernel's own timer handling".to_string(),
    );
    for i in &a.irqs {
        consider(
            format!("{} ran before the thread", source(&i.source)),
            i.ns,
            MOVE_IRQ.to_string(),
        );
    }
    for i in &a.softirqs {
        consider(
            format!("{} ran before the thread", source(&i.source)),
            i.ns,
            "softirqs run before any thread on a kernel without PREEMPT_RT (which runs them \
             in threads); move the interrupts that raise them (network, block) off the \
             measured CPUs"
                .to_string(),
        );
    }
    for b in &a.threads {
        consider(
            blocking_words(b),
            b.ns,
            blocking_advice(&b.task, measuring_priority),
        );
    }
    consider(
        "the thread's own way back to user space after its switch-in".to_string(),
        a.switch_to_user_ns,
        "nothing to change: it is the system call's return".to_string(),
    );
    if a.unaccounted_ns > 0 {
        consider(
            "time no recorded event accounts for".to_string(),
            a.unaccounted_ns as u64,
            "events were lost, or firmware (SMI) or a hypervisor held the CPU".to_string(),
        );
    }
    best
}

fn blocking_words(b: &Blocking) -> String {
    let held = b
        .held_ns
        .map(|h| format!(" for {} us in all", us2(h as i64)))
        .unwrap_or_default();
    format!("{} kept the CPU{held}", task(&b.task))
}

fn blocking_advice(t: &TaskInfo, measuring_priority: u8) -> String {
    if t.is_idle() {
        return "the CPU stayed idle after the wake-up: the wake-up reached it late \
                (an IPI to another CPU, or the host's scheduling of the vCPU)"
            .to_string();
    }
    match t.rt_priority() {
        Some(p) if measuring_priority > 0 && p >= measuring_priority => format!(
            "it runs at real-time priority {p}, at or above the measuring threads' \
             {measuring_priority}: move it off the measured CPUs (taskset, cpusets) or run it \
             below them"
        ),
        Some(p) if measuring_priority == 0 => format!(
            "it runs at real-time priority {p} and the measuring threads at normal \
             scheduling: measure with SCHED_FIFO (-p)"
        ),
        _ if measuring_priority == 0 => "the measuring threads ran at normal scheduling and \
             shared the CPU: measure with SCHED_FIFO (-p)"
            .to_string(),
        _ => "a lower-priority task kept the CPU: it ran kernel code that cannot be preempted \
              (a kernel without full preemption runs to its next preemption point; PREEMPT_RT \
              preempts it)"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pid: i32, comm: &str, prio: i32, policy: Option<&str>) -> TaskInfo {
        TaskInfo {
            pid,
            comm: comm.into(),
            prio: Some(prio),
            policy: policy.map(String::from),
        }
    }

    #[test]
    fn tasks_are_named_with_their_class() {
        assert_eq!(
            task(&t(4242, "hog", 39, Some("SCHED_FIFO"))),
            "hog (pid 4242, SCHED_FIFO 60)"
        );
        assert_eq!(
            task(&t(54, "kworker/1:1H", 100, Some("SCHED_OTHER"))),
            "kworker/1:1H (pid 54, SCHED_OTHER nice -20)"
        );
        assert_eq!(task(&t(9, "x", 120, None)), "x (pid 9, nice 0)");
        assert_eq!(
            task(&t(7, "a\x1b[2Jb", 10, None)),
            "a\\x1b[2Jb (pid 7, real-time priority 89)"
        );
        assert_eq!(
            task(&t(0, "swapper/1", 120, None)),
            "<idle> (the CPU was idle)"
        );
    }
}
