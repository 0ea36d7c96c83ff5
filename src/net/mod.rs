//! The wire below the engine and the setup client: HTTP/1.1 parsing (`http`), a blocking
//! HTTP/1.1 client for the calls around the load (`blocking`), HTTP/2
//! (`h2`: frames, the connection state machine, requests as header blocks), TLS
//! (`tls` configuration, `tlsio` records without allocation), byte streams (`transport`),
//! redirects (`redirect`), the server as a target (`target`), the nodes a connection may
//! go to (`route`), the local source addresses (`source_addrs`), the kernel's receive stamps (`stamp`) and how an event loop
//! waits for its sockets (`wait`).

pub mod blocking;
pub mod h2;
pub mod http;
pub mod redirect;
pub mod route;
pub mod source_addrs;
pub mod stamp;
pub mod target;
pub mod tls;
pub mod tlsio;
pub mod transport;
pub mod wait;
