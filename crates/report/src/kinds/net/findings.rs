//! What a `bench net` run finds: a flow below its ceiling and why (a shaper, the CPU, the
//! kernel's bytes beside the application's).

#[allow(clippy::wildcard_imports)]
use super::*;

/// What the numbers depend on, as sentences.
pub fn findings(r: &NetDocument) -> Vec<Finding> {
    let mut out = Vec::new();
    let subject = r
        .link
        .as_ref()
        .map_or_else(|| r.measurement.peer.clone(), |l| l.interface.clone());
    let mut push = |sev, msg: String, advice: Option<&str>| {
        let f = Finding::new(sev, subject.clone(), msg);
        out.push(match advice {
            Some(a) => f.with_advice(a),
            None => f,
        });
    };
    if let Some(l) = &r.link {
        if l.duplex.as_deref() == Some("half") {
            push(
                Severity::Warning,
                format!(
                    "{} runs half duplex: both directions share the link and collisions cost more",
                    l.interface
                ),
                Some("check the cable and the autonegotiation of both ends (ethtool)"),
            );
        }
        if let (Some(mtu), false) = (l.mtu, l.is_loopback) {
            if mtu < 1500 && !l.is_virtual {
                push(
                    Severity::Info,
                    format!(
                        "the MTU of {} is {mtu}, below Ethernet's 1500: more headers per byte",
                        l.interface
                    ),
                    None,
                );
            }
        }
        if let (Some(usb), Some(speed)) = (l.usb_speed_mbps, l.speed_mbps) {
            if usb <= 480.0 && speed >= 1000 {
                push(
                    Severity::Warning,
                    format!(
                        "the {speed} Mb/s adapter {} sits on a USB {usb} Mb/s link, below its line rate",
                        l.interface
                    ),
                    Some("plug it into a USB 3 port"),
                );
            }
        }
        for n in &l.notes {
            push(Severity::Info, n.clone(), None);
        }
    }
    // What can carry a rate past this path's ceiling, as far as the link facts tell.
    let beyond = crate::efficiency::Beyond {
        emulated: r
            .link
            .as_ref()
            .filter(|l| l.driver.as_deref() == Some("virtio_net"))
            .map(|l| format!("{} is a virtio (paravirtual) interface", l.interface)),
        cache: r.link.as_ref().and_then(|l| l.shaper.as_ref()).map(|_| {
            "the shaper's token bucket lets a burst through at the line rate before it limits"
                .to_string()
        }),
        nominal_link: r
            .link
            .as_ref()
            .filter(|l| l.is_virtual && l.shaper.is_none())
            .map(|l| {
                format!(
                    "{} is a virtual link with no hardware below it",
                    l.interface
                )
            }),
        ..Default::default()
    };
    for v in &r.flows {
        // 1 % above: a shaper's burst and the measured window's edges move a rate that much.
        if let (Some(e), Some(c), Some(rx)) = (v.efficiency, &r.ceiling, v.summary.receiver_bps) {
            let above = crate::efficiency::above_ceiling(
                &subject,
                &format!("{} {}", v.flow.label(), mbit(rx)),
                e,
                &c.basis,
                &beyond,
            );
            if let Some(f) = above.filter(|_| e > 1.01) {
                push(f.severity, f.message, f.advice.as_deref());
            }
        }
        if let (Some(retr), Some(e)) = (v.summary.retransmits, v.efficiency) {
            if retr > 0 && e < 0.9 {
                push(
                    Severity::Info,
                    format!(
                        "{}: {retr} TCP retransmissions and {:.1} % of the ceiling: losses on the \
                         path cut the rate",
                        v.flow.label(),
                        e * 100.0
                    ),
                    None,
                );
            }
        }
        if let Some(loss) = v.summary.loss_percent() {
            if loss > 1.0 {
                push(
                    Severity::Warning,
                    format!(
                        "{}: {loss:.2} % of the UDP datagrams were lost: the offered rate is above \
                         what the path carries",
                        v.flow.label()
                    ),
                    Some("lower -b, or let --find-rate find the highest rate without loss"),
                );
            }
        }
        if let Some(gap) = v.bytes_gap {
            if gap.abs() > 0.01 {
                push(
                    Severity::Info,
                    format!(
                        "{}: the receiver counted {:.1} % {} bytes than the sender (bytes in \
                         flight when the measured time began or ended{})",
                        v.flow.label(),
                        gap.abs() * 100.0,
                        if gap > 0.0 { "fewer" } else { "more" },
                        if r.measurement.config.protocol == Protocol::Udp {
                            ", or lost datagrams"
                        } else {
                            ""
                        }
                    ),
                    None,
                );
            }
        }
    }
    if let Some(ic) = &r.interface_check {
        if let Some(o) = ic.overhead {
            if o < -0.01 {
                push(
                    Severity::Warning,
                    format!(
                        "{} counted {:.1} % fewer bytes than the test moved: the traffic did not \
                         all take this interface",
                        ic.interface,
                        -o * 100.0
                    ),
                    None,
                );
            }
        }
    }
    if r.measurement.stopped_by == NetStop::Interrupted {
        push(
            Severity::Info,
            "the test was interrupted: partial results".into(),
            None,
        );
    }
    out
}
