//! PCI Express ceilings per link and direction: **raw** (after line coding), **TLP** (after
//! the per-TLP overhead at the link's MPS) and **effective** (also after data-link-layer
//! traffic: Ack and UpdateFC DLLPs, SKP ordered sets).
//!
//! Sources, cited next to each constant:
//! - [spec]: PCI Express Base Specification (rev 3.0 to 6.0; section numbers of rev 5.0 unless
//!   said otherwise).
//! - [seed]: Rockchip Developer Guide "PCIe Performance", section 2 (seeds/000), the 28 B
//!   per-TLP assumption and its tables.
//! - [WP350]: Xilinx WP350 "Understanding Performance of PCI Express Systems" (J. Lawley, 2014).
//! - [pcie-bench]: R. Neugebauer et al., "Understanding PCIe performance for end host
//!   networking", SIGCOMM 2018, and its model (github.com/pcie-bench/pcie-model,
//!   `model/pcie.py`), which transcribes the spec's Ack and UpdateFC tables.
//!
//! ## The two assumption sets
//! - **seed**: the Rockchip guide's 28 B per TLP: header 16 (4DW, 64-bit address) + ECRC 4 +
//!   LCRC 4 + sequence 2 + framing 2. Its TLP rows reproduce the guide's table.
//! - **default** (sharper): ECRC off (Linux enables it only with `pci=ecrc=on`,
//!   Documentation/admin-guide/kernel-parameters.txt), so 24 B per TLP with a 4DW header
//!   (20 B with `header_bytes = 12`, 32-bit addresses).
//!
//! Both sets use the same data-link-layer model for the effective rows (the seed only says,
//! in its section 2.3, that Ack/Nak and flow-control DLLPs and SKP ordered sets lower the
//! rate further, without numbers):
//! - both directions are assumed busy, so each direction also carries the Ack and UpdateFC
//!   DLLPs that acknowledge and credit the opposite direction's TLPs (worst case; a strictly
//!   one-way stream only pays the SKP share);
//! - one Ack DLLP per Ack latency limit and one UpdateFC DLLP per UpdateFC latency limit, the
//!   spec's recommended values ([spec] tables 3-7, 3-8, 3-9 and 2-46..2-48, as transcribed by
//!   [pcie-bench]), 8 B each ([pcie-bench] `Ack_Size`/`FC_Size`: 6 B DLLP + 2 B framing);
//! - the limits are in Symbol Times, and an xN link moves N bytes per Symbol Time, so the
//!   DLLP share is 8 / (N x limit). ([pcie-bench] divides by the limit alone, which charges a
//!   x8 link eight times the DLLP traffic; we follow the spec's unit.)
//! - SKP ordered sets: see [`skp_share`].
//!
//! ## Flit mode (64 and 128 GT/s)
//! A flit is 256 B: 236 B of TLPs, 6 B of DLP (data-link payload: Acks, flow control,
//! sequence numbers), 8 B CRC and 6 B FEC ([spec] rev 6.0 section 4.2.3.1, "Flit Mode").
//! We count the 242 B of TLP + DLP as **raw** (the analogue of "after line coding": the bytes
//! the link layer gets; [pcie-bench] uses the same 242/256), the 236 B of TLP bytes for the
//! TLP rows, and no separate DLLP traffic (it rides in the DLP bytes of every flit). In flit
//! mode a TLP carries no framing token, sequence number or LCRC (they are per flit), only
//! its header and optional ECRC.

use super::{after_line_coding, packet_efficiency, LineCoding};
use crate::pcie::{LinkState, PcieGen, VALID_WIDTHS};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Max_Payload_Size and Max_Read_Request_Size values ([spec] section 7.5.3.4, Device Control:
/// encodings 000b..101b = 128..4096 bytes).
pub const VALID_MPS: [u16; 6] = [128, 256, 512, 1024, 2048, 4096];
/// Read Completion Boundary values ([spec] section 7.5.3.7, Link Control bit 3: 64 or 128 B).
pub const VALID_RCB: [u16; 2] = [64, 128];
/// TLP header sizes: 3DW (32-bit address) or 4DW (64-bit address) ([spec] section 2.2.1).
pub const VALID_HEADER_BYTES: [u8; 2] = [12, 16];

/// Completion headers are always 3DW: they carry no address ([spec] section 2.2.9).
const COMPLETION_HEADER_BYTES: u8 = 12;
/// ECRC, the optional TLP digest, is one DW ([spec] section 2.7).
const ECRC_BYTES: u8 = 4;
/// LCRC, one DW ([spec] section 3.6.2.1).
const LCRC_BYTES: u8 = 4;
/// Sequence number field, 2 B (12-bit number) ([spec] section 3.6.2.1). At 8 GT/s and above
/// the number travels inside the 4-byte STP framing token ([spec] section 4.2.2.3.1), so the
/// token's other 2 B count as framing.
const SEQUENCE_BYTES: u8 = 2;
/// Framing per TLP: STP + END symbols at 2.5/5 GT/s ([spec] section 4.2.1.2); the 4-byte STP
/// token less its 2 sequence-number bytes at 8-32 GT/s ([spec] section 4.2.2.3.1); the seed
/// counts the same 2 B ("framing Symbols STP and END (2 bytes)").
const FRAMING_BYTES: u8 = 2;

/// Flit layout, [spec] rev 6.0 section 4.2.3.1.
const FLIT_BYTES: f64 = 256.0;
const FLIT_TLP_BYTES: f64 = 236.0;
const FLIT_DLP_BYTES: f64 = 6.0;

/// Size of an Ack or UpdateFC DLLP on the wire ([pcie-bench] `Ack_Size`, `FC_Size`: 4 B DLLP
/// + 2 B DLLP CRC + 2 B framing; [spec] section 3.5.1 and 4.2.1.2 / 4.2.2.3.2).
const DLLP_WIRE_BYTES: f64 = 8.0;

/// Which assumption set a ceiling was computed with (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssumptionSet {
    /// The Rockchip PCIe guide's 28 B per TLP (section 2.2). `rockchip` in JSON.
    #[serde(rename = "rockchip")]
    Seed,
    /// Sharper default: no ECRC, per-parameter header size.
    Default,
}

impl AssumptionSet {
    pub fn label(self) -> &'static str {
        match self {
            AssumptionSet::Seed => "rockchip",
            AssumptionSet::Default => "default",
        }
    }

    /// One sentence saying what the set assumes, for table captions.
    pub fn describe(self) -> &'static str {
        match self {
            AssumptionSet::Seed => {
                "the Rockchip PCIe guide's 28 B assumption set (section 2.2): header 16 + \
                 ECRC 4 + LCRC 4 + sequence 2 + framing 2 per TLP"
            }
            AssumptionSet::Default => {
                "default: no ECRC (Linux default), so header + LCRC 4 + sequence 2 + framing 2 \
                 per TLP (24 B with a 4DW header)"
            }
        }
    }
}

/// How a completer splits a read request into completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionSize {
    /// Completions as large as MPS allows (min(MPS, MRRS)): the upper bound.
    Mps,
    /// Completions split at every Read Completion Boundary ([spec] section 2.3.1.1 allows a
    /// split at each RCB-aligned address; many root complexes return 64 B completions,
    /// [pcie-bench] section 3).
    Rcb,
}

/// The transaction-layer parameters of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlpParams {
    pub set: AssumptionSet,
    /// Max_Payload_Size in bytes.
    pub mps: u16,
    /// Max_Read_Request_Size in bytes.
    pub mrrs: u16,
    /// Read Completion Boundary in bytes.
    pub rcb: u16,
    /// Request TLP header: 12 (3DW, 32-bit address) or 16 (4DW, 64-bit address).
    pub header_bytes: u8,
    /// Whether each TLP carries an ECRC digest.
    pub ecrc: bool,
    /// How read completions are split.
    pub completion_size: CompletionSize,
}

impl TlpParams {
    /// The seed's assumption set at MPS 256 (its first table), MRRS 512 and RCB 64 (Linux and
    /// [pcie-bench] defaults; the seed gives none). Change `mps` for its 128 B table.
    pub fn seed() -> Self {
        TlpParams {
            set: AssumptionSet::Seed,
            mps: 256,
            mrrs: 512,
            rcb: 64,
            header_bytes: 16,
            ecrc: true,
            completion_size: CompletionSize::Mps,
        }
    }

    /// The sharper default for a link's configured MPS, MRRS and RCB: 4DW headers
    /// (64-bit DMA addresses, [pcie-bench] default `--addr 64`), no ECRC, MPS-sized
    /// completions (the ceiling; see [`CompletionSize::Rcb`] for the split case).
    pub fn default_for(mps: u16, mrrs: u16, rcb: u16) -> Self {
        TlpParams {
            set: AssumptionSet::Default,
            mps,
            mrrs,
            rcb,
            header_bytes: 16,
            ecrc: false,
            completion_size: CompletionSize::Mps,
        }
    }

    /// The same parameters with another MPS.
    pub fn with_mps(self, mps: u16) -> Self {
        TlpParams { mps, ..self }
    }

    /// Checks every field against the values the spec allows.
    pub fn check(&self) -> Result<(), ParamError> {
        check_mps(self.mps)?;
        check_mrrs(self.mrrs)?;
        check_rcb(self.rcb)?;
        if !VALID_HEADER_BYTES.contains(&self.header_bytes) {
            return Err(ParamError::HeaderBytes(self.header_bytes));
        }
        Ok(())
    }
}

/// A PCIe parameter outside the values the spec defines. The message names the allowed values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    Generation(u32),
    Width(u32),
    Mps(u32),
    Mrrs(u32),
    Rcb(u32),
    HeaderBytes(u8),
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::Generation(g) => write!(
                f,
                "PCIe generation {g} does not exist; use 1, 2, 3, 4, 5, 6 or 7 \
                 (2.5, 5, 8, 16, 32, 64 or 128 GT/s)"
            ),
            ParamError::Width(w) => write!(
                f,
                "x{w} is not a PCIe link width; use {}",
                list(VALID_WIDTHS.iter().map(|w| format!("x{w}")))
            ),
            ParamError::Mps(v) => write!(
                f,
                "MPS {v} is not a Max_Payload_Size; use {} (bytes)",
                list(VALID_MPS.iter().map(u16::to_string))
            ),
            ParamError::Mrrs(v) => write!(
                f,
                "MRRS {v} is not a Max_Read_Request_Size; use {} (bytes)",
                list(VALID_MPS.iter().map(u16::to_string))
            ),
            ParamError::Rcb(v) => write!(
                f,
                "RCB {v} is not a Read Completion Boundary; use 64 or 128 (bytes)"
            ),
            ParamError::HeaderBytes(v) => write!(
                f,
                "a TLP header of {v} bytes does not exist; use 12 (32-bit addresses) or 16 \
                 (64-bit addresses)"
            ),
        }
    }
}

impl std::error::Error for ParamError {}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// The generation numbered `n` (1..=7).
pub fn check_generation(n: u32) -> Result<PcieGen, ParamError> {
    u8::try_from(n)
        .ok()
        .and_then(PcieGen::from_number)
        .ok_or(ParamError::Generation(n))
}

/// A width the spec defines (x1, x2, x4, x8, x12, x16, x32).
pub fn check_width(w: u32) -> Result<u8, ParamError> {
    u8::try_from(w)
        .ok()
        .filter(|w| VALID_WIDTHS.contains(w))
        .ok_or(ParamError::Width(w))
}

pub fn check_mps(v: u16) -> Result<u16, ParamError> {
    VALID_MPS
        .contains(&v)
        .then_some(v)
        .ok_or(ParamError::Mps(v.into()))
}

pub fn check_mrrs(v: u16) -> Result<u16, ParamError> {
    VALID_MPS
        .contains(&v)
        .then_some(v)
        .ok_or(ParamError::Mrrs(v.into()))
}

pub fn check_rcb(v: u16) -> Result<u16, ParamError> {
    VALID_RCB
        .contains(&v)
        .then_some(v)
        .ok_or(ParamError::Rcb(v.into()))
}

/// Whether a generation runs in Flit mode. Flit mode is mandatory at 64 GT/s and above
/// ([spec] rev 6.0 section 4.2.3; it can also be negotiated at lower rates between two
/// rev 6.0 ports, which a LinkState does not tell, so we tie it to the rate).
pub fn is_flit_mode(gen: PcieGen) -> bool {
    gen >= PcieGen::Gen6
}

/// The line code of a generation ([spec] sections 4.2.1, 4.2.2; rev 6.0 section 4.2.3: PAM4
/// with no line code in Flit mode).
pub fn line_coding(gen: PcieGen) -> LineCoding {
    match gen {
        PcieGen::Gen1 | PcieGen::Gen2 => LineCoding::B8b10b,
        PcieGen::Gen3 | PcieGen::Gen4 | PcieGen::Gen5 => LineCoding::B128b130b,
        PcieGen::Gen6 | PcieGen::Gen7 => LineCoding::None,
    }
}

/// How the raw rate of a generation is derived: its line code, or in Flit mode the share of
/// each 256-byte flit left after its CRC and FEC bytes ([spec] rev 6.0 section 4.2.3.1).
/// A closed set: the document spells each as its caption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PcieCoding {
    /// 2.5 and 5.0 GT/s.
    #[serde(rename = "8b/10b")]
    B8b10b,
    /// 8.0 to 32.0 GT/s.
    #[serde(rename = "128b/130b")]
    B128b130b,
    /// 64.0 GT/s and above (Flit mode, no line code).
    #[serde(rename = "flit 242/256")]
    Flit,
}

impl PcieCoding {
    pub fn of(gen: PcieGen) -> Self {
        if is_flit_mode(gen) {
            return PcieCoding::Flit;
        }
        match line_coding(gen) {
            LineCoding::B8b10b => PcieCoding::B8b10b,
            _ => PcieCoding::B128b130b,
        }
    }

    /// "8b/10b", "128b/130b" or "flit 242/256", as captions and the document spell it.
    pub fn label(self) -> &'static str {
        match self {
            PcieCoding::B8b10b => "8b/10b",
            PcieCoding::B128b130b => "128b/130b",
            PcieCoding::Flit => "flit 242/256",
        }
    }
}

impl fmt::Display for PcieCoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// How the raw rate is derived, for captions: "8b/10b", "128b/130b", "flit 242/256".
pub fn coding_label(gen: PcieGen) -> &'static str {
    PcieCoding::of(gen).label()
}

/// Raw ceiling per direction in bytes/s: the signalling rate after line coding (and, in Flit
/// mode, after the flit's CRC and FEC bytes).
pub fn raw_bps(link: LinkState) -> f64 {
    let after_coding =
        after_line_coding(link.gen.gts(), u32::from(link.width), line_coding(link.gen));
    if is_flit_mode(link.gen) {
        after_coding * (FLIT_TLP_BYTES + FLIT_DLP_BYTES) / FLIT_BYTES
    } else {
        after_coding
    }
}

/// The bytes one TLP costs on the link besides its payload, by part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlpOverhead {
    pub framing: u8,
    pub sequence: u8,
    pub lcrc: u8,
    pub header: u8,
    pub ecrc: u8,
}

impl TlpOverhead {
    /// The overhead of a TLP with this header at this generation.
    pub fn new(gen: PcieGen, header: u8, ecrc: bool) -> Self {
        let flit = is_flit_mode(gen);
        let per_packet = |bytes: u8| if flit { 0 } else { bytes };
        TlpOverhead {
            framing: per_packet(FRAMING_BYTES),
            sequence: per_packet(SEQUENCE_BYTES),
            lcrc: per_packet(LCRC_BYTES),
            header,
            ecrc: if ecrc { ECRC_BYTES } else { 0 },
        }
    }

    pub fn total(&self) -> u32 {
        [
            self.framing,
            self.sequence,
            self.lcrc,
            self.header,
            self.ecrc,
        ]
        .iter()
        .map(|&b| u32::from(b))
        .sum()
    }
}

/// The Ack latency limits in Symbol Times, indexed by MPS 128..4096, for widths x1, x2, x4,
/// x8, x16, x32: [spec] rev 5.0 tables 3-7 (2.5 GT/s), 3-8 (5.0 GT/s) and 3-9 (8.0 GT/s and
/// above), as transcribed in [pcie-bench] `Ack_Limits`. The spec's UpdateFC transmission
/// latency guidelines (tables 2-46..2-48) come from the same formula and carry the same
/// values; [pcie-bench] `FC_Guide` repeats them (with one entry, 2.5 GT/s x32 MPS 2048, as
/// 248 against 148 here).
const ACK_LIMITS_GEN1: [[u16; 6]; 6] = [
    [237, 416, 559, 1071, 2095, 4143],
    [128, 217, 289, 545, 1057, 2081],
    [73, 118, 154, 282, 538, 1050],
    [67, 107, 86, 150, 278, 534],
    [48, 72, 86, 150, 278, 534],
    [33, 45, 52, 84, 148, 276],
];
const ACK_LIMITS_GEN2: [[u16; 6]; 6] = [
    [288, 467, 610, 1122, 2146, 4194],
    [179, 268, 340, 596, 1108, 2132],
    [124, 169, 205, 333, 589, 1101],
    [118, 158, 137, 201, 329, 585],
    [99, 123, 137, 201, 329, 585],
    [84, 96, 103, 135, 199, 237],
];
const ACK_LIMITS_GEN3: [[u16; 6]; 6] = [
    [333, 512, 655, 1167, 2191, 4239],
    [224, 313, 385, 641, 1153, 2177],
    [169, 214, 250, 378, 634, 1146],
    [163, 203, 182, 246, 374, 630],
    [144, 168, 182, 246, 374, 630],
    [129, 141, 148, 180, 244, 372],
];

/// The Ack (and UpdateFC) latency limit in Symbol Times for this link and MPS. x12 is not in
/// [pcie-bench]'s transcription: we use the x8 column. The spec's x12 limit lies between the
/// x8 and x16 ones, so this counts fewer DLLPs and the effective ceiling errs high (an upper
/// bound stays one) by less than 16/12 x (1/48 - 1/67) = 0.8 % at 2.5 GT/s and MPS 128, and
/// 0.11 % at 8 GT/s. 16.0 GT/s and above use the
/// 8.0 GT/s table, as [spec] rev 5.0 table 3-9 covers them. An MPS outside the table uses the
/// largest column not above it.
pub fn ack_limit_symbol_times(link: LinkState, mps: u16) -> u16 {
    let table = match link.gen {
        PcieGen::Gen1 => &ACK_LIMITS_GEN1,
        PcieGen::Gen2 => &ACK_LIMITS_GEN2,
        _ => &ACK_LIMITS_GEN3,
    };
    let row = match link.width {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        _ => 5,
    };
    let col = VALID_MPS.iter().rposition(|&m| m <= mps).unwrap_or(0);
    table[row][col]
}

/// Share of each direction taken by Ack and UpdateFC DLLPs for the opposite direction's
/// traffic (both directions busy), 0 in Flit mode (DLLPs ride in the flit's DLP bytes).
pub fn dllp_share(link: LinkState, mps: u16) -> f64 {
    if is_flit_mode(link.gen) {
        return 0.0;
    }
    let limit_bytes = f64::from(ack_limit_symbol_times(link, mps)) * f64::from(link.width);
    // One Ack and one UpdateFC per limit.
    2.0 * DLLP_WIRE_BYTES / limit_bytes
}

/// SKP ordered-set interval, 2.5/5 GT/s: one SKP OS of 4 Symbols (COM + 3 SKP) on every lane
/// at most every 1538 Symbol Times ([spec] section 4.2.7: "between 1180 and 1538 Symbol
/// Times"; the longest interval gives the ceiling; [pcie-bench] `SKIP_Interval`).
const SKP_8B10B_SYMBOLS: f64 = 4.0;
const SKP_8B10B_INTERVAL: f64 = 1538.0;
/// 8 GT/s and above: one SKP OS block (16 Symbols nominal) at most every 375 blocks ([spec]
/// section 4.2.7.3: "between 370 to 375 blocks"), announced by a 4-Symbol EDS token in the
/// data stream ([spec] section 4.2.2.3.1). This is the common-clock (and SRNS) schedule;
/// SRIS links send SKP about ten times as often, which this model does not know about.
const SKP_128B130B_INTERVAL_BLOCKS: f64 = 375.0;
const BLOCK_SYMBOLS: f64 = 16.0;
const EDS_TOKEN_BYTES: f64 = 4.0;

/// Share of each direction taken by SKP ordered sets (clock compensation). In Flit mode we
/// assume the 128b/130b interval (one 16-Symbol SKP OS per 375 x 16 Symbols per lane) without
/// EDS token; rev 6.0 section 4.2.7 was not checked for the exact Flit-mode schedule.
pub fn skp_share(link: LinkState) -> f64 {
    match line_coding(link.gen) {
        LineCoding::B8b10b => SKP_8B10B_SYMBOLS / SKP_8B10B_INTERVAL,
        _ if is_flit_mode(link.gen) => 1.0 / SKP_128B130B_INTERVAL_BLOCKS,
        _ => {
            let lane_symbols = SKP_128B130B_INTERVAL_BLOCKS * BLOCK_SYMBOLS;
            1.0 / SKP_128B130B_INTERVAL_BLOCKS
                + EDS_TOKEN_BYTES / (f64::from(link.width) * lane_symbols)
        }
    }
}

/// The three ceilings of one link, per direction, in bytes per second.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcieCeiling {
    pub link: LinkState,
    /// Signalling rate per lane, GT/s.
    pub gts: f64,
    pub coding: PcieCoding,
    pub params: TlpParams,
    /// Per-TLP overhead of a memory write (and of a read request: same header).
    pub write_overhead: TlpOverhead,
    /// Per-TLP overhead of a completion with data.
    pub completion_overhead: TlpOverhead,
    /// Payload bytes per completion.
    pub completion_payload: u16,
    /// After line coding.
    #[serde(rename = "raw_bytes_per_sec", alias = "raw_bps")]
    pub raw_bps: f64,
    /// Memory writes of MPS bytes, after per-TLP overhead.
    #[serde(rename = "tlp_write_bytes_per_sec", alias = "tlp_write_bps")]
    pub tlp_write_bps: f64,
    /// Reads: completion data after per-TLP overhead (and bounded by the request rate).
    #[serde(rename = "tlp_read_bytes_per_sec", alias = "tlp_read_bps")]
    pub tlp_read_bps: f64,
    /// Writes after Ack/UpdateFC DLLPs and SKP ordered sets too.
    #[serde(
        rename = "effective_write_bytes_per_sec",
        alias = "effective_write_bps"
    )]
    pub effective_write_bps: f64,
    /// Reads after Ack/UpdateFC DLLPs and SKP ordered sets too.
    #[serde(rename = "effective_read_bytes_per_sec", alias = "effective_read_bps")]
    pub effective_read_bps: f64,
    /// Share of each direction taken by Ack + UpdateFC DLLPs.
    pub dllp_share: f64,
    /// Share of each direction taken by SKP ordered sets.
    pub skp_share: f64,
    /// Share of the *opposite* direction taken by read requests at the read ceiling.
    pub read_request_share: f64,
}

/// The ceilings of `link` under `params`. Parameters are not checked here (see
/// [`TlpParams::check`]); an MPS outside the spec's values still computes.
pub fn link_ceiling(link: LinkState, params: &TlpParams) -> PcieCeiling {
    let raw = raw_bps(link);
    // Bytes of TLPs the link layer carries per raw byte: all of them, except in Flit mode
    // where 6 of each 242 bytes are DLP.
    let tlp_share = if is_flit_mode(link.gen) {
        FLIT_TLP_BYTES / (FLIT_TLP_BYTES + FLIT_DLP_BYTES)
    } else {
        1.0
    };
    let tlp_capacity = raw * tlp_share;

    let write_overhead = TlpOverhead::new(link.gen, params.header_bytes, params.ecrc);
    let completion_overhead = TlpOverhead::new(link.gen, COMPLETION_HEADER_BYTES, params.ecrc);
    let mps = f64::from(params.mps);
    let tlp_write = tlp_capacity * packet_efficiency(mps, f64::from(write_overhead.total()));

    let completion_payload = match params.completion_size {
        CompletionSize::Mps => params.mps.min(params.mrrs),
        CompletionSize::Rcb => params.rcb.min(params.mps),
    };
    let cpl = f64::from(completion_payload);
    let by_completions =
        tlp_capacity * packet_efficiency(cpl, f64::from(completion_overhead.total()));
    // One read request (a header-only TLP) per MRRS bytes travels the other way.
    let request_bytes = f64::from(write_overhead.total());
    let mrrs = f64::from(params.mrrs);
    let by_requests = tlp_capacity * mrrs / request_bytes;
    let tlp_read = by_completions.min(by_requests);
    let read_request_share = (tlp_read / mrrs) * request_bytes / tlp_capacity;

    let dllp = dllp_share(link, params.mps);
    let skp = skp_share(link);
    let link_layer_left = (1.0 - dllp - skp).max(0.0);

    PcieCeiling {
        link,
        gts: link.gen.gts(),
        coding: PcieCoding::of(link.gen),
        params: *params,
        write_overhead,
        completion_overhead,
        completion_payload,
        raw_bps: raw,
        tlp_write_bps: tlp_write,
        tlp_read_bps: tlp_read,
        effective_write_bps: tlp_write * link_layer_left,
        effective_read_bps: tlp_read * link_layer_left,
        dllp_share: dllp,
        skp_share: skp,
        read_request_share,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(gen: u8, width: u8) -> LinkState {
        LinkState::new(PcieGen::from_number(gen).unwrap(), width)
    }

    /// Checks `value` (bytes/s) against a number as the seed prints it ("984.6MB/s",
    /// "15.754GB/s"): within half a unit of the last printed digit.
    fn assert_printed(value: f64, printed: &str) {
        let (number, unit) = if let Some(n) = printed.strip_suffix("GB/s") {
            (n, 1e9)
        } else if let Some(n) = printed.strip_suffix("MB/s") {
            (n, 1e6)
        } else {
            panic!("unit of {printed}")
        };
        let decimals = number.split('.').nth(1).map_or(0, str::len) as i32;
        let half_unit = 0.5 * 10f64.powi(-decimals) * unit;
        let expected: f64 = number.parse::<f64>().unwrap() * unit;
        assert!(
            (value - expected).abs() <= half_unit,
            "{value} B/s does not print as {printed}"
        );
    }

    #[test]
    fn seed_table_2_1_raw_per_generation_and_width() {
        // Rockchip PCIe guide, section 2.1.
        let table = [
            (1, ["250MB/s", "500MB/s", "1GB/s", "2GB/s"]),
            (2, ["500MB/s", "1GB/s", "2GB/s", "4GB/s"]),
            (3, ["984.6MB/s", "1.969GB/s", "3.938GB/s", "7.877GB/s"]),
            (4, ["1.969GB/s", "3.938GB/s", "7.877GB/s", "15.754GB/s"]),
        ];
        for (gen, row) in table {
            for (width, printed) in [1, 2, 4, 8].into_iter().zip(row) {
                assert_printed(raw_bps(link(gen, width)), printed);
            }
        }
    }

    #[test]
    fn seed_tlp_overhead_is_28_bytes() {
        let o = TlpOverhead::new(PcieGen::Gen3, 16, true);
        assert_eq!(
            (o.header, o.ecrc, o.lcrc, o.sequence, o.framing),
            (16, 4, 4, 2, 2)
        );
        assert_eq!(o.total(), 28);
        assert_eq!(TlpOverhead::new(PcieGen::Gen1, 16, true).total(), 28);
        // Default: no ECRC.
        assert_eq!(TlpOverhead::new(PcieGen::Gen3, 16, false).total(), 24);
        assert_eq!(TlpOverhead::new(PcieGen::Gen3, 12, false).total(), 20);
        // Flit mode: header and ECRC only.
        assert_eq!(TlpOverhead::new(PcieGen::Gen6, 16, false).total(), 16);
    }

    fn seed_tlp(width: u8, mps: u16) -> f64 {
        link_ceiling(link(3, width), &TlpParams::seed().with_mps(mps)).tlp_write_bps
    }

    /// A seed figure whose last digit is off: `value` prints as `exact` at the seed's
    /// precision, and the seed's `printed` is within 1.5 units of its last digit (a slip of
    /// the hand computation, not another assumption: no single rounding of the raw rate or
    /// of the payload ratio gives all of the guide's digits at once).
    fn assert_seed_slip(value: f64, printed: &str, exact: &str) {
        assert_printed(value, exact);
        let digits = |s: &str| {
            s.trim_end_matches("GB/s")
                .trim_end_matches("MB/s")
                .to_string()
        };
        let (p, e) = (digits(printed), digits(exact));
        assert_eq!(p.len(), e.len(), "same precision");
        let unit = 10f64.powi(-(p.split('.').nth(1).map_or(0, str::len) as i32));
        let off = (p.parse::<f64>().unwrap() - e.parse::<f64>().unwrap()).abs() / unit;
        assert!(off <= 1.5, "{printed} is {off} units from {exact}");
    }

    #[test]
    fn seed_table_2_2_gen3_tlp_at_mps_256() {
        // Rockchip PCIe guide, section 2.2: 256/284 of the raw rate.
        assert_printed(seed_tlp(1, 256), "887.5MB/s");
        assert_printed(seed_tlp(2, 256), "1.775GB/s");
        assert_printed(seed_tlp(4, 256), "3.550GB/s");
        // The guide prints 7.1002 GB/s; 256/284 x 7.876923 GB/s = 7.100325 GB/s.
        assert_seed_slip(seed_tlp(8, 256), "7.1002GB/s", "7.1003GB/s");
    }

    #[test]
    fn seed_table_2_2_gen3_tlp_at_mps_128() {
        // Rockchip PCIe guide, section 2.2: 128/156 of the raw rate.
        assert_printed(seed_tlp(2, 128), "1.616GB/s");
        assert_printed(seed_tlp(4, 128), "3.232GB/s");
        // The guide prints 807.8 MB/s, the truncation of 807.889 MB/s.
        assert_seed_slip(seed_tlp(1, 128), "807.8MB/s", "807.9MB/s");
        // The guide prints 6.464 GB/s, twice its x4 figure 3.232; 128/156 x 7.876923 = 6.4631.
        assert_seed_slip(seed_tlp(8, 128), "6.464GB/s", "6.463GB/s");
    }

    #[test]
    fn seed_gen2_x1_is_500_mb() {
        // Raspberry Pi 5 article and Rockchip guide: Gen 2 x1 = 500 MB/s.
        assert_eq!(raw_bps(link(2, 1)), 500e6);
    }

    #[test]
    fn flit_mode_raw_and_tlp() {
        // 64 GT/s x1: 8 GB/s on the wire, 242/256 of it raw, 236/242 of that for TLPs.
        let c = link_ceiling(link(6, 1), &TlpParams::default_for(256, 512, 64));
        assert!((c.raw_bps - 7.5625e9).abs() < 1.0);
        let expected = 8e9 * 236.0 / 256.0 * 256.0 / (256.0 + 16.0);
        assert!((c.tlp_write_bps - expected).abs() < 1.0);
        assert_eq!(c.dllp_share, 0.0);
        assert!((raw_bps(link(7, 16)) - 16.0 * 16e9 * 242.0 / 256.0).abs() < 1.0);
    }

    #[test]
    fn ack_table_follows_the_spec_formula() {
        // [spec] rev 5.0 section 3.6.3.1: limit = (MPS + 28) x AckFactor / width + 19 at
        // 2.5 GT/s (AckFactor 1.4 for x1..x4 at MPS 128): the transcription must agree.
        for (width, expected) in [(1u8, 237.0f64), (2, 128.0), (4, 73.0)] {
            let formula = ((128.0 + 28.0) * 1.4 / f64::from(width) + 19.0).floor();
            assert_eq!(formula, expected);
            assert_eq!(
                f64::from(ack_limit_symbol_times(link(1, width), 128)),
                expected
            );
        }
        assert_eq!(ack_limit_symbol_times(link(3, 12), 256), 203);
    }

    #[test]
    fn effective_gen3_x4_default() {
        // Hand computation: raw 3938.46 MB/s; writes 256/(256+24); DLLP 16 B per
        // 4 x 214 bytes; SKP 1/375 + 4/(4 x 6000).
        let c = link_ceiling(link(3, 4), &TlpParams::default_for(256, 512, 64));
        let raw = 8e9 * 128.0 / 130.0 / 8.0 * 4.0;
        let tlp = raw * 256.0 / 280.0;
        let left = 1.0 - 16.0 / (4.0 * 214.0) - (1.0 / 375.0 + 4.0 / 24000.0);
        assert!((c.tlp_write_bps - tlp).abs() < 1.0);
        assert!((c.effective_write_bps - tlp * left).abs() < 1.0);
        // Reads: 256 B completions with a 3DW header: 256/(256+20).
        assert!((c.tlp_read_bps - raw * 256.0 / 276.0).abs() < 1.0);
        // One 24 B request per 512 B read, on the other direction.
        assert!((c.read_request_share - (256.0 / 276.0) * 24.0 / 512.0).abs() < 1e-9);
    }

    #[test]
    fn rcb_split_completions_cost_more() {
        let mut p = TlpParams::default_for(256, 512, 64);
        let whole = link_ceiling(link(3, 1), &p).tlp_read_bps;
        p.completion_size = CompletionSize::Rcb;
        let split = link_ceiling(link(3, 1), &p);
        assert_eq!(split.completion_payload, 64);
        assert!((split.tlp_read_bps - 984_615_384.6 * 64.0 / 84.0).abs() < 1.0);
        assert!(split.tlp_read_bps < whole);
    }

    #[test]
    fn bad_parameters_name_the_allowed_values() {
        assert_eq!(
            check_generation(9).unwrap_err().to_string(),
            "PCIe generation 9 does not exist; use 1, 2, 3, 4, 5, 6 or 7 \
             (2.5, 5, 8, 16, 32, 64 or 128 GT/s)"
        );
        assert_eq!(
            check_width(3).unwrap_err().to_string(),
            "x3 is not a PCIe link width; use x1, x2, x4, x8, x12, x16 or x32"
        );
        assert_eq!(
            check_mps(100).unwrap_err().to_string(),
            "MPS 100 is not a Max_Payload_Size; use 128, 256, 512, 1024, 2048 or 4096 (bytes)"
        );
        assert!(check_rcb(64).is_ok());
        assert!(TlpParams::seed().check().is_ok());
    }

    #[test]
    fn a_ceiling_reads_back_as_written() {
        for (gen, coding) in [(1, "8b/10b"), (3, "128b/130b"), (6, "flit 242/256")] {
            let mut p = TlpParams::seed();
            p.completion_size = CompletionSize::Rcb;
            let c = link_ceiling(link(gen, 4), &p);
            let json = serde_json::to_value(&c).unwrap();
            assert_eq!(json["coding"], coding);
            assert_eq!(json["params"]["set"], "rockchip");
            let back: PcieCeiling = serde_json::from_value(json.clone()).unwrap();
            assert_eq!(back, c);
            assert_eq!(serde_json::to_value(&back).unwrap(), json);
        }
    }

    #[test]
    fn a_ceiling_in_the_old_spelling_reads_the_same() {
        let c = link_ceiling(link(3, 1), &TlpParams::default_for(128, 512, 64));
        let mut old = serde_json::to_value(&c).unwrap();
        let map = old.as_object_mut().unwrap();
        for key in [
            "raw",
            "tlp_write",
            "tlp_read",
            "effective_write",
            "effective_read",
        ] {
            let v = map.remove(&format!("{key}_bytes_per_sec")).unwrap();
            map.insert(format!("{key}_bps"), v);
        }
        assert_eq!(serde_json::from_value::<PcieCeiling>(old).unwrap(), c);
        let mut bad = serde_json::to_value(&c).unwrap();
        bad["coding"] = "64b/66b".into();
        let e = serde_json::from_value::<PcieCeiling>(bad).unwrap_err();
        assert!(e.to_string().contains("unknown variant `64b/66b`"), "{e}");
    }
}
