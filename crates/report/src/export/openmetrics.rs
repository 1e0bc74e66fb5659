//! Any result document as metrics for Prometheus: OpenMetrics 1.0 text (`--format
//! openmetrics`) and the Prometheus text format 0.0.4 that node_exporter's textfile collector
//! and promtool read (`--textfile-dir`, `--format prometheus`), both written by the
//! `prometheus-client` crate's encoders (its label escaping included: labels carry strings
//! from sysfs and from network peers).
//!
//! Names follow Prometheus' conventions (https://prometheus.io/docs/practices/naming/): base
//! units (bytes, seconds, transfers per second), `_total` on counters, one family per
//! quantity with labels for the address, device, driver, test. Which metrics a document has
//! is its kind's ([`crate::kinds::metrics`]); this module only collects and encodes them.

use prometheus_client::encoding::{prometheus_text, text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

/// A series' labels, in the order given.
pub type Labels = Vec<(String, String)>;
type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;
type CounterFamily = Family<Labels, Counter<u64>>;

/// The metrics of one or more documents: families registered on first use, series added
/// by labels. Labels every series carries (`part` of a survey, `document` of several
/// inputs) are pushed with [`Metrics::with_label`].
pub struct Metrics {
    registry: Registry,
    gauges: BTreeMap<String, GaugeFamily>,
    counters: BTreeMap<String, CounterFamily>,
    common: Labels,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            registry: Registry::with_prefix("headroom"),
            gauges: BTreeMap::new(),
            counters: BTreeMap::new(),
            common: Vec::new(),
        }
    }
}

/// What a family measures: its name (without `headroom_` and the unit), help and unit.
pub struct Def {
    pub name: &'static str,
    pub help: &'static str,
    /// The unit suffix (`bytes_per_second`); `None` for a plain number or a flag.
    pub unit: Option<&'static str>,
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Run `f` with `key=value` added to every series it adds.
    pub fn with_label<R>(&mut self, key: &str, value: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        self.common.push((key.to_string(), value.to_string()));
        let r = f(self);
        self.common.pop();
        r
    }

    /// The series' labels: the common ones, then `labels`; every value made safe for a
    /// reader and a terminal by [`crate::outside::label_value`] before the encoder escapes it.
    fn labels(&self, labels: &[(&str, &str)]) -> Labels {
        self.common
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(labels.iter().copied())
            .map(|(k, v)| (k.to_string(), crate::outside::label_value(v).into_owned()))
            .collect()
    }

    fn unit(def: &Def) -> Option<Unit> {
        def.unit.map(|u| match u {
            "bytes" => Unit::Bytes,
            "seconds" => Unit::Seconds,
            other => Unit::Other(other.to_string()),
        })
    }

    /// Set a gauge's series. A value that is not finite is left out (it has no meaning).
    pub fn gauge(&mut self, def: &Def, labels: &[(&str, &str)], value: f64) {
        if !value.is_finite() {
            return;
        }
        let labels = self.labels(labels);
        let family = match self.gauges.get(def.name) {
            Some(f) => f.clone(),
            None => {
                let f = GaugeFamily::default();
                match Self::unit(def) {
                    Some(u) => self
                        .registry
                        .register_with_unit(def.name, def.help, u, f.clone()),
                    None => self.registry.register(def.name, def.help, f.clone()),
                }
                self.gauges.insert(def.name.to_string(), f.clone());
                f
            }
        };
        family.get_or_create(&labels).set(value);
    }

    /// Set a counter's series (`_total` is added to its name by the encoder).
    pub fn counter(&mut self, def: &Def, labels: &[(&str, &str)], value: u64) {
        let labels = self.labels(labels);
        let family = match self.counters.get(def.name) {
            Some(f) => f.clone(),
            None => {
                let f = CounterFamily::default();
                self.registry.register(def.name, def.help, f.clone());
                self.counters.insert(def.name.to_string(), f.clone());
                f
            }
        };
        let c = family.get_or_create(&labels);
        // A series set twice (two documents with the same labels) keeps the last count.
        c.inner().store(value, std::sync::atomic::Ordering::Relaxed);
    }

    /// OpenMetrics 1.0 text, ending in `# EOF`.
    pub fn openmetrics(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = text::encode(&mut out, &self.registry);
        out
    }

    /// The Prometheus text format 0.0.4: what node_exporter's textfile collector reads.
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hostile_label_values_are_escaped_by_the_encoder() {
        let mut m = Metrics::new();
        let def = Def {
            name: "x",
            help: "A test",
            unit: Some("bytes"),
        };
        m.gauge(&def, &[("driver", "evil\"} 1\nheadroom_y 2\\")], 1.0);
        let text = m.prometheus();
        // One sample line: the quote, newline and backslash are escaped, no series injected.
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            samples,
            [r#"headroom_x_bytes{driver="evil\"} 1\nheadroom_y 2\\"} 1.0"#]
        );
        assert!(m.openmetrics().ends_with("# EOF\n"));
    }
}
