//! A week of `headroom watch` at 1 s on a 100-function machine, on a simulated clock: what
//! the watcher keeps stays under a stated bound however long it runs (every change is still
//! counted), and the schedule counts the samples a stalled machine took late.
#![allow(clippy::unwrap_used)] // a panic in a test is a failed assertion

use model::ceiling::pcie::TlpParams;
use model::inventory::pci::address::PciAddress;
use model::inventory::pci::AerCounters;
use model::watch::{FunctionContext, FunctionSample, Sample, Schedule, Watcher};
use model::{LinkState, PcieGen};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live at any moment.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const FUNCTIONS: u8 = 100;
const WEEK_S: u64 = 7 * 24 * 3600;
/// What the watcher may hold after a week, whatever happened: the changes it keeps
/// (model::watch::MAX_CHANGES), the timeline (MAX_TIMELINE) and one summary per device.
const BOUND_BYTES: usize = 8 << 20;

fn function(i: u8) -> FunctionSample {
    FunctionSample {
        address: PciAddress::new(0, i, 0, 0),
        current: Some(LinkState::new(PcieGen::Gen3, 4)),
        max: Some(LinkState::new(PcieGen::Gen3, 4)),
        aer: Some(AerCounters {
            // One name: what is compared per sample is not what this test bounds (and this
            // keeps a week of samples within seconds of an unoptimised build).
            correctable: vec![("RxErr".to_string(), 0)],
            ..AerCounters::default()
        }),
        link_status: None,
    }
}

#[test]
fn a_week_of_one_second_samples_stays_bounded() {
    let contexts = (0..FUNCTIONS)
        .map(|i| FunctionContext {
            address: PciAddress::new(0, i, 0, 0),
            parent: None,
            name: format!("function {i}"),
            params: TlpParams::default_for(256, 512, 64),
            paths: vec![format!("/dev/nvme{i}n1")],
        })
        .collect();
    let mut sample = Sample {
        pci: (0..FUNCTIONS).map(function).collect(),
        ..Sample::default()
    };
    let mut watcher = Watcher::new(1000, contexts);
    let mut schedule = Schedule::new(1000);
    let before = LIVE.load(Ordering::Relaxed);
    let mut high = 0;
    let mut errors = 0u64;
    let mut retrains = 0u64;
    let mut now_ms = 0;
    for s in 0..WEEK_S {
        // Every second one function counts a Receiver Error; every 10 minutes one link
        // drops to x1 for a second (a flap).
        let f = (s % u64::from(FUNCTIONS)) as usize;
        sample.pci[f].aer.as_mut().unwrap().correctable[0].1 += 1;
        errors += 1;
        let flap = s % 600 == 1;
        if flap {
            sample.pci[f].current = Some(LinkState::new(PcieGen::Gen3, 1));
            retrains += 1;
        }
        if schedule.taken(now_ms) {
            watcher.late();
        }
        let changes = watcher.observe(&sample, now_ms, now_ms as i64);
        assert!(!changes.is_empty() || s == 0);
        if flap {
            sample.pci[f].current = Some(LinkState::new(PcieGen::Gen3, 4));
            retrains += 1;
        }
        // The machine stalls for 2.5 s once a day: one late sample, two skipped.
        now_ms = schedule.due_ms() + if s % 86_400 == 43_200 { 2_500 } else { 3 };
        if s % 3600 == 0 {
            high = high.max(LIVE.load(Ordering::Relaxed).saturating_sub(before));
        }
    }
    let held = LIVE
        .load(Ordering::Relaxed)
        .saturating_sub(before)
        .max(high);
    assert!(
        held < BOUND_BYTES,
        "the watcher holds {held} B after a week (bound {BOUND_BYTES} B)"
    );
    let r = watcher.result();
    assert_eq!(r.samples, WEEK_S);
    assert_eq!(r.late_samples, 7);
    // Every error and every link change is counted, though the document keeps the last ones.
    let counted: u64 = r
        .devices
        .iter()
        .map(|d| d.errors_of(model::watch::AerSeverity::Correctable))
        .sum();
    assert_eq!(counted, errors - 1);
    let changed: u64 = r.devices.iter().map(|d| d.link_changes).sum();
    assert_eq!(changed, retrains);
    assert_eq!(r.changes.len(), model::watch::MAX_CHANGES);
    assert!(r.timeline.len() <= model::watch::MAX_TIMELINE);
    eprintln!("held after a week: {held} B (bound {BOUND_BYTES} B)");
}
