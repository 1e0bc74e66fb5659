//! PCI: sysfs discovery, config-space decoding, `lspci -xxx` dumps, topology.
