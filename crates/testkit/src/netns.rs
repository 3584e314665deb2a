//! Hosts for multi-host tests: Linux network namespaces made by the test
//! (`ip netns`, a bridge and one veth pair each), each with an address of
//! its own on a /24 of 10.0.0.0/8 that only this test uses. The machine
//! side of the bridge is the subnet's `.1` ([`Net::gateway`]): servers the
//! hosts reach (PostgreSQL, the fake model) listen there. A host is cut
//! off by setting its link down inside its namespace, and joined again by
//! setting it up. Everything is removed when the [`Net`] is dropped.
//! Needs root (or `CAP_NET_ADMIN`) and iproute2's `ip`.

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering};

/// A bridge and the hosts on it.
pub struct Net {
    bridge: String,
    gateway: Ipv4Addr,
    hosts: Vec<NetHost>,
}

/// One host: a network namespace with its own address.
#[derive(Clone, Debug)]
pub struct NetHost {
    /// The namespace's name (`ip netns exec NAME …`).
    pub namespace: String,
    /// Its address.
    pub addr: Ipv4Addr,
    /// Its end of the veth pair, inside the namespace.
    link: String,
}

/// Why hosts could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NetError(pub String);

fn ip(args: &[&str]) -> Result<(), NetError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| NetError(format!("cannot run ip (iproute2): {e}")))?;
    if !out.status.success() {
        return Err(NetError(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Each net this process makes gets a subnet of its own.
static MADE: AtomicU8 = AtomicU8::new(0);

impl Net {
    /// Makes `n` hosts on a new bridge.
    ///
    /// # Errors
    /// No `ip`, not root, or a step that failed (what `ip` said).
    pub fn make(n: usize) -> Result<Net, NetError> {
        let pid = std::process::id();
        let made = MADE.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}{made}", pid % 100_000);
        let (b, c) = (100 + (pid % 100) as u8, made);
        let gateway = Ipv4Addr::new(10, b, c, 1);
        let bridge = format!("hcb{tag}");
        let mut net = Net {
            bridge: bridge.clone(),
            gateway,
            hosts: Vec::new(),
        };
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{gateway}/24"), "dev", &bridge])?;
        ip(&["link", "set", &bridge, "up"])?;
        for i in 0..n {
            let namespace = format!("hcn{tag}h{i}");
            let (outer, link) = (format!("hcv{tag}h{i}"), format!("hcp{tag}h{i}"));
            let addr = Ipv4Addr::new(10, b, c, 10 + i as u8);
            ip(&["netns", "add", &namespace])?;
            net.hosts.push(NetHost {
                namespace: namespace.clone(),
                addr,
                link: link.clone(),
            });
            ip(&["link", "add", &outer, "type", "veth", "peer", "name", &link])?;
            ip(&["link", "set", &link, "netns", &namespace])?;
            ip(&["link", "set", &outer, "master", &bridge, "up"])?;
            let own = format!("{addr}/24");
            ip(&["-n", &namespace, "addr", "add", &own, "dev", &link])?;
            ip(&["-n", &namespace, "link", "set", &link, "up"])?;
            ip(&["-n", &namespace, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    /// The machine's address on the bridge, which every host reaches.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    /// The subnet, as `10.B.C.0/24`.
    pub fn subnet(&self) -> String {
        let [a, b, c, _] = self.gateway.octets();
        format!("{a}.{b}.{c}.0/24")
    }

    /// Host `i`.
    pub fn host(&self, i: usize) -> &NetHost {
        &self.hosts[i]
    }
}

impl NetHost {
    /// `program` to be run in this host's namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.namespace])
            .arg(program);
        command
    }

    /// Cuts the host off: its link down.
    ///
    /// # Errors
    /// What `ip` said.
    pub fn cut(&self) -> Result<(), NetError> {
        ip(&["-n", &self.namespace, "link", "set", &self.link, "down"])
    }

    /// Joins it again: its link up.
    ///
    /// # Errors
    /// What `ip` said.
    pub fn join(&self) -> Result<(), NetError> {
        ip(&["-n", &self.namespace, "link", "set", &self.link, "up"])
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for host in &self.hosts {
            let _ = ip(&["netns", "del", &host.namespace]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}
