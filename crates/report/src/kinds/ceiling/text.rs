//! The tables `headroom ceiling` prints for each link kind, in `--unit`, with how each
//! ceiling is derived.

use super::*;
use std::fmt::Write as _;

impl PcieQuery {
    /// The tables: raw ceilings shaped like the seed's table 2.1, then one table per
    /// assumption set and generation.
    pub fn text(&self, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let a = self;
        let sets = &self.sets;
        let ceiling = Self::ceiling;
        let mut out = String::new();
        let u = unit.label();
        let width_header = |t: &mut Vec<String>| {
            for w in &a.lanes {
                t.push(format!("x{w} {u}"));
            }
        };

        // Raw ceilings, shaped like the seed's table 2.1.
        let mut header = vec![s("generation"), s("coding"), s("rate")];
        width_header(&mut header);
        let mut raw = Rows::new(header, 3);
        for &gen in &a.gens {
            let mut row = vec![
                format!("Gen {}", gen.number()),
                s(pcie::coding_label(gen)),
                format!("{gen}"),
            ];
            for &w in &a.lanes {
                row.push(num(pcie::raw_bps(LinkState::new(gen, w)), unit));
            }
            raw.row(row);
        }
        writeln!(
            out,
            "PCIe raw ceiling per direction (after line coding), {u} = {}:",
            unit_definition(unit)
        )?;
        out.push_str(&raw.render());

        for set in sets {
            for &gen in &a.gens {
                writeln!(out)?;
                writeln!(
                    out,
                    "PCIe {} (Gen {}) per direction, {u}; assumptions: {}",
                    gen,
                    gen.number(),
                    set_caption(set, gen)
                )?;
                let mut header = vec![s("ceiling")];
                width_header(&mut header);
                let mut t = Rows::new(header, 1);
                let mut row = vec![format!("raw (after {})", pcie::coding_label(gen))];
                for &w in &a.lanes {
                    row.push(num(pcie::raw_bps(LinkState::new(gen, w)), unit));
                }
                t.row(row);
                type Pick = fn(&PcieCeiling) -> f64;
                let kinds: [(&str, Pick); 4] = [
                    ("TLP write", |c| c.tlp_write_bps),
                    ("TLP read", |c| c.tlp_read_bps),
                    ("effective write", |c| c.effective_write_bps),
                    ("effective read", |c| c.effective_read_bps),
                ];
                for (label, pick) in kinds {
                    for &mps in &a.mps {
                        let first = ceiling(gen, a.lanes[0], set, mps);
                        let mut row = vec![if label.ends_with("read") {
                            format!(
                                "{label}, MPS {mps}, MRRS {}, completions {} B",
                                set.mrrs, first.completion_payload
                            )
                        } else {
                            let per_tlp = first.write_overhead.total();
                            format!("{label}, MPS {mps} ({mps}/{} B)", u32::from(mps) + per_tlp)
                        }];
                        for &w in &a.lanes {
                            row.push(num(pick(&ceiling(gen, w, set, mps)), unit));
                        }
                        t.row(row);
                    }
                }
                out.push_str(&t.render());
                // The read requests ride the other direction; their share of it does not depend
                // on the width, so one sentence per table.
                let shares: Vec<String> = a
                    .mps
                    .iter()
                    .map(|&mps| {
                        let c = ceiling(gen, a.lanes[0], set, mps);
                        format!("{:.1} % (MPS {mps})", 100.0 * c.read_request_share)
                    })
                    .collect();
                let request_bytes = ceiling(gen, a.lanes[0], set, a.mps[0])
                    .write_overhead
                    .total();
                writeln!(
                    out,
                    "reads: one {request_bytes} B request per {} B (MRRS) travels the other way and takes \
                     {} of that direction at the read ceiling.",
                    set.mrrs,
                    shares.join(", ")
                )?;
            }
        }
        if sets.iter().any(|p| p.set == AssumptionSet::Seed) && a.gens.contains(&PcieGen::Gen3) {
            writeln!(out)?;
            writeln!(
                out,
                "The Rockchip guide prints 807.8 MB/s (x1, MPS 128), 6.464 GB/s (x8, MPS 128) and \
                 7.1002 GB/s (x8, MPS 256); the exact values are 807.9 MB/s, 6.463 and 7.1003 GB/s \
                 (rounding slips in the guide)."
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "effective: both directions busy; Ack and UpdateFC DLLPs at the PCIe spec's latency \
             limits (tables 3-7..3-9, via pcie-bench), SKP ordered sets at their longest interval."
        )?;
        Ok(out)
    }
}

impl UsbCeilings {
    /// The table of `transfers` per speed, how each is derived, and the guide's figures.
    pub fn text(
        &self,
        transfers: &[usb::TransferType],
        unit: RateUnit,
    ) -> Result<String, std::fmt::Error> {
        let rows = &self.speeds;
        let guide = &self.guide_table_1_2;
        let mut out = String::new();
        let u = unit.label();
        let mut header = vec![s("speed"), s("signalling"), s("coding"), format!("raw {u}")];
        for t in transfers {
            header.push(format!("{} {u}", t.label()));
        }
        let mut table = Rows::new(header, 3);
        for r in rows {
            let mut row = vec![
                s(&r.label),
                format!("{} Mb/s", r.signalling_mbps),
                s(&r.coding),
                num(r.raw_bps, unit),
            ];
            for t in &r.transfers {
                row.push(opt_num(t.bytes_per_second, unit));
            }
            table.row(row);
        }
        writeln!(
            out,
            "USB ceilings per endpoint and direction, {u} = {}:",
            unit_definition(unit)
        )?;
        out.push_str(&table.render());
        writeln!(out)?;
        writeln!(out, "How each ceiling is derived:")?;
        for r in rows {
            match r.transfers.first() {
                Some(first) if r.transfers.iter().all(|t| t.basis == first.basis) => {
                    writeln!(out, "  {}: {}", r.label, first.basis)?;
                }
                _ => {
                    for t in &r.transfers {
                        writeln!(out, "  {} {}: {}", r.label, t.transfer.label(), t.basis)?;
                    }
                }
            }
        }

        if let Some(e) = &self.endpoint {
            endpoint_text(&mut out, e, unit)?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "Rockchip USB guide, table 1-2 \"Max Transfer Speed\" (printed as MBps), checked:"
        )?;
        let mut g = Rows::new(
            vec![
                s("speed"),
                s("transfer"),
                s("guide"),
                s("10^6 B/s"),
                s("2^20 B/s"),
                s("guide's unit"),
            ],
            2,
        )
        .last_column_left();
        for f in guide {
            g.row(vec![
                s(f.speed.label()),
                s(f.transfer.label()),
                s(&f.printed),
                num(f.bytes_per_second, RateUnit::MBps),
                num(f.bytes_per_second, RateUnit::MiBps),
                match f.mega {
                    Some(usb::Mega::Si) => s("10^6 (MB)"),
                    Some(usb::Mega::Binary) => s("2^20 (MiB)"),
                    None => f.note.clone(),
                },
            ]);
        }
        out.push_str(&g.render());
        Ok(out)
    }
}

impl SataCeilings {
    pub fn text(&self, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let u = unit.label();
        let mut t = Rows::new(
            vec![
                s("link"),
                s("coding"),
                format!("raw {u}"),
                format!("data {u}"),
            ],
            2,
        );
        for c in &self.links {
            t.row(vec![
                format!("SATA {} Gb/s", c.gbps),
                s(&c.coding),
                num(c.raw_bps, unit),
                num(c.data_bps, unit),
            ]);
        }
        writeln!(out, "SATA ceilings, {u} = {}:", unit_definition(unit))?;
        out.push_str(&t.render());
        writeln!(
            out,
            "data: 8192 B Data FISes less SOF, FIS type, CRC and EOF Dwords and an ALIGN pair per \
             256 Dwords; command FISes and handshakes not counted."
        )?;
        Ok(out)
    }
}

impl EthCeilings {
    pub fn text(&self, a: &EthQuery, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let u = unit.label();
        let mut t = Rows::new(
            vec![
                s("rate"),
                s("protocol"),
                s("payload B"),
                s("frames"),
                s("wire B"),
                format!("goodput {u}"),
                s("goodput Mbit/s"),
            ],
            2,
        );
        for c in &self.ceilings {
            let proto = match c.params.transport {
                eth::Transport::Tcp { timestamps: true } => "TCP, timestamps",
                eth::Transport::Tcp { timestamps: false } => "TCP",
                eth::Transport::Udp { .. } => "UDP",
            };
            let ip = match c.params.ip {
                eth::IpVersion::V4 => "IPv4",
                eth::IpVersion::V6 => "IPv6",
            };
            t.row(vec![
                s(eth::rate_name(c.params.rate).unwrap_or("?")),
                format!("{proto} / {ip}"),
                s(c.payload_bytes),
                s(c.frames),
                s(c.wire_bytes),
                num(c.goodput.0, unit),
                format!("{:.1}", c.goodput.to_bits().mbit()),
            ]);
        }
        writeln!(
            out,
            "Ethernet goodput ceilings at MTU {}, {u} = {}, Mbit/s = 10^6 bit/s:",
            a.mtu,
            unit_definition(unit)
        )?;
        out.push_str(&t.render());
        writeln!(
            out,
            "wire B: preamble+SFD 8, MAC header 14, FCS 4, inter-frame gap 12 per frame (IEEE 802.3); \
             IPv4 20, IPv6 40, TCP 20 (+12 timestamps), UDP 8."
        )?;
        if a.udp {
            match a.len {
                Some(len) => writeln!(out, "UDP datagrams of {len} B payload (--len).")?,
                None => writeln!(
                    out,
                    "UDP datagrams fill the MTU {}: payload = MTU - IP header - 8 B UDP header \
                     (--len sets another size).",
                    a.mtu
                )?,
            }
        }
        Ok(out)
    }
}

impl MmcCeilings {
    pub fn text(&self, unit: RateUnit) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        let u = unit.label();
        let mut t = Rows::new(
            vec![
                s("mode"),
                s("clock MHz"),
                s("bus bits"),
                s("edges"),
                format!("bus {u}"),
                format!("blocks {u}"),
            ],
            1,
        );
        for c in &self.modes {
            t.row(vec![
                s(c.mode.label()),
                format!("{}", c.clock_mhz),
                s(c.bus_width),
                s(if c.ddr { "2 (DDR)" } else { "1 (SDR)" }),
                num(c.bus_bps, unit),
                num(c.block_bps, unit),
            ]);
        }
        writeln!(
            out,
            "eMMC and SD bus ceilings, {u} = {}:",
            unit_definition(unit)
        )?;
        out.push_str(&t.render());
        writeln!(
            out,
            "blocks: 512 B blocks less start bit, CRC16 and end bit per data line; card access \
             time and write busy not counted."
        )?;
        Ok(out)
    }
}

/// What the described endpoint reserves at each speed, with its derivation.
fn endpoint_text(
    out: &mut String,
    e: &EndpointCeilings,
    unit: RateUnit,
) -> Result<(), std::fmt::Error> {
    let ep = &e.endpoint;
    let w = (u16::from(ep.additional_transactions) << 11) | ep.max_packet;
    writeln!(out)?;
    write!(
        out,
        "This {} endpoint (wMaxPacketSize 0x{w:04x}, bInterval {}",
        ep.transfer.label(),
        ep.interval
    )?;
    if let Some(c) = ep.ss_companion {
        write!(out, ", bMaxBurst {}", c.max_burst)?;
        if ep.transfer == usb::TransferType::Isochronous {
            write!(out, ", Mult {}", c.mult())?;
        }
        if c.bytes_per_interval > 0 {
            write!(out, ", wBytesPerInterval {}", c.bytes_per_interval)?;
        }
    }
    if let Some(b) = ep.ssp_bytes_per_interval {
        write!(out, ", dwBytesPerInterval {b}")?;
    }
    writeln!(out, ") reserves, {}:", unit.label())?;
    for at in &e.speeds {
        match &at.reserved {
            Some(r) => {
                write!(
                    out,
                    "  {}: {} ({})",
                    at.speed.label(),
                    num(r.bytes_per_second, unit),
                    r.basis
                )?;
                if let Some(o) = &r.out_of_spec {
                    write!(out, "; out of spec: {o}")?;
                }
                writeln!(out)?;
            }
            None => writeln!(out, "  {}: -", at.speed.label())?,
        }
    }
    Ok(())
}
