//! A real disk measurement for the tests that judge and render one: the null engine (fio's
//! null ioengine: no I/O, headroom's own overhead) on a small test file.
#![allow(clippy::unwrap_used)] // a panic in a test helper is a failed test

use bench::disk::{self, target, Progress};
use bench::Bench;
use model::disk::profiles::{self, Profile};
use model::disk::{DiskResult, HostFacts};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The null engine's result of one sequential read and one random 70 % read mix on a 1 MiB
/// test file in `dir`.
pub fn null_result(dir: &Path) -> DiskResult {
    let overrides = profiles::Overrides {
        rw: Some("randrw".into()),
        rwmixread: Some(70),
        size: Some("1M".into()),
        runtime: Some("50ms".into()),
        ..Default::default()
    };
    let (engine, _) = disk::choose_engine("null").unwrap();
    let (parameters, tests) =
        profiles::build(Profile::Custom, &overrides, engine.name(), 1).unwrap();
    let opts = target::TargetOptions {
        size: parameters.size_bytes,
        direct: false,
        writes: true,
        ..Default::default()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let insp = target::inspect(dir).unwrap();
    let t = target::prepare(insp, None, None, &[], &opts, &stop, None).unwrap();
    disk::DiskRun {
        parameters,
        tests,
        engine,
        after_test: None,
        kernel_counts: None,
        target: &t,
        system: HostFacts::default(),
    }
    .run(&stop, |_: &Progress| {})
    .unwrap()
}
