//! The tracepoints of a real timer loop on this kernel, recorded and matched: on every CPU,
//! every wake-up of a thread pinned there is found in the events, its IRQ latency never above
//! its thread latency, and the parts of each explained wake-up add up (root only: tracefs is
//! root's).

#![allow(clippy::unwrap_used)]

use counters::trace::TraceSampler;
use model::latency::split::{MatchConfig, Matcher, SplitSource};
use model::latency::trace::{EventKind, WakeUp};
use model::root::SysRoot;

fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `loops` absolute 1 ms sleeps of a thread pinned to `cpu`, as it saw them.
fn timer_loop(cpu: u32, loops: u64) -> Vec<WakeUp> {
    std::thread::spawn(move || {
        // SAFETY: plain data; pin this thread to `cpu`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
        // SAFETY: no arguments.
        let tid = unsafe { libc::gettid() };
        let mut next = now() + 1_000_000;
        let mut out = Vec::new();
        for cycle in 0..loops {
            let ts = libc::timespec {
                tv_sec: (next / 1_000_000_000) as _,
                tv_nsec: (next % 1_000_000_000) as _,
            };
            // SAFETY: valid timespec; absolute sleep.
            unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            let woke = now();
            out.push(WakeUp {
                thread: 0,
                tid,
                cycle,
                programmed_ns: next,
                woke_ns: woke,
            });
            next += 1_000_000;
            while next <= woke {
                next += 1_000_000;
            }
        }
        out
    })
    .join()
    .unwrap()
}

#[test]
fn a_pinned_timer_loop_is_matched_wakeup_by_wakeup_on_every_cpu() {
    if !testsupport::process::is_root() {
        testsupport::skip::skip("needs root (tracefs instances are root's)");
        return;
    }
    let cpus: Vec<u32> = (0..1024u32)
        .filter(|c| {
            std::path::Path::new(&format!("/sys/devices/system/cpu/cpu{c}/online")).exists()
                || *c == 0
        })
        .take(4)
        .collect();
    for cpu in cpus {
        let mut sampler = TraceSampler::open(&SysRoot::new("/"), &[cpu]).unwrap();
        sampler.enable();
        let start = now();
        let loops = 50u64;
        let wakeups = timer_loop(cpu, loops);
        sampler.disable();
        let mut events = Vec::new();
        let lost = sampler.drain(&mut events);
        drop(sampler);
        assert_eq!(lost, vec![], "CPU {cpu}");
        let tid = wakeups[0].tid;
        // The thread's own timer starts, decoded at the format's offsets.
        let starts = events
            .iter()
            .filter(|e| e.pid == tid && matches!(e.kind, EventKind::TimerStart { .. }))
            .count();
        assert!(
            starts >= loops as usize,
            "CPU {cpu}: {starts} hrtimer_start of {tid}"
        );
        assert!(events.iter().all(|e| e.cpu == cpu));
        let mut m = Matcher::new(MatchConfig {
            tids: vec![tid],
            start_ns: start,
            histogram_limit_us: 10_000,
            keep_largest: 3,
            analyze_above_ns: None,
        });
        m.ingest(events);
        m.wakeups(wakeups);
        let s = m.finish(SplitSource::Tracepoints);
        assert_eq!(
            (s.total.matched, s.total.unmatched),
            (loops, 0),
            "CPU {cpu}"
        );
        assert_eq!(s.total.irq_above_thread, 0);
        assert!(s.total.irq.max_ns <= s.total.thread_latency.max_ns);
        for a in &s.largest {
            assert_eq!(a.parts_ns(), a.thread_latency_ns as i64, "{a:?}");
            assert_eq!((a.cpu, a.timer_cpu), (cpu, cpu));
        }
    }
    // The instances are gone with their samplers.
    let left: Vec<String> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("headroom-{}-", std::process::id())))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
