//! The server under test: scheme, host, port and the resolved socket addresses.

use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Scheme {
    Http,
    Https,
}

/// Where load goes. Built once from VAULT_ADDR or the URL argument.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Target {
    pub scheme: Scheme,
    /// Host as written (used for the Host header and as the TLS server name).
    pub host: String,
    pub port: u16,
    /// Resolved addresses, in resolver order; connections use the first.
    pub addrs: Vec<SocketAddr>,
    /// Path and query of a URL-mode target ("/" when absent).
    pub path: String,
}

/// Why an address is not a target.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("malformed URL '{text}': {source}")]
    Malformed {
        text: String,
        #[source]
        source: url::ParseError,
    },
    #[error("malformed URL '{text}': scheme '{scheme}' is not http or https")]
    Scheme { text: String, scheme: String },
    #[error("malformed URL '{0}': no host")]
    NoHost(String),
    #[error("malformed URL: credentials in the URL are not supported (use -H)")]
    Credentials,
    #[error("malformed URL '{0}': no port")]
    NoPort(String),
    #[error("cannot resolve host '{host}': {source}")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot resolve host '{0}': no addresses")]
    NoAddresses(String),
}

impl From<TargetError> for crate::error::Cause {
    fn from(e: TargetError) -> Self {
        crate::error::Cause::Said(e.to_string())
    }
}

impl Target {
    /// Parses `http[s]://host[:port][/path]` and resolves the host.
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        let url = url::Url::parse(text).map_err(|source| TargetError::Malformed {
            text: text.into(),
            source,
        })?;
        let scheme = match url.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(TargetError::Scheme {
                    text: text.into(),
                    scheme: other.into(),
                });
            }
        };
        let host = match url.host() {
            Some(url::Host::Ipv6(a)) => a.to_string(),
            Some(h) => h.to_string(),
            None => return Err(TargetError::NoHost(text.into())),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetError::Credentials);
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| TargetError::NoPort(text.into()))?;
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let addrs: Vec<SocketAddr> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|source| TargetError::Resolve {
                host: host.clone(),
                source,
            })?
            .collect();
        if addrs.is_empty() {
            return Err(TargetError::NoAddresses(host));
        }
        Ok(Target {
            scheme,
            host,
            port,
            addrs,
            path,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    pub fn is_tls(&self) -> bool {
        self.scheme == Scheme::Https
    }

    /// The Host header value: the port is left out when it is the scheme's default.
    pub fn host_header(&self) -> String {
        let default = match self.scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// Base URL without path, for messages.
    pub fn base(&self) -> String {
        let s = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        format!("{s}://{}", self.host_header())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses() {
        let t = Target::parse("http://127.0.0.1:8200/v1/secret/data/foo?version=1").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!(t.port, 8200);
        assert_eq!(t.path, "/v1/secret/data/foo?version=1");
        assert_eq!(t.host_header(), "127.0.0.1:8200");
        let t = Target::parse("https://localhost").unwrap();
        assert_eq!(t.port, 443);
        assert_eq!(t.path, "/");
        assert_eq!(t.host_header(), "localhost");
    }

    #[test]
    fn rejects_bad_urls() {
        assert!(Target::parse("127.0.0.1:8200").is_err());
        assert!(Target::parse("ftp://127.0.0.1/").is_err());
        assert!(Target::parse("http://").is_err());
        assert!(Target::parse("http://127.0.0.1:99999/").is_err());
    }
}
