//! Findings: the judgement of what the numbers and settings mean, as pure functions.
//!
//! The producers (probe, bench) return facts; the sentences, their severity and their order
//! are made here, so every command says the same thing the same way.
//!
//! Not here yet: the per-device findings of `audit` (PCI links, USB, block, net) are still
//! made in `probe` beside the inventory types they read (`probe::pci::audit`, `probe::usb`,
//! `probe::block`, `probe::net`): those types move to `model::inventory` first (issue 12),
//! then their findings move here.

pub mod audit;
pub mod latency;
pub mod system;

pub use crate::summary::plural as count;

#[cfg(test)]
mod tests {
    #[test]
    fn count_agrees_in_number() {
        assert_eq!(
            super::count(1, "period was", "periods were"),
            "1 period was"
        );
        assert_eq!(
            super::count(0, "period was", "periods were"),
            "0 periods were"
        );
        assert_eq!(
            super::count(7, "period was", "periods were"),
            "7 periods were"
        );
    }
}
