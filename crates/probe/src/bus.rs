//! Per-bus parsers of sysfs and debugfs names and attributes other than USB's ([`crate::usb`])
//! and PCI's ([`crate::pci`]): libata ports and their `sata_spd`, SCSI hosts, MMC hosts, cards
//! and debugfs `ios`, virtio devices. Pure functions of text; the walk ([`crate::walk`])
//! calls them.

pub(crate) fn ata_port(name: &str) -> bool {
    name.strip_prefix("ata")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

pub(crate) fn scsi_host(name: &str) -> bool {
    name.strip_prefix("host")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

pub(crate) fn is_virtio(name: &str) -> bool {
    name.strip_prefix("virtio")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `mmc0` directly inside an `mmc_host` directory.
pub(crate) fn is_mmc_host(name: &str, path: &std::path::Path) -> bool {
    name.strip_prefix("mmc")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && path.parent().and_then(|p| p.file_name()) == Some("mmc_host".as_ref())
}

/// `mmc0:0001`: host 0, card address (RCA) 0001.
pub(crate) fn is_mmc_card(name: &str) -> bool {
    name.strip_prefix("mmc")
        .and_then(|n| n.split_once(':'))
        .is_some_and(|(h, rca)| {
            !h.is_empty()
                && h.bytes().all(|b| b.is_ascii_digit())
                && rca.len() == 4
                && rca.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// `sata_spd` ("1.5 Gbps", "3.0 Gbps", "6.0 Gbps"; "<unknown>" when the link is down) in
/// Mb/s of line rate.
pub fn parse_sata_spd(s: &str) -> Option<f64> {
    let gbps: f64 = s.trim().strip_suffix("Gbps")?.trim().parse().ok()?;
    Some(gbps * 1000.0)
}

/// The fields of debugfs `mmcN/ios` that set the bus rate (drivers/mmc/core/debugfs.c,
/// `mmc_ios_show`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MmcIos {
    pub clock_hz: Option<u64>,
    pub actual_clock_hz: Option<u64>,
    pub bus_width_bits: Option<u32>,
    /// The name in parentheses of `timing spec`, e.g. "mmc HS200".
    pub timing: Option<String>,
}

impl MmcIos {
    /// Whether the timing transfers on both clock edges (DDR50, DDR52, HS400).
    pub fn double_data_rate(&self) -> bool {
        self.timing
            .as_deref()
            .is_some_and(|t| t.contains("DDR") || t.contains("HS400"))
    }

    /// Bus rate in Mb/s: clock x data lines x (2 for DDR). The actual clock is preferred
    /// over the requested one when the kernel shows both.
    pub fn rate_mbps(&self) -> Option<f64> {
        let clock = self.actual_clock_hz.filter(|c| *c > 0).or(self.clock_hz)?;
        let width = self.bus_width_bits?;
        let edges = if self.double_data_rate() { 2.0 } else { 1.0 };
        Some(clock as f64 * f64::from(width) * edges / 1e6)
    }
}

/// Parse debugfs `ios`: lines `clock:\t\t200000000 Hz`, `bus width:\t3 (8 bits)`,
/// `timing spec:\t9 (mmc HS200)`.
pub fn parse_mmc_ios(text: &str) -> MmcIos {
    let mut ios = MmcIos::default();
    let paren = |v: &str| {
        v.split_once('(')
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(inner, _)| inner.trim().to_string())
    };
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let hz = || value.strip_suffix("Hz").and_then(|v| v.trim().parse().ok());
        match key.trim() {
            "clock" => ios.clock_hz = hz(),
            "actual clock" => ios.actual_clock_hz = hz(),
            "bus width" => {
                ios.bus_width_bits = paren(value)
                    .and_then(|p| p.strip_suffix("bits").map(|b| b.trim().to_string()))
                    .and_then(|b| b.parse().ok());
            }
            "timing spec" => ios.timing = paren(value),
            _ => {}
        }
    }
    ios
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    #[test]
    fn sata_speeds() {
        assert_eq!(parse_sata_spd("6.0 Gbps\n"), Some(6000.0));
        assert_eq!(parse_sata_spd("1.5 Gbps"), Some(1500.0));
        assert_eq!(parse_sata_spd("<unknown>"), None);
    }

    #[test]
    fn mmc_ios_hs200_and_hs400() {
        // Layout of mmc_ios_show() output (kernel 6.x) for an eMMC in HS200.
        let hs200 = "clock:\t\t200000000 Hz\nactual clock:\t200000000 Hz\nvdd:\t\t21 (3.3 ~ 3.4 V)\n\
                     bus mode:\t2 (push-pull)\nchip select:\t0 (don't care)\npower mode:\t2 (on)\n\
                     bus width:\t3 (8 bits)\ntiming spec:\t9 (mmc HS200)\nsignal voltage:\t1 (1.80 V)\n\
                     driver type:\t0 (driver type B)\n";
        let ios = parse_mmc_ios(hs200);
        assert_eq!(ios.timing.as_deref(), Some("mmc HS200"));
        assert_eq!(ios.bus_width_bits, Some(8));
        assert_eq!(ios.rate_mbps(), Some(1600.0));
        let hs400 = hs200.replace("9 (mmc HS200)", "10 (mmc HS400)");
        assert_eq!(parse_mmc_ios(&hs400).rate_mbps(), Some(3200.0));
        // Kernels before 4.x named HS200/HS400 "mmc high-speed SDR200" / "mmc high-speed HS400".
        let old = hs200.replace("9 (mmc HS200)", "10 (mmc high-speed HS400)");
        assert_eq!(parse_mmc_ios(&old).rate_mbps(), Some(3200.0));
        let sd = "clock:\t\t50000000 Hz\nbus width:\t2 (4 bits)\ntiming spec:\t2 (sd high-speed)\n";
        assert_eq!(parse_mmc_ios(sd).rate_mbps(), Some(200.0));
    }

    #[test]
    fn names() {
        assert!(ata_port("ata1"));
        assert!(!ata_port("ata_port"));
        assert!(scsi_host("host7"));
        assert!(!scsi_host("scsi_host"));
        assert!(is_mmc_card("mmc0:0001"));
        assert!(!is_mmc_card("mmc0"));
        assert!(is_mmc_host(
            "mmc0",
            Path::new("/sys/devices/x/mmc_host/mmc0")
        ));
        assert!(is_virtio("virtio1"));
    }
}
