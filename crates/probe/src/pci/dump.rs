//! Reading `lspci -x` / `-xxx` / `-xxxx` text: the hex dump format `lspci -F FILE` reads
//! (pciutils `lib/dump.c`), so a dump from a bug report or another machine can be audited
//! offline.
//!
//! The format: a device line `[DDDD:]BB:DD.F description` (domain of 4 to 6 hex digits,
//! optional), then lines `OFFSET: xx xx ...` of config bytes; an empty line ends the device.
//! Every other line is ignored, so the decoded text of `lspci -vvvxxx` may stay in between.
//! Bytes a dump does not give read as 0xff, as in lspci.

use super::regs::{PCI_CFG_SPACE_EXP_SIZE, PCI_CFG_SPACE_SIZE, PCI_STD_HEADER_SIZEOF};
use model::inventory::pci::address::PciAddress;
use std::collections::BTreeMap;
use std::fmt;

/// One function found in a dump.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DumpedFunction {
    pub address: PciAddress,
    /// The text after the address on the device line (lspci's name of the device).
    pub description: String,
    /// Config bytes from offset 0 up to the highest byte the dump gives (64, 256 or 4096
    /// for an intact `-x`, `-xxx`, `-xxxx` dump).
    pub config: Vec<u8>,
}

/// A line the parser could not use, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DumpWarning {
    /// 1-based line number in the dump.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for DumpWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Everything read from one dump.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct LspciDump {
    pub functions: Vec<DumpedFunction>,
    pub warnings: Vec<DumpWarning>,
    /// Lines that looked like lspci device lines (valid or not), whether or not bytes
    /// followed.
    pub device_lines: usize,
}

/// Why a text holds nothing to audit (lspci -F fails on such a file too).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DumpError {
    #[error(
        "no lspci device line in it (`BB:DD.F description` followed by `00: xx xx ...` \
         lines): it is not an lspci hex dump; capture one with `sudo lspci -xxx > FILE`"
    )]
    NoDeviceLine,
    #[error(
        "{device_lines} device {} but no config bytes under {}: it is not an lspci hex dump \
         (`lspci -v` text has no bytes); capture one with `sudo lspci -xxx > FILE`",
        if *device_lines == 1 { "line" } else { "lines" },
        if *device_lines == 1 { "it" } else { "any of them" }
    )]
    NoConfigBytes { device_lines: usize },
}

impl LspciDump {
    /// The dump, or why it holds nothing to audit.
    pub fn nonempty(self) -> Result<LspciDump, DumpError> {
        match (self.device_lines, self.functions.len()) {
            (0, _) => Err(DumpError::NoDeviceLine),
            (n, 0) => Err(DumpError::NoConfigBytes { device_lines: n }),
            _ => Ok(self),
        }
    }
}

/// The config-space lengths lspci prints: `-x` 64 bytes, `-xxx` 256, `-xxxx` 4096
/// (pciutils lspci.c `show_hex_dump`).
const LSPCI_DUMP_LENGTHS: [usize; 3] = [
    PCI_STD_HEADER_SIZEOF,
    PCI_CFG_SPACE_SIZE,
    PCI_CFG_SPACE_EXP_SIZE,
];

/// A function being filled.
struct Pending {
    address: PciAddress,
    description: String,
    line: usize,
    /// The last line that gave bytes.
    last_data_line: usize,
    bytes: Vec<u8>,
    given: Vec<bool>,
}

/// Parses dump text. Never fails: unusable lines become warnings and the rest is kept.
pub fn parse_lspci_dump(text: &str) -> LspciDump {
    let mut out = LspciDump::default();
    let mut current: Option<Pending> = None;
    let mut first_seen: BTreeMap<PciAddress, usize> = BTreeMap::new();

    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.is_empty() {
            finish(current.take(), &mut out);
            continue;
        }
        if let Some(device) = device_line(line) {
            finish(current.take(), &mut out);
            out.device_lines += 1;
            match device {
                Ok((address, description)) => {
                    if let Some(first) = first_seen.get(&address) {
                        out.warnings.push(DumpWarning {
                            line: number,
                            message: format!(
                                "{address} appears again (first at line {first}); both copies \
                                 are kept"
                            ),
                        });
                    } else {
                        first_seen.insert(address, number);
                    }
                    current = Some(Pending {
                        address,
                        description: description.trim().to_string(),
                        line: number,
                        last_data_line: number,
                        bytes: Vec::new(),
                        given: Vec::new(),
                    });
                }
                Err(message) => out.warnings.push(DumpWarning {
                    line: number,
                    message,
                }),
            }
            continue;
        }
        let Some((offset, rest)) = data_line(line) else {
            continue; // lspci's decoded text, or anything else: not ours to judge.
        };
        let Some(pending) = current.as_mut() else {
            out.warnings.push(DumpWarning {
                line: number,
                message: "config bytes with no device line before them (since the last \
                          empty line); ignored"
                    .into(),
            });
            continue;
        };
        pending.last_data_line = number;
        if let Err(message) = store_bytes(pending, offset, rest) {
            out.warnings.push(DumpWarning {
                line: number,
                message,
            });
        }
    }
    finish(current, &mut out);
    out
}

/// Closes a function: keeps it if it had bytes, and says which bytes were missing.
fn finish(pending: Option<Pending>, out: &mut LspciDump) {
    let Some(p) = pending else { return };
    if p.bytes.is_empty() {
        out.warnings.push(DumpWarning {
            line: p.line,
            message: format!(
                "{} has no config bytes (no `00: ...` lines before the next device or empty \
                 line); it was skipped (capture with `lspci -xxx`)",
                p.address
            ),
        });
        return;
    }
    let gaps = gaps(&p.given);
    if !gaps.is_empty() {
        let shown: Vec<String> = gaps
            .iter()
            .take(3)
            .map(|(a, b)| format!("{a:#x}-{b:#x}"))
            .collect();
        let more = if gaps.len() > 3 {
            format!(" and {} more ranges", gaps.len() - 3)
        } else {
            String::new()
        };
        out.warnings.push(DumpWarning {
            line: p.line,
            message: format!(
                "{}: bytes {}{more} are missing from the dump and read as 0xff",
                p.address,
                shown.join(", ")
            ),
        });
    }
    // A dump cut short (a file truncated in transfer, a paste that lost its end) ends a
    // device's bytes at a length lspci never prints.
    if !LSPCI_DUMP_LENGTHS.contains(&p.bytes.len()) {
        let next = LSPCI_DUMP_LENGTHS
            .into_iter()
            .find(|&l| l > p.bytes.len())
            .unwrap_or(PCI_CFG_SPACE_EXP_SIZE);
        out.warnings.push(DumpWarning {
            line: p.last_data_line,
            message: format!(
                "the bytes of {} (device line {}) stop at offset {:#x}, short of the {next} \
                 that lspci prints: the dump looks truncated here; the missing bytes read as \
                 0xff",
                p.address,
                p.line,
                p.bytes.len()
            ),
        });
    }
    out.functions.push(DumpedFunction {
        address: p.address,
        description: p.description,
        config: p.bytes,
    });
}

/// Inclusive ranges of bytes not given.
fn gaps(given: &[bool]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, &g) in given.iter().enumerate() {
        match (g, start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, i - 1));
                start = None;
            }
            _ => {}
        }
    }
    // `given` ends with a given byte (it grows only when a byte is stored).
    out
}

fn store_bytes(p: &mut Pending, offset: usize, rest: &str) -> Result<(), String> {
    let mut at = offset;
    let mut s = rest;
    // Two hex digits, then a space or the end (lib/dump.c accepts exactly this).
    loop {
        let b = s.as_bytes();
        if b.len() < 2 || !b[0].is_ascii_hexdigit() || !b[1].is_ascii_hexdigit() {
            break;
        }
        if b.len() > 2 && b[2] != b' ' {
            break;
        }
        if at >= PCI_CFG_SPACE_EXP_SIZE {
            return Err(format!(
                "offset {at:#x} is past the {PCI_CFG_SPACE_EXP_SIZE} bytes of configuration space; \
                 the rest of the line was ignored"
            ));
        }
        let value = u8::from_str_radix(&s[..2], 16).map_err(|e| e.to_string())?;
        if p.bytes.len() <= at {
            p.bytes.resize(at + 1, 0xff);
            p.given.resize(at + 1, false);
        }
        p.bytes[at] = value;
        p.given[at] = true;
        at += 1;
        s = s.get(3..).unwrap_or("");
    }
    let junk = s.trim_end();
    if junk.is_empty() {
        Ok(())
    } else {
        let shown: String = junk.chars().take(20).collect();
        Err(format!(
            "`{shown}` at byte {at:#x} of {} is not a two-digit hex byte; the rest of the line \
             was ignored",
            p.address
        ))
    }
}

/// `Some` when `line` starts like an lspci device line (`BB:DD.F ` with an optional 4-6
/// digit domain): the address and the text after it, or why the address is invalid.
fn device_line(line: &str) -> Option<Result<(PciAddress, &str), String>> {
    let b = line.as_bytes();
    let hex = |i: usize| b.get(i).is_some_and(u8::is_ascii_hexdigit);
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    // `##:##.#` followed by a space or the end, starting at `s`.
    let bdf_at = |s: usize| {
        hex(s)
            && hex(s + 1)
            && at(s + 2, b':')
            && hex(s + 3)
            && hex(s + 4)
            && at(s + 5, b'.')
            && hex(s + 6)
            && (b.len() == s + 7 || at(s + 7, b' '))
    };
    let start = if bdf_at(0) {
        0
    } else {
        [4, 5, 6]
            .into_iter()
            .find(|&d| (0..d).all(hex) && at(d, b':') && bdf_at(d + 1))?
            + 1
    };
    let addr_text = &line[..start + 7];
    let rest = &line[start + 7..];
    Some(
        addr_text
            .parse::<PciAddress>()
            .map(|a| (a, rest))
            .map_err(|e| format!("{e}; this device and its bytes were skipped")),
    )
}

/// `Some((offset, rest))` when `line` is `OFFSET: ...` with 2 to 8 hex digits of offset.
fn data_line(line: &str) -> Option<(usize, &str)> {
    let digits = line.bytes().take_while(u8::is_ascii_hexdigit).count();
    if !(2..=8).contains(&digits) || !line[digits..].starts_with(": ") {
        return None;
    }
    let offset = usize::from_str_radix(&line[..digits], 16).ok()?;
    Some((offset, &line[digits + 2..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dump without the warnings of a short (truncated-looking) device block: the tests
    /// below give few bytes on purpose; `a_dump_cut_short_is_named_at_its_line` checks those.
    fn parse_short(text: &str) -> LspciDump {
        let mut d = parse_lspci_dump(text);
        d.warnings
            .retain(|w| !w.message.contains("looks truncated"));
        d
    }

    fn rows(start: usize, n: usize, byte: &str) -> String {
        (0..n)
            .map(|i| format!("{:02x}: {}\n", start + i * 16, vec![byte; 16].join(" ")))
            .collect()
    }

    #[test]
    fn reads_xxx_with_and_without_domain() {
        let text = format!(
            "00:1c.0 PCI bridge: Intel Corporation Device 9d10 (rev f1)\n{}\n\
             0001:02:00.1 Audio device: Foo\n{}",
            rows(0, 16, "aa"),
            rows(0, 4, "01")
        );
        let d = parse_short(&text);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        assert_eq!(d.functions.len(), 2);
        assert_eq!(d.functions[0].address.to_string(), "0000:00:1c.0");
        assert_eq!(
            d.functions[0].description,
            "PCI bridge: Intel Corporation Device 9d10 (rev f1)"
        );
        assert_eq!(d.functions[0].config, vec![0xaa; 256]);
        assert_eq!(d.functions[1].address.to_string(), "0001:02:00.1");
        assert_eq!(d.functions[1].config.len(), 64);
    }

    #[test]
    fn decoded_text_between_is_ignored_and_crlf_accepted() {
        let text = "03:00.0 Ethernet controller: X\r\n\tSubsystem: Y\r\n\
                    \tCapabilities: [40] Power Management version 3\r\n\
                    00: 86 80 c9 10 06 04 10 00 01 00 00 02 10 00 80 00\r\n\r\n";
        let d = parse_short(text);
        assert!(d.warnings.is_empty(), "{:?}", d.warnings);
        assert_eq!(d.functions[0].config[..4], [0x86, 0x80, 0xc9, 0x10]);
        assert_eq!(d.functions[0].config.len(), 16);
    }

    #[test]
    fn malformed_bytes_are_named_with_line_and_rest_kept() {
        let text = "00:00.0 Host bridge: X\n00: 86 80 zz 10\n10: 01 02\n";
        let d = parse_short(text);
        assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
        assert_eq!(
            d.warnings[1].to_string(),
            "line 1: 0000:00:00.0: bytes 0x2-0xf are missing from the dump and read as 0xff"
        );
        assert_eq!(
            d.warnings[0].to_string(),
            "line 2: `zz 10` at byte 0x2 of 0000:00:00.0 is not a two-digit hex byte; the \
             rest of the line was ignored"
        );
        let f = &d.functions[0];
        assert_eq!(f.config.len(), 0x12);
        assert_eq!(f.config[..3], [0x86, 0x80, 0xff]);
    }

    #[test]
    fn offset_past_4096_is_refused() {
        let text = "00:00.0 X\n00: 01\n1000: 02 03\n";
        let d = parse_short(text);
        assert_eq!(d.functions[0].config, vec![1]);
        assert_eq!(d.warnings.len(), 1);
        assert!(d.warnings[0]
            .to_string()
            .starts_with("line 3: offset 0x1000 is past the 4096 bytes"));
    }

    #[test]
    fn bytes_without_a_device_and_devices_without_bytes() {
        let text = "00: 01 02\n\n00:02.0 VGA: X\n\n00:03.0 Y\n00: 11\n";
        let d = parse_short(text);
        let w: Vec<String> = d.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            w,
            [
                "line 1: config bytes with no device line before them (since the last empty \
                 line); ignored",
                "line 3: 0000:00:02.0 has no config bytes (no `00: ...` lines before the next \
                 device or empty line); it was skipped (capture with `lspci -xxx`)",
            ]
        );
        assert_eq!(d.functions.len(), 1);
        assert_eq!(d.functions[0].address.to_string(), "0000:00:03.0");
    }

    #[test]
    fn invalid_address_and_gaps_and_duplicates() {
        let text = "00:3f.0 X\n00: 01\n\n00:01.0 Y\n00: 01\n40: 02\n\n00:01.0 Z\n00: 03\n";
        let d = parse_short(text);
        let w: Vec<String> = d.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w[0].starts_with("line 1: `00:3f.0` is not a PCI address: the device number"));
        assert!(w[0].ends_with("this device and its bytes were skipped"));
        assert_eq!(
            w[1],
            "line 2: config bytes with no device line before them (since the last empty \
             line); ignored"
        );
        assert_eq!(
            w[2],
            "line 4: 0000:00:01.0: bytes 0x1-0x3f are missing from the dump and read as 0xff"
        );
        assert_eq!(
            w[3],
            "line 8: 0000:00:01.0 appears again (first at line 4); both copies are kept"
        );
        assert_eq!(d.functions.len(), 2);
        assert_eq!(d.functions[0].config.len(), 0x41);
    }

    #[test]
    fn lines_that_only_look_alike_are_ignored() {
        let text = "00:00.0 X\n00: 01\n0: 02\n000000000: 03\n00:00 04\nab:cd.e\n";
        let d = parse_short(text);
        // `ab:cd.e` is a device line with no text; device 0xcd is out of range.
        assert_eq!(d.functions.len(), 1);
        assert_eq!(d.functions[0].config, vec![1]);
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
        assert_eq!(d.warnings[0].line, 6);
    }

    #[test]
    fn a_dump_cut_short_is_named_at_its_line() {
        // `lspci -xxx` output cut in the middle of its fifth line.
        let text = format!("00:1f.3 Audio device: X\n{}40: 01 02 0", rows(0, 4, "aa"));
        let d = parse_lspci_dump(&text);
        let w: Vec<String> = d.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            w,
            [
                "line 6: `0` at byte 0x42 of 0000:00:1f.3 is not a two-digit hex byte; the \
                 rest of the line was ignored",
                "line 6: the bytes of 0000:00:1f.3 (device line 1) stop at offset 0x42, short \
                 of the 256 that lspci prints: the dump looks truncated here; the missing \
                 bytes read as 0xff",
            ]
        );
        assert_eq!(d.functions[0].config.len(), 0x42);
        // Whole `-x`, `-xxx` and `-xxxx` blocks are not truncated.
        for n in [4, 16, 256] {
            let d = parse_lspci_dump(&format!("00:00.0 X\n{}", rows(0, n, "01")));
            assert!(d.warnings.is_empty(), "{n} rows: {:?}", d.warnings);
        }
    }

    #[test]
    fn text_without_a_device_is_not_a_dump() {
        let random: String = (0u32..2000)
            .map(|i| char::from_u32((i.wrapping_mul(2_654_435_761) >> 7) % 0x2ff + 1).unwrap())
            .collect();
        for text in [
            "",
            "{\"schema_version\": 1, \"kind\": \"audit\"}\n",
            random.as_str(),
        ] {
            assert_eq!(
                parse_lspci_dump(text).nonempty().err(),
                Some(DumpError::NoDeviceLine),
                "{text:?}"
            );
        }
        let verbose = "00:02.0 VGA compatible controller: X\n\tSubsystem: Y\n\n\
                       00:03.0 Audio device: Z\n";
        let e = parse_lspci_dump(verbose).nonempty().err().unwrap();
        assert_eq!(e, DumpError::NoConfigBytes { device_lines: 2 });
        assert!(e
            .to_string()
            .starts_with("2 device lines but no config bytes under any"));
        assert!(parse_lspci_dump("00:00.0 X\n00: 01\n").nonempty().is_ok());
    }
}
