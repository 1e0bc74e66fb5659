//! The audit's findings list: every section's findings in one list, most severe first.

use model::Finding;

/// Every section's findings (in the order given: PCI, system, USB, block, net) as one list,
/// most severe first; within a severity, the sections' order and each section's own order
/// are kept (a stable sort), so the list reads the same on every run.
pub fn collect<'a>(sections: impl IntoIterator<Item = &'a [Finding]>) -> Vec<Finding> {
    let mut all: Vec<Finding> = sections.into_iter().flatten().cloned().collect();
    all.sort_by_key(|f| std::cmp::Reverse(f.severity));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Severity;

    #[test]
    fn most_severe_first_and_otherwise_in_section_order() {
        let pci = [
            Finding::new(Severity::Info, "00:1c.0", "a"),
            Finding::new(Severity::Warning, "00:1c.0", "b"),
        ];
        let usb = [
            Finding::new(Severity::Warning, "USB 4-1", "c"),
            Finding::new(Severity::Error, "USB 4-2", "d"),
        ];
        let block = [Finding::new(Severity::Info, "sda", "e")];
        let all = collect([&pci[..], &usb[..], &block[..]]);
        let order: Vec<&str> = all.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(order, ["d", "b", "c", "a", "e"]);
        assert!(collect([]).is_empty());
    }
}
