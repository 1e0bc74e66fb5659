//! Properties every ceiling must keep, whatever the parameters.

use model::ceiling::pcie::{
    link_ceiling, CompletionSize, TlpParams, VALID_HEADER_BYTES, VALID_MPS, VALID_RCB,
};
use model::ceiling::{eth, usb};
use model::pcie::{LinkState, PcieGen, VALID_WIDTHS};
use proptest::prelude::*;

fn gen() -> impl Strategy<Value = PcieGen> {
    prop::sample::select(PcieGen::ALL.to_vec())
}

fn params() -> impl Strategy<Value = TlpParams> {
    (
        prop::sample::select(VALID_MPS.to_vec()),
        prop::sample::select(VALID_MPS.to_vec()),
        prop::sample::select(VALID_RCB.to_vec()),
        prop::sample::select(VALID_HEADER_BYTES.to_vec()),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(mps, mrrs, rcb, header_bytes, ecrc, rcb_split, seed)| {
            let base = if seed {
                TlpParams::seed().with_mps(mps)
            } else {
                TlpParams::default_for(mps, mrrs, rcb)
            };
            TlpParams {
                mrrs,
                rcb,
                header_bytes,
                ecrc,
                completion_size: if rcb_split {
                    CompletionSize::Rcb
                } else {
                    CompletionSize::Mps
                },
                ..base
            }
        })
}

proptest! {
    #[test]
    fn effective_le_tlp_le_raw(g in gen(), width in prop::sample::select(VALID_WIDTHS.to_vec()),
                               p in params()) {
        let c = link_ceiling(LinkState::new(g, width), &p);
        prop_assert!(c.effective_write_bps > 0.0);
        prop_assert!(c.effective_write_bps <= c.tlp_write_bps);
        prop_assert!(c.tlp_write_bps <= c.raw_bps);
        prop_assert!(c.effective_read_bps <= c.tlp_read_bps);
        // Reads never exceed the link's capacity, nor need more than the other direction.
        prop_assert!(c.tlp_read_bps <= c.raw_bps);
        prop_assert!(c.read_request_share > 0.0 && c.read_request_share <= 1.0);
    }

    #[test]
    fn ceilings_grow_with_width(g in gen(), p in params()) {
        let mut last: Option<model::ceiling::pcie::PcieCeiling> = None;
        for width in VALID_WIDTHS {
            let c = link_ceiling(LinkState::new(g, width), &p);
            if let Some(prev) = &last {
                prop_assert!(c.raw_bps > prev.raw_bps);
                prop_assert!(c.tlp_write_bps > prev.tlp_write_bps);
                prop_assert!(c.tlp_read_bps > prev.tlp_read_bps);
                prop_assert!(c.effective_write_bps > prev.effective_write_bps,
                    "x{} {} <= x{} {}", width, c.effective_write_bps,
                    prev.link.width, prev.effective_write_bps);
                prop_assert!(c.effective_read_bps > prev.effective_read_bps);
            }
            last = Some(c);
        }
    }

    #[test]
    fn ceilings_grow_with_generation(width in prop::sample::select(VALID_WIDTHS.to_vec()),
                                     p in params()) {
        let mut last: Option<model::ceiling::pcie::PcieCeiling> = None;
        for g in PcieGen::ALL {
            let c = link_ceiling(LinkState::new(g, width), &p);
            if let Some(prev) = &last {
                prop_assert!(c.raw_bps > prev.raw_bps);
                prop_assert!(c.tlp_write_bps > prev.tlp_write_bps);
                prop_assert!(c.effective_write_bps > prev.effective_write_bps);
                prop_assert!(c.effective_read_bps > prev.effective_read_bps);
            }
            last = Some(c);
        }
    }

    #[test]
    fn larger_mps_never_lowers_writes(g in gen(), width in prop::sample::select(VALID_WIDTHS.to_vec())) {
        let mut last = 0.0;
        for mps in VALID_MPS {
            let c = link_ceiling(LinkState::new(g, width), &TlpParams::default_for(mps, 512, 64));
            prop_assert!(c.tlp_write_bps > last);
            last = c.tlp_write_bps;
        }
    }

    #[test]
    fn ethernet_goodput_below_line_rate(rate in prop::sample::select(eth::RATES.to_vec()),
                                        mtu in 1280u32..=9216, payload in 1u32..=65_507,
                                        v6 in any::<bool>(), ts in any::<bool>(), udp in any::<bool>()) {
        let params = eth::EthParams {
            rate: model::units::BitsPerSec(rate.1),
            mtu,
            ip: if v6 { eth::IpVersion::V6 } else { eth::IpVersion::V4 },
            transport: if udp { eth::Transport::Udp { payload } } else { eth::Transport::Tcp { timestamps: ts } },
        };
        let c = eth::goodput(&params).unwrap();
        prop_assert!(c.goodput.0 > 0.0 && c.goodput < c.raw);
    }
}

#[test]
fn usb_transfers_stay_below_the_link() {
    for speed in usb::UsbSpeed::ALL {
        let raw = usb::raw_bps(speed);
        for t in usb::TransferType::ALL {
            if let Some(v) = usb::transfer_ceiling(speed, t).bytes_per_second {
                assert!(v > 0.0 && v < raw, "{speed:?} {t:?}: {v} vs {raw}");
            }
        }
    }
    // Bulk grows with the signalling rate where bulk exists (Gen 2 and Gen 1x2 share
    // 10 Gb/s and are not compared).
    let bulk: Vec<(f64, f64)> = usb::UsbSpeed::ALL
        .iter()
        .filter_map(|&s| {
            usb::transfer_ceiling(s, usb::TransferType::Bulk)
                .bytes_per_second
                .map(|b| (s.total_mbps(), b))
        })
        .collect();
    for a in &bulk {
        for b in &bulk {
            if a.0 < b.0 {
                assert!(a.1 < b.1, "{bulk:?}");
            }
        }
    }
}
