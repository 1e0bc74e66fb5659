//! The PCI audit's findings: links below what both ends support, a device the slot holds
//! back, MPS and MRRS smaller than they could be, ASPM, a capped target speed, AER errors,
//! config space that could not be read.

use model::inventory::pci::address::PciAddress;
use model::inventory::pci::config::ExpressLink;
use model::inventory::pci::{AuditedFunction, ConfigSource, PciAudit};
use model::units::{format_bytes_binary, format_mb_per_s};
use model::{Finding, LinkState, Severity};
use std::collections::BTreeMap;

/// What a downgraded link means for the function's memory BARs: every CPU load and store to
/// them crosses the link, so the finding about the link says so (`clause`, to
/// end its message) and how to measure it (`advice`). `None` without memory BARs.
struct BarsAcross {
    clause: String,
    advice: String,
}

fn bars_across(
    f: Option<&AuditedFunction>,
    link: LinkState,
    source: ConfigSource,
) -> Option<BarsAcross> {
    let f = f?;
    let bars = &f.memory_bars;
    let sized = bars.iter().all(|b| b.size.is_some());
    let list: Vec<String> = bars
        .iter()
        .map(|b| match b.size {
            Some(size) => format!("BAR {} of {}", b.index, format_bytes_binary(size)),
            None => format!("BAR {}", b.index),
        })
        .collect();
    // The largest BAR (the first of equals); without sizes (a dump), the first.
    let pick = if sized {
        bars.iter()
            .min_by_key(|b| (std::cmp::Reverse(b.size), b.index))?
    } else {
        bars.first()?
    };
    let which = match (bars.len(), sized) {
        (1, _) => format!("BAR {}", pick.index),
        (_, true) => format!("BAR {}, the largest", pick.index),
        (_, false) => format!(
            "BAR {}; {} no BAR sizes",
            pick.index,
            match source {
                ConfigSource::LspciDump => "an lspci dump has",
                // A captured tree without the functions' `resource` files.
                ConfigSource::Sysfs => "the tree's config space has",
            }
        ),
    };
    // Loads from a BAR a driver uses read its registers, and a read can change the device
    //: `bench mmio` asks for --allow-bound then, and the advice says why.
    // A dump does not say whether a driver is bound.
    let (flag, bound) = match (&f.driver, source) {
        (Some(d), _) => (
            " --allow-bound",
            format!(
                "; driver {d} is bound, and a register read can change the device (virtio's ISR \
                 status clears when read): load a window whose registers you know (--offset, \
                 --size) or unbind the driver first"
            ),
        ),
        (None, ConfigSource::LspciDump) => (
            "",
            "; with a driver bound it needs --allow-bound, as a register read can change the \
             device (virtio's ISR status clears when read)"
                .to_string(),
        ),
        (None, ConfigSource::Sysfs) => ("", String::new()),
    };
    Some(BarsAcross {
        clause: format!(
            "; CPU loads and stores to its memory {} ({}) cross this link at {link}",
            if bars.len() == 1 { "BAR" } else { "BARs" },
            list.join(", ")
        ),
        advice: format!(
            "measure what the CPU gets across it: `headroom bench mmio {}:{}{flag}` \
             ({which}{bound})",
            f.address, pick.index
        ),
    })
}

/// The finding with `bars`' clause at the end of its message and its advice after any other.
fn with_bars(mut finding: Finding, bars: Option<BarsAcross>) -> Finding {
    if let Some(b) = bars {
        finding.message.push_str(&b.clause);
        finding.advice = Some(match finding.advice.take() {
            Some(a) => format!("{a}; {}", b.advice),
            None => b.advice,
        });
    }
    finding
}

/// A device's link below its own capability when the port above is not in the input (an
/// lspci dump of one endpoint, a bridge firmware hides) or reports no capability (a 4.19
/// platform root port without `max_link_*`): what is known is that the device
/// could do more; whether the port or the slot allows it is not.
fn single_ended_downgrade(
    f: &AuditedFunction,
    name: &str,
    source: ConfigSource,
) -> Option<Finding> {
    let c = f.own_link_ceiling.as_ref()?;
    let down = f.downgraded.filter(|d| d.any())?;
    let (current, capable) = (f.current_link()?, f.capable_link()?);
    let mut what = Vec::new();
    if down.speed {
        what.push(format!("speed {} of its {}", current.gen, capable.gen));
    }
    if down.width {
        what.push(format!(
            "width x{} of its x{}",
            current.width, capable.width
        ));
    }
    Some(with_bars(
        Finding::new(
            Severity::Warning,
            f.address.to_string(),
            format!(
                "{name} runs its link at {current}, below its own capability {capable} \
                 ({}): its ceiling is {} instead of {} (-{:.0} %); the port above is not in \
                 the input or does not report its capability, so whether it or the slot \
                 allows more is unknown",
                what.join(", "),
                format_mb_per_s(c.current.effective_write_bps),
                format_mb_per_s(c.capable.effective_write_bps),
                c.loss_percent
            ),
        )
        .with_advice(
            "read the port above's LnkCap (`lspci -vv -s PORT`): if it supports more, check \
             the slot, cable, riser or retimer; if not, the slot is the limit",
        ),
        bars_across(Some(f), current, source),
    ))
}

/// The findings of the audit, most severe first.
pub fn findings(audit: &PciAudit) -> Vec<Finding> {
    let mut out = Vec::new();
    let by_addr: BTreeMap<PciAddress, &AuditedFunction> =
        audit.functions.iter().map(|f| (f.address, f)).collect();
    let name = |a: &PciAddress| {
        by_addr
            .get(a)
            .map(|f| format!("{a} ({})", f.display_name()))
            .unwrap_or_else(|| a.to_string())
    };
    for l in &audit.links {
        let c = &l.comparison;
        let subject = l.downstream.to_string();
        if c.below_common() {
            let mut what = Vec::new();
            if c.speed_below_common {
                what.push(format!(
                    "speed {} where both ends support {}",
                    c.current.gen, c.common.gen
                ));
            }
            if c.width_below_common {
                what.push(format!(
                    "width x{} where both ends support x{}",
                    c.current.width, c.common.width
                ));
            }
            out.push(with_bars(
                Finding::new(
                    Severity::Warning,
                    &subject,
                    format!(
                        "link {} -> {} runs below what both ends support: {}; its ceiling \
                         is {} instead of {} (-{:.0} %)",
                        l.upstream,
                        name(&l.downstream),
                        what.join(", "),
                        format_mb_per_s(l.ceiling.current.effective_write_bps),
                        format_mb_per_s(l.ceiling.capable.effective_write_bps),
                        l.ceiling.loss_percent
                    ),
                )
                .with_advice(
                    "check the slot, cable, riser or retimer and the firmware's link speed \
                     setting; a link that retrains lower under load points to signal integrity",
                ),
                bars_across(
                    by_addr.get(&l.downstream).copied(),
                    c.current,
                    audit.config_source,
                ),
            ));
        } else if c.current.gen < c.downstream.gen || c.current.width < c.downstream.width {
            out.push(with_bars(
                Finding::new(
                    Severity::Info,
                    &subject,
                    format!(
                        "{} can do {} but the port above ({}) supports only {}: the link runs \
                         at {}, the best the slot allows",
                        name(&l.downstream),
                        c.downstream,
                        l.upstream,
                        c.upstream,
                        c.current
                    ),
                ),
                bars_across(
                    by_addr.get(&l.downstream).copied(),
                    c.current,
                    audit.config_source,
                ),
            ));
        }
        if let (Some(common), Some(up), Some(down)) = (
            l.max_payload_common,
            l.max_payload_upstream,
            l.max_payload_downstream,
        ) {
            if up.min(down) < common {
                out.push(
                    Finding::new(
                        Severity::Info,
                        &subject,
                        format!(
                            "MaxPayload is {} bytes on link {} -> {} where both ends support {} \
                             bytes: every TLP carries less data for the same overhead{}",
                            up.min(down),
                            l.upstream,
                            l.downstream,
                            common,
                            l.ceiling
                                .at_best_mps
                                .as_ref()
                                .map(|b| format!(
                                    " ({} instead of {} per direction, +{:.1} %)",
                                    format_mb_per_s(b.effective_write_bps),
                                    format_mb_per_s(l.ceiling.current.effective_write_bps),
                                    100.0
                                        * (b.effective_write_bps
                                            / l.ceiling.current.effective_write_bps
                                            - 1.0)
                                ))
                                .unwrap_or_default()
                        ),
                    )
                    .with_advice(
                        "boot with pci=pcie_bus_perf to let the kernel raise MPS (the Rockchip PCIe \
                         guide's tuning), if no peer-to-peer DMA needs the smaller size",
                    ),
                );
            }
        }
        if let (Some(mrrs), Some(best)) = (l.max_read_request, &l.ceiling.at_max_mrrs) {
            let mps = l.ceiling.current.params.mps;
            if mrrs < u32::from(mps) {
                out.push(
                    Finding::new(
                        Severity::Info,
                        &subject,
                        format!(
                            "MaxReadReq is {mrrs} bytes on {}, below its MaxPayload {mps}: every \
                             read completion carries at most {mrrs} bytes; reads top at {} \
                             instead of {} with MaxReadReq 4096",
                            l.downstream,
                            format_mb_per_s(l.ceiling.current.effective_read_bps),
                            format_mb_per_s(best.effective_read_bps)
                        ),
                    )
                    .with_advice(
                        "the driver or pci=pcie_bus_perf sets MaxReadReq; raise it unless a \
                         quality-of-service reason keeps it small",
                    ),
                );
            }
        }
        if l.aspm_enabled.any() {
            out.push(
                Finding::new(
                    Severity::Info,
                    &subject,
                    format!(
                        "ASPM {} enabled on link {} -> {}: the link sleeps when idle and pays \
                         an exit latency on the next transfer",
                        l.aspm_enabled.label(),
                        l.upstream,
                        l.downstream
                    ),
                )
                .with_advice(
                    "for benchmarks, set /sys/module/pcie_aspm/parameters/policy to \
                     performance or boot with pcie_aspm=off",
                ),
            );
        }
    }
    for f in &audit.functions {
        let subject = f.address.to_string();
        if let Some(finding) = single_ended_downgrade(f, &name(&f.address), audit.config_source) {
            out.push(finding);
        }
        // In a multi-function device only function 0's Target Link Speed controls the link
        // (PCIe Base Spec 6.0 section 7.5.3.19: RsvdP in the other functions).
        let controls_link =
            f.address.function == 0 || f.port_type().is_some_and(|t| t.is_downstream_facing());
        let target = f
            .express()
            .and_then(|e| e.link2.as_ref())
            .and_then(|l| l.target_speed)
            .filter(|_| controls_link);
        if let (Some(t), Some(cap)) = (target, f.express_link().and_then(ExpressLink::capable)) {
            if t < cap.gen {
                out.push(
                    Finding::new(
                        Severity::Warning,
                        &subject,
                        format!(
                            "{}: target link speed (LnkCtl2) is {} below its capability {}: \
                             the link will not train faster",
                            name(&f.address),
                            t,
                            cap.gen
                        ),
                    )
                    .with_advice(
                        "firmware or a driver capped the speed (e.g. a device-tree \
                         max-link-speed); raise it if the board's signal path allows",
                    ),
                );
            }
        }
        let counted = f
            .aer_counters
            .as_ref()
            .map(|a| a.nonzero())
            .unwrap_or_default();
        if !counted.is_empty() {
            let list: Vec<String> = counted.iter().map(|(n, c)| format!("{n} {c}")).collect();
            let fatal = f.aer_counters.as_ref().is_some_and(|a| {
                a.fatal
                    .iter()
                    .any(|(n, c)| *c > 0 && !n.starts_with("TOTAL_"))
            });
            out.push(Finding::new(
                if fatal {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                &subject,
                format!(
                    "{} has counted AER errors since boot: {}",
                    name(&f.address),
                    list.join(", ")
                ),
            ));
        }
        if let Some(a) = f.aer() {
            let (ue, ce) = (&a.uncorrectable_status.set, &a.correctable_status.set);
            if !ue.is_empty() || !ce.is_empty() {
                let mut parts = Vec::new();
                if !ue.is_empty() {
                    parts.push(format!("UESta {}", ue.join(" ")));
                }
                if !ce.is_empty() {
                    parts.push(format!("CESta {}", ce.join(" ")));
                }
                out.push(Finding::new(
                    if ue.is_empty() {
                        Severity::Warning
                    } else {
                        Severity::Error
                    },
                    &subject,
                    format!(
                        "{} reports AER error status bits set: {}",
                        name(&f.address),
                        parts.join("; ")
                    ),
                ));
            }
        }
    }
    let unreadable = audit
        .functions
        .iter()
        .filter(|f| f.config_bytes > 0 && f.config_bytes < 256)
        .count();
    if unreadable > 0 {
        let functions = if unreadable == 1 {
            "1 function".to_string()
        } else {
            format!("{unreadable} functions")
        };
        out.push(match audit.config_source {
            ConfigSource::Sysfs => Finding::new(
                Severity::Info,
                "config space",
                format!(
                    "only the first 64 bytes of config space were readable for {functions}: \
                     MPS, ASPM, AER and link capabilities of both ends are unknown"
                ),
            )
            .with_advice("run as root for the full audit"),
            // Running headroom as root cannot add bytes to a file: the capture must change.
            ConfigSource::LspciDump => Finding::new(
                Severity::Info,
                "config space",
                format!(
                    "the dump gives fewer than 256 bytes of config space for {functions} \
                     (captured with `lspci -x`, by lspci without root, or cut short): what \
                     lies past them (MPS, ASPM, AER, link capabilities) is unknown"
                ),
            )
            .with_advice("capture the dump with `sudo lspci -xxx` for the full audit"),
        });
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}
