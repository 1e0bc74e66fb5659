//! `bench disk`'s findings: what the device's own request counts and the path's ceiling say
//! about a result.
//!
//! Requests per I/O come from `/proc/diskstats` (reads and writes completed: requests of the
//! block layer after splitting and merging, Documentation/admin-guide/iostats.rst) over the
//! engine's I/Os. The block layer splits an I/O into requests of at most `max_sectors_kb`, and
//! of at most `max_segments` pieces of physically contiguous memory of at most
//! `max_segment_size` each (`bio_split_rw_at()`, block/blk-merge.c;
//! Documentation/ABI/stable/sysfs-block): from 4 KiB pages a 1 MiB I/O is 256 pieces, which a
//! queue with fewer (virtio-blk 254, loop 128) splits; from a huge page it is a few.

use crate::efficiency::{above_ceiling, Beyond};
use model::ceiling::PathCeiling;
use model::disk::{Buffers, DiskResult, TestResult};
use model::inventory::block::QueueSettings;
use model::units::format_bytes_binary;
use model::{Finding, Severity};

/// A memory page of an application's buffer (x86-64, arm64 with 4 KiB granules, ARMv7).
const PAGE: u64 = 4096;

/// Requests per I/O from which an I/O counts as split: 1 when each I/O is one request, 2 when
/// each is split in two; other traffic on the device adds a little, merging takes a little.
const SPLIT_FROM: f64 = 1.5;

/// The most bytes one request of `queue` carries from buffers of `memory`, and the limit that
/// sets it in words (`max_segments 128 × 4 KiB pages`). `None` when the queue does not say.
/// From 4 KiB pages each page is a segment of its own unless it happens to follow the one
/// before it in RAM, so this is the bound for scattered pages, what a fresh buffer usually is.
pub fn request_limit(queue: &QueueSettings, memory: Buffers) -> Option<(u64, String)> {
    let sectors = queue
        .max_sectors_kb
        .map(|kb| (kb.saturating_mul(1024), format!("max_sectors_kb {kb}")));
    let segments = queue.max_segments.and_then(|n| match memory {
        Buffers::Pages => Some((
            n.saturating_mul(PAGE),
            format!("max_segments {n} × 4 KiB pages"),
        )),
        Buffers::HugePages => queue.max_segment_size.map(|size| {
            (
                n.saturating_mul(size),
                format!(
                    "max_segments {n} × max_segment_size {}",
                    format_bytes_binary(size)
                ),
            )
        }),
    });
    [sectors, segments]
        .into_iter()
        .flatten()
        .min_by_key(|(bytes, _)| *bytes)
}

/// What the run itself shows that can carry a rate past the ceiling: buffered I/O, zeros
/// written. The caller adds what the result does not hold: `diskless` (the engine did no I/O,
/// from bench's engine registry) and `emulated` (a device on the path, from the PCI
/// inventory).
pub fn beyond(result: &DiskResult, diskless: bool, emulated: Option<String>) -> Beyond {
    let p = &result.parameters;
    let writes = result.tests.iter().any(|t| t.spec.workload.writes());
    Beyond {
        no_io: diskless.then(|| {
            format!(
                "the {} engine does no I/O, so its rate is headroom's own overhead",
                p.engine
            )
        }),
        emulated,
        cache: (!p.direct).then(|| {
            "buffered I/O (--direct 0): reads may come from the page cache and writes may only \
             reach it"
                .to_string()
        }),
        compression: (p.zero_buffers && writes).then(|| {
            "zeros were written (--zero), which a compressing or deduplicating device stores \
             in a fraction of the bytes"
                .to_string()
        }),
        nominal_link: None,
    }
}

/// The findings of a disk result whose tests were judged against `ceiling` (each test with its
/// best run's efficiency): a rate above the ceiling, I/Os split into several requests, and what
/// an application with 4 KiB-page buffers would meet on this queue.
pub fn findings(
    result: &DiskResult,
    judged: &[(&TestResult, Option<f64>)],
    ceiling: Option<&PathCeiling>,
    beyond: &Beyond,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(ddr) = result.system.ddr.as_ref().filter(|d| d.scales()) {
        out.push(
            Finding::new(
                Severity::Warning,
                "devfreq",
                format!(
                    "the DDR frequency scaled during the run ({}): the memory clock followed \
                     the load, so these rates vary from run to run and with what else runs",
                    ddr.describe()
                ),
            )
            .with_advice(crate::kinds::audit::findings::system::DDR_ADVICE),
        );
    }
    if let Some(c) = ceiling {
        for (t, e) in judged {
            let (Some(e), Some(best)) = (e, t.best()) else {
                continue;
            };
            let measured = format!("{} {:.1} MB/s", t.spec.name(), best.mb_per_s);
            out.extend(above_ceiling(
                &t.spec.name(),
                &measured,
                *e,
                &c.bottleneck,
                beyond,
            ));
        }
    }
    let disk = result
        .target
        .device
        .as_ref()
        .map_or("the device", |d| d.disk.as_str());
    let memory = result.parameters.buffers;
    let queue = result.target.queue.as_ref();
    for (t, _) in judged {
        let Some(best) = t.best() else { continue };
        let cc = &best.cross_check;
        let Some(per_io) = cc.requests_per_io().filter(|r| *r >= SPLIT_FROM) else {
            continue;
        };
        let requests =
            cc.diskstats_read_requests.unwrap_or(0) + cc.diskstats_write_requests.unwrap_or(0);
        let bs = t.spec.block_size;
        let limit = queue.zip(memory).and_then(|(q, m)| {
            let (bytes, which) = request_limit(q, m)?;
            Some((m, bytes, which))
        });
        let why = match &limit {
            Some((m, bytes, which)) => format!(
                "; from {} one request of {disk} carries at most {} ({which})",
                m.words(),
                format_bytes_binary(*bytes)
            ),
            None => String::new(),
        };
        let advice = match limit {
            Some((Buffers::Pages, ..)) => {
                "this is what applications with 4 KiB-page buffers meet, and fio; --buffers \
                 huge shows what the device does with each I/O in one request"
                    .to_string()
            }
            Some((Buffers::HugePages, _, which)) if which.starts_with("max_sectors_kb") => {
                format!(
                    "for large sequential I/O, raise /sys/block/{disk}/queue/max_sectors_kb (up \
                     to max_hw_sectors_kb)"
                )
            }
            _ => "other I/O to the device during the run counts too: run on an idle device to \
                  tell"
                .to_string(),
        };
        out.push(
            Finding::new(
                Severity::Info,
                t.spec.name(),
                format!(
                    "{per_io:.2} requests per I/O (/proc/diskstats: {requests} requests of \
                     {disk} for {} I/Os of {}): the block layer split each I/O{why}",
                    cc.app_ios,
                    format_bytes_binary(bs)
                ),
            )
            .with_advice(advice),
        );
    }
    // Huge-page buffers measured the device; an application's 4 KiB pages may not fit one
    // request of this queue.
    if let (Some(Buffers::HugePages), Some(q)) = (memory, queue) {
        if let Some((limit, which)) = request_limit(q, Buffers::Pages) {
            let mut split: Vec<(u64, String)> = judged
                .iter()
                .filter(|(t, _)| t.spec.block_size > limit)
                .map(|(t, _)| (t.spec.block_size, format_bytes_binary(t.spec.block_size)))
                .collect();
            split.dedup();
            if let Some(&(largest, _)) = split.iter().max_by_key(|(b, _)| *b) {
                let sizes: Vec<String> = split.into_iter().map(|(_, l)| l).collect();
                out.push(
                    Finding::new(
                        Severity::Info,
                        disk,
                        format!(
                            "applications whose I/O buffers are 4 KiB pages (fio, dd and most \
                             programs) have each I/O of {} split into up to {} requests by {disk} \
                             ({which}: {} per request), so they may measure less than these \
                             huge-page buffers did",
                            sizes.join(", "),
                            largest.div_ceil(limit),
                            format_bytes_binary(limit)
                        ),
                    )
                    .with_advice("the default, --buffers pages, measures as they do"),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(max_sectors_kb: u64, max_segments: u64, max_segment_size: u64) -> QueueSettings {
        QueueSettings {
            max_sectors_kb: Some(max_sectors_kb),
            max_segments: Some(max_segments),
            max_segment_size: Some(max_segment_size),
            ..QueueSettings::default()
        }
    }

    /// Virtio-blk (max_segments 254) splits a 1 MiB I/O from 4 KiB pages
    /// in two (1016 KiB per request), not one from a huge page.
    #[test]
    fn the_limit_that_splits_an_io_depends_on_the_buffers_memory() {
        let virtio = queue(1280, 254, 4 << 30);
        assert_eq!(
            request_limit(&virtio, Buffers::Pages),
            Some((1016 << 10, "max_segments 254 × 4 KiB pages".to_string()))
        );
        assert_eq!(
            request_limit(&virtio, Buffers::HugePages),
            Some((1280 << 10, "max_sectors_kb 1280".to_string()))
        );
        let looped = queue(1280, 128, 64 << 10);
        assert_eq!(
            request_limit(&looped, Buffers::HugePages),
            Some((1280 << 10, "max_sectors_kb 1280".to_string()))
        );
        assert_eq!(
            request_limit(&QueueSettings::default(), Buffers::Pages),
            None
        );
    }
}
