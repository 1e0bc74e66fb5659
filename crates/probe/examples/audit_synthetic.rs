//! Benchmark (not a test): audit a synthetic sysfs tree of about 2,000 PCI functions and
//! print the time. Run: `cargo run --release -p headroom-probe --example audit_synthetic`.
//!
//! The tree: root ports, each with a switch (upstream port, 8 downstream ports) and a
//! 3-function Gen4 x4 device under each downstream port; full 4 KiB config space everywhere.

use model::inventory::pci::address::PciAddress;
use model::root::SysRoot;
use model::{LinkState, PcieGen, PortType};
use std::time::Instant;
use testsupport::synth::{write_tree, SynthExpress, SynthFunction};

fn express(port_type: PortType, gen: PcieGen, width: u8) -> SynthExpress {
    let link = LinkState::new(gen, width);
    SynthExpress {
        mps_supported: 512,
        ..SynthExpress::new(port_type, link, link)
    }
}

fn func(class: u32, buses: Option<(u8, u8, u8)>, e: SynthExpress) -> SynthFunction {
    SynthFunction {
        vendor_id: 0x8086,
        device_id: 0x1234,
        class,
        buses,
        express: Some(e),
        aer_status: None,
    }
}

fn main() -> std::io::Result<()> {
    let target = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000usize);
    let dir = tempfile::tempdir()?;
    let mut fns = Vec::new();
    let mut rp_index = 0u32;
    while fns.len() < target {
        // 20 root ports per domain keeps bus numbers below 256 (10 buses each).
        let domain = rp_index / 20;
        let slot = (rp_index % 20) as u8;
        let first_bus = 1 + slot * 10;
        let rp = PciAddress {
            domain,
            bus: 0,
            device: slot,
            function: 0,
        };
        fns.push((
            rp,
            None,
            func(
                0x060400,
                Some((0, first_bus, first_bus + 9)),
                express(PortType::RootPort, PcieGen::Gen4, 16),
            ),
        ));
        let usp = PciAddress {
            domain,
            bus: first_bus,
            device: 0,
            function: 0,
        };
        fns.push((
            usp,
            Some(rp),
            func(
                0x060400,
                Some((first_bus, first_bus + 1, first_bus + 9)),
                express(PortType::UpstreamPort, PcieGen::Gen4, 16),
            ),
        ));
        for d in 0..8u8 {
            let dsp = PciAddress {
                domain,
                bus: first_bus + 1,
                device: d,
                function: 0,
            };
            let ep_bus = first_bus + 2 + d;
            fns.push((
                dsp,
                Some(usp),
                func(
                    0x060400,
                    Some((first_bus + 1, ep_bus, ep_bus)),
                    express(PortType::DownstreamPort, PcieGen::Gen4, 4),
                ),
            ));
            for f in 0..3u8 {
                let ep = PciAddress {
                    domain,
                    bus: ep_bus,
                    device: 0,
                    function: f,
                };
                fns.push((
                    ep,
                    Some(dsp),
                    func(
                        0x010802,
                        None,
                        express(PortType::Endpoint, PcieGen::Gen4, 4),
                    ),
                ));
            }
        }
        rp_index += 1;
    }
    write_tree(dir.path(), &fns)?;
    let root = SysRoot::new(dir.path());
    let mut times = Vec::new();
    let mut audit = probe::pci::audit_sysfs(&root);
    for _ in 0..5 {
        let t = Instant::now();
        audit = probe::pci::audit_sysfs(&root);
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "audited {} functions, {} links: median {:.1} ms, min {:.1} ms (5 runs, warm cache)",
        audit.functions.len(),
        audit.links.len(),
        times[2].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3
    );
    Ok(())
}
