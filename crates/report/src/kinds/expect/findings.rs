//! An audit checked against its manifest: each expected function, disk and interface found
//! or not, at the link, driver, speed and transport it should have.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(super) fn compare<T: PartialOrd>(how: Match, found: T, expected: T) -> bool {
    match how {
        Match::AtLeast => found >= expected,
        Match::Exactly => found == expected,
    }
}

pub(super) fn how_word(how: Match) -> &'static str {
    match how {
        Match::AtLeast => "at least ",
        Match::Exactly => "",
    }
}

/// Every check of `m` against the audit `a`, in the manifest's order.
pub fn check(m: &Manifest, a: &AuditDocument) -> Vec<Check> {
    let mut out = Vec::new();
    for (i, e) in m.pci.iter().enumerate() {
        let found: Vec<&AuditedFunction> = a
            .pci
            .functions
            .iter()
            .filter(|f| pci_matches(a, e, f))
            .collect();
        let selectors = selectors_of(&[
            ("address", &e.address),
            ("slot", &e.slot),
            ("id", &e.id),
            ("class", &e.class),
            ("driver", &e.driver),
            ("block", &e.block),
            ("interface", &e.interface),
        ]);
        if found.is_empty() {
            out.push(missing("pci", i + 1, &selectors, e.name.as_deref()));
            continue;
        }
        for f in found {
            check_function(&mut out, i + 1, e, f, a);
        }
    }
    for (i, e) in m.usb.iter().enumerate() {
        let devices: Vec<&UsbDevice> = a
            .usb
            .iter()
            .flat_map(|u| &u.devices)
            .filter(|d| {
                e.device.as_ref().is_none_or(|n| &d.name == n)
                    && e.id.as_ref().is_none_or(|id| {
                        id_of(d.vendor_id, d.product_id).is_some_and(|x| x.eq_ignore_ascii_case(id))
                    })
                    && e.block
                        .as_ref()
                        .is_none_or(|b| block_device(a, b, false).as_deref() == Some(&d.name))
                    && e.interface
                        .as_ref()
                        .is_none_or(|n| interface_device(a, n).as_deref() == Some(&d.name))
            })
            .collect();
        let selectors = selectors_of(&[
            ("device", &e.device),
            ("id", &e.id),
            ("block", &e.block),
            ("interface", &e.interface),
        ]);
        if devices.is_empty() {
            out.push(missing("usb", i + 1, &selectors, e.name.as_deref()));
            continue;
        }
        for d in devices {
            let description = usb_name(d).unwrap_or_default();
            let base = Check {
                pass: true,
                section: "usb",
                entry: i + 1,
                device: d.name.clone(),
                description,
                check: "present",
                expected: "present".into(),
                found: "present".into(),
            };
            if let Some(want) = e.speed_mbps {
                let (pass, found) = match d.speed_mbps {
                    Some(s) => (compare(e.speed_match, s, want), format!("{s}M")),
                    None => (false, "speed unknown".into()),
                };
                out.push(Check {
                    pass,
                    check: "speed",
                    expected: format!("{}{want}M", how_word(e.speed_match)),
                    found,
                    ..base.clone()
                });
            }
            if let Some(want) = &e.transport {
                let have = d.storage.as_ref().and_then(transport_of);
                out.push(Check {
                    pass: have.as_deref() == Some(want.as_str()),
                    check: "transport",
                    expected: want.clone(),
                    found: have.unwrap_or_else(|| "no mass-storage transport".into()),
                    ..base.clone()
                });
            }
            if e.speed_mbps.is_none() && e.transport.is_none() {
                out.push(base);
            }
        }
    }
    for (i, e) in m.block.iter().enumerate() {
        let found: Vec<&BlockDevice> = a
            .block
            .iter()
            .flat_map(|b| &b.devices)
            .filter(|d| d.kind == BlockKind::Disk && block_matches(e, d))
            .collect();
        let selectors = selectors_of(&[
            ("path", &e.path),
            ("wwid", &e.wwid),
            ("serial", &e.serial),
            ("device", &e.device),
        ]);
        if found.is_empty() {
            out.push(missing("block", i + 1, &selectors, e.name.as_deref()));
            continue;
        }
        for d in found {
            check_disk(&mut out, i + 1, e, d);
        }
    }
    for (i, e) in m.net.iter().enumerate() {
        let ifaces: Vec<_> = a
            .net
            .iter()
            .flat_map(|n| &n.interfaces)
            .filter(|n| {
                e.interface.as_ref().is_none_or(|x| &n.name == x)
                    && e.driver
                        .as_ref()
                        .is_none_or(|x| n.driver.as_deref() == Some(x.as_str()))
            })
            .collect();
        let selectors = selectors_of(&[("interface", &e.interface), ("driver", &e.driver)]);
        if ifaces.is_empty() {
            out.push(missing("net", i + 1, &selectors, e.name.as_deref()));
            continue;
        }
        for n in ifaces {
            let base = Check {
                pass: true,
                section: "net",
                entry: i + 1,
                device: n.name.clone(),
                description: n
                    .driver
                    .as_ref()
                    .map(|d| format!("driver {d}"))
                    .unwrap_or_default(),
                check: "present",
                expected: "present".into(),
                found: "present".into(),
            };
            match e.speed_mbps {
                Some(want) => {
                    let (pass, found) = match n.speed_mbps {
                        Some(s) => (compare(e.speed_match, s, want), format!("{s} Mb/s")),
                        None => (false, no_speed(n)),
                    };
                    out.push(Check {
                        pass,
                        check: "speed",
                        expected: format!("{}{want} Mb/s", how_word(e.speed_match)),
                        found,
                        ..base
                    });
                }
                None => out.push(base),
            }
        }
    }
    out
}

pub(super) fn block_matches(e: &BlockExpect, d: &BlockDevice) -> bool {
    let eq = |want: &Option<String>, have: Option<String>| match want {
        Some(w) => have.is_some_and(|h| h.trim() == w.trim()),
        None => true,
    };
    eq(&e.path, d.bus_key())
        && eq(&e.wwid, d.wwid.clone())
        && eq(&e.serial, d.serial.clone())
        && eq(&e.device, Some(d.name.clone()))
}

/// The checks a `[[block]]` entry asks of the disk `d`, each exact.
pub(super) fn check_disk(out: &mut Vec<Check>, entry: usize, e: &BlockExpect, d: &BlockDevice) {
    let base = Check {
        pass: true,
        section: "block",
        entry,
        device: d.name.clone(),
        description: match (&d.model, d.bus_key()) {
            (Some(m), Some(p)) => format!("{}, at {p}", m.trim()),
            (Some(m), None) => m.trim().to_string(),
            (None, Some(p)) => format!("at {p}"),
            (None, None) => String::new(),
        },
        check: "present",
        expected: "present".into(),
        found: "present".into(),
    };
    let q = d.queue.as_ref();
    let before = out.len();
    let mut push = |check: &'static str, expected: Option<String>, found: Option<String>| {
        if let Some(want) = expected {
            out.push(Check {
                pass: found.as_deref().map(str::trim) == Some(want.trim()),
                check,
                expected: want,
                found: found.unwrap_or_else(|| "unknown (not in sysfs)".into()),
                ..base.clone()
            });
        }
    };
    let kib = |v: Option<u64>| v.map(|v| format!("{v} KiB"));
    let bytes = |v: Option<u64>| v.map(|v| format!("{v} B"));
    push("model", e.model.clone(), d.model.clone());
    push(
        "transport",
        e.transport.clone(),
        Some(transport_name(d.transport)),
    );
    push("size", bytes(e.size_bytes), bytes(d.size_bytes));
    let rota =
        |r: Option<bool>| r.map(|r| if r { "rotational" } else { "not rotational" }.to_string());
    push(
        "rotational",
        rota(e.rotational),
        rota(q.and_then(|q| q.rotational)),
    );
    push(
        "scheduler",
        e.scheduler.clone(),
        q.and_then(|q| q.scheduler.clone()),
    );
    push(
        "max_sectors_kb",
        kib(e.max_sectors_kb),
        kib(q.and_then(|q| q.max_sectors_kb)),
    );
    push(
        "max_hw_sectors_kb",
        kib(e.max_hw_sectors_kb),
        kib(q.and_then(|q| q.max_hw_sectors_kb)),
    );
    let small = |v: Option<u32>| bytes(v.map(u64::from));
    push(
        "logical block size",
        small(e.logical_block_size),
        small(q.and_then(|q| q.logical_block_size)),
    );
    push(
        "physical block size",
        small(e.physical_block_size),
        small(q.and_then(|q| q.physical_block_size)),
    );
    if out.len() == before {
        out.push(base);
    }
}

/// What an interface without a speed shows instead: a link that is down, or one that is up
/// with a driver that reports no speed (virtio_net, most virtual NICs).
pub(super) fn no_speed(n: &model::inventory::net::NetInterface) -> String {
    match (n.operstate.as_deref(), n.carrier) {
        (Some("down"), _) | (_, Some(false)) => "no speed: the link is down".into(),
        (Some("up"), _) | (_, Some(true)) => format!(
            "no speed reported: the link is up, but {} reports no speed",
            n.driver
                .as_deref()
                .map_or("its driver".to_string(), |d| format!("its driver {d}"))
        ),
        _ => "no speed reported".into(),
    }
}

pub(super) fn missing(
    section: &'static str,
    entry: usize,
    selectors: &str,
    name: Option<&str>,
) -> Check {
    Check {
        pass: false,
        section,
        entry,
        device: format!("[{selectors}]"),
        description: name.unwrap_or_default().to_string(),
        check: "present",
        expected: "present".into(),
        found: "no such device".into(),
    }
}

pub(super) fn check_function(
    out: &mut Vec<Check>,
    entry: usize,
    e: &PciExpect,
    f: &AuditedFunction,
    a: &AuditDocument,
) {
    let base = Check {
        pass: true,
        section: "pci",
        entry,
        device: f.address.to_string(),
        description: describe_function(f),
        check: "present",
        expected: "present".into(),
        found: "present".into(),
    };
    let link = f.upstream_link.and_then(|i| a.pci.links.get(i));
    let current = f.current_link();
    let unknown = "unknown (no link state: not PCI Express, or config space not readable)";
    let before = out.len();
    if let Some(want) = e.link_speed_gts {
        let (pass, found) = match current {
            Some(c) => (compare(e.link_match, c.gen, want), c.gen.to_string()),
            None => (false, unknown.to_string()),
        };
        out.push(Check {
            pass,
            check: "link speed",
            expected: format!("{}{want}", how_word(e.link_match)),
            found,
            ..base.clone()
        });
    }
    if let Some(want) = e.link_width {
        let (pass, found) = match current {
            Some(c) => (
                compare(e.link_match, c.width, want),
                format!("x{}", c.width),
            ),
            None => (false, unknown.to_string()),
        };
        out.push(Check {
            pass,
            check: "link width",
            expected: format!("{}x{want}", how_word(e.link_match)),
            found,
            ..base.clone()
        });
    }
    if let Some(want) = e.mps {
        let have = link.and_then(|l| l.max_payload_downstream).or_else(|| {
            f.express()
                .and_then(|x| x.device.as_ref())
                .map(|d| d.max_payload)
        });
        out.push(Check {
            pass: have == Some(want),
            check: "MPS",
            expected: format!("{want} B"),
            found: have.map_or(
                "unknown (config space not readable: run as root)".into(),
                |v| format!("{v} B"),
            ),
            ..base.clone()
        });
    }
    if let Some(most) = e.aer_errors {
        let (pass, found) = match &f.aer_counters {
            Some(c) => {
                let nonzero = c.nonzero();
                let list: Vec<String> = nonzero.iter().map(|(n, c)| format!("{n} {c}")).collect();
                let total = c.total();
                let found = if list.is_empty() {
                    "0".to_string()
                } else {
                    format!("{total} ({})", list.join(", "))
                };
                (total <= most, found)
            }
            None => (
                false,
                "unknown (no AER statistics in sysfs for this function)".to_string(),
            ),
        };
        out.push(Check {
            pass,
            check: "AER errors",
            expected: if most == 0 {
                "none".into()
            } else {
                format!("at most {most}")
            },
            found,
            ..base.clone()
        });
    }
    if let Some(want) = &e.aspm {
        let want_bits = aspm_from_label(want);
        let have = link.map(|l| (l.aspm_enabled.l0s, l.aspm_enabled.l1));
        out.push(Check {
            pass: have.is_some() && have == want_bits,
            check: "ASPM",
            expected: want_bits.map_or(want.clone(), |(a, b)| aspm_label(a, b).to_string()),
            found: have.map_or("unknown (no link above this function)".into(), |(a, b)| {
                aspm_label(a, b).to_string()
            }),
            ..base.clone()
        });
    }
    if out.len() == before {
        out.push(base);
    }
}
