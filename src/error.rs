//! The one error type of vblast, and the one place that turns how a command ended into an
//! exit status.
//!
//! An `Error` says which kind of failure it was (its variant: bad input, setup, engine, ...),
//! and carries the typed `Cause` beneath it: an io error, a rustls error, an HTTP status
//! with an excerpt of the body, an HCL position, a JSON error, or a sentence of vblast's
//! own. Callers match on variants and causes, never on message text; nothing rewrites a
//! message either. `exit_status` is the only mapping from outcomes to process exit codes.

use std::fmt;

use crate::signals::Signal;

/// Exit statuses, as documented.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED_REQUESTS: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
/// An open-model run that did not keep its schedule (`stats::kept`): its figures stand for
/// the requests it sent, not for the load asked.
pub const EXIT_SCHEDULE_NOT_KEPT: i32 = 3;
/// A threshold was broken (`--threshold`, `vblast compare --fail-on`): its interval lies
/// beyond its bound (k6's status for a failed threshold).
pub const EXIT_THRESHOLD_BROKEN: i32 = 99;
/// No threshold was broken, but one could not be judged either way (its interval
/// straddles its bound, or nothing was measured).
pub const EXIT_THRESHOLD_UNCLEAR: i32 = 98;
pub const EXIT_INTERRUPTED: i32 = 130;
pub const EXIT_TERMINATED: i32 = 143;
pub const EXIT_HANGUP: i32 = 129;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags, files or values: nothing was sent.
    #[error("{0}")]
    Input(Cause),
    /// The server could not be reached or refused the checks before setup.
    #[error("{0}")]
    Unreachable(Cause),
    /// Preflight or fixture setup failed (what was created half-way is removed).
    #[error("{0}")]
    Setup(Cause),
    /// The event loop or a worker process could not run.
    #[error("{0}")]
    Engine(Cause),
    /// Part of the load was lost (a worker process died): the report covers less than asked.
    #[error("{0}")]
    LostLoad(Cause),
    /// Removing what vblast created failed; the message names it and how to remove it.
    #[error("{0}")]
    Cleanup(Cause),
    /// A report or results file could not be read or written.
    #[error("{0}")]
    Output(Cause),
    /// A signal stopped the command before it could finish.
    #[error("stopped by {0}")]
    Stopped(Signal),
}

/// What went wrong beneath an `Error`'s kind, typed. Its text is the message a user reads;
/// code inspects the variant and its fields.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    /// A complete sentence of vblast's own: a refused value or combination, a state the
    /// server is in. Shown as it is; never parsed.
    #[error("{0}")]
    Said(String),
    /// An io error while doing `what` ("cannot read the token file x").
    #[error("{what}: {}", io_text(source))]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A TLS error while doing `what`.
    #[error("{what}: {source}")]
    Tls {
        what: String,
        #[source]
        source: rustls::Error,
    },
    /// An HTTP answer that is not the one expected: its status and an excerpt of its body
    /// (the server's reason, never a secret vblast sent).
    #[error("{what}: HTTP {status}: {excerpt}")]
    Http {
        what: String,
        status: u16,
        excerpt: String,
    },
    /// A place in an HCL file (1-based line and column) and what is wrong there.
    #[error("{file}:{line}:{column}: {message}")]
    Hcl {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A JSON document that could not be read or written while doing `what`.
    #[error("{what}: {source}")]
    Json {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    /// Several causes at once (every refusal of one file, every file that could not be
    /// written), shown joined by "; ".
    #[error("{}", Joined(.0))]
    Several(Vec<Cause>),
    /// A cause from a lower layer, with what was being done when it happened.
    #[error("{what}: {source}")]
    Within {
        what: String,
        #[source]
        source: Box<Cause>,
    },
}

/// An io error's text without Rust's " (os error N)" suffix: the operating system's own
/// sentence for an os error ("Connection refused"), the error's text otherwise.
pub fn io_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => crate::sys::strerror(code),
        None => e.to_string(),
    }
}

struct Joined<'a>(&'a [Cause]);

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl From<String> for Cause {
    fn from(s: String) -> Cause {
        Cause::Said(s)
    }
}

impl From<&str> for Cause {
    fn from(s: &str) -> Cause {
        Cause::Said(s.to_string())
    }
}

impl Cause {
    /// This cause, with what was being done when it happened in front of it.
    pub fn within(self, what: impl Into<String>) -> Cause {
        Cause::Within {
            what: what.into(),
            source: Box::new(self),
        }
    }

    /// An io error while doing `what`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Cause {
        Cause::Io {
            what: what.into(),
            source,
        }
    }
}

impl Error {
    /// Bad input: `Error::input("-c must be at least 1")`, or any typed cause.
    pub fn input(c: impl Into<Cause>) -> Error {
        Error::Input(c.into())
    }
    pub fn unreachable(c: impl Into<Cause>) -> Error {
        Error::Unreachable(c.into())
    }
    pub fn setup(c: impl Into<Cause>) -> Error {
        Error::Setup(c.into())
    }
    pub fn engine(c: impl Into<Cause>) -> Error {
        Error::Engine(c.into())
    }
    pub fn lost_load(c: impl Into<Cause>) -> Error {
        Error::LostLoad(c.into())
    }
    pub fn cleanup(c: impl Into<Cause>) -> Error {
        Error::Cleanup(c.into())
    }
    pub fn output(c: impl Into<Cause>) -> Error {
        Error::Output(c.into())
    }

    /// The typed cause beneath the kind (None for a signal).
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            Error::Input(c)
            | Error::Unreachable(c)
            | Error::Setup(c)
            | Error::Engine(c)
            | Error::LostLoad(c)
            | Error::Cleanup(c)
            | Error::Output(c) => Some(c),
            Error::Stopped(_) => None,
        }
    }

    /// The same kind, with what was being done in front of its cause.
    pub fn within(self, what: impl Into<String>) -> Error {
        match self {
            Error::Input(c) => Error::Input(c.within(what)),
            Error::Unreachable(c) => Error::Unreachable(c.within(what)),
            Error::Setup(c) => Error::Setup(c.within(what)),
            Error::Engine(c) => Error::Engine(c.within(what)),
            Error::LostLoad(c) => Error::LostLoad(c.within(what)),
            Error::Cleanup(c) => Error::Cleanup(c.within(what)),
            Error::Output(c) => Error::Output(c.within(what)),
            Error::Stopped(s) => Error::Stopped(s),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a command ended, before it is turned into an exit status.
#[derive(Debug)]
pub enum Ending {
    /// Everything asked for was done and every request succeeded.
    Ok,
    /// The run completed but requests failed (or none completed).
    FailedRequests,
    /// The run completed, but did not keep its schedule (open model): too many scheduled
    /// requests were never sent, or most were sent too late (`stats::kept`).
    ScheduleNotKept,
    /// The run completed (or a broken threshold stopped it early, `--threshold-abort`) and
    /// a threshold is broken.
    ThresholdBroken,
    /// The run completed, no threshold is broken, and one is unclear.
    ThresholdUnclear,
    /// A signal stopped the run; the report so far was printed and cleanup done.
    Stopped(Signal),
    /// An error: its message is printed once on stderr.
    Failed(Error),
}

/// The one mapping from endings to exit statuses.
pub fn exit_status(ending: &Ending) -> i32 {
    match ending {
        Ending::Ok => EXIT_OK,
        Ending::FailedRequests => EXIT_FAILED_REQUESTS,
        Ending::ScheduleNotKept => EXIT_SCHEDULE_NOT_KEPT,
        Ending::ThresholdBroken => EXIT_THRESHOLD_BROKEN,
        Ending::ThresholdUnclear => EXIT_THRESHOLD_UNCLEAR,
        Ending::Stopped(s) | Ending::Failed(Error::Stopped(s)) => signal_status(*s),
        Ending::Failed(Error::LostLoad(_)) => EXIT_FAILED_REQUESTS,
        Ending::Failed(
            Error::Input(_)
            | Error::Unreachable(_)
            | Error::Setup(_)
            | Error::Engine(_)
            | Error::Cleanup(_)
            | Error::Output(_),
        ) => EXIT_BAD_INPUT,
    }
}

/// 128 + the signal number, as shells report a process ended by that signal.
pub fn signal_status(s: Signal) -> i32 {
    match s {
        Signal::Interrupt => EXIT_INTERRUPTED,
        Signal::Terminate => EXIT_TERMINATED,
        Signal::Hangup => EXIT_HANGUP,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ending_has_its_documented_status() {
        assert_eq!(exit_status(&Ending::Ok), 0);
        assert_eq!(exit_status(&Ending::FailedRequests), 1);
        assert_eq!(exit_status(&Ending::ScheduleNotKept), 3);
        assert_eq!(exit_status(&Ending::ThresholdBroken), 99);
        assert_eq!(exit_status(&Ending::ThresholdUnclear), 98);
        assert_eq!(exit_status(&Ending::Failed(Error::lost_load("x"))), 1);
        for e in [
            Error::input("x"),
            Error::unreachable("x"),
            Error::setup("x"),
            Error::engine("x"),
            Error::cleanup("x"),
            Error::output("x"),
        ] {
            assert_eq!(exit_status(&Ending::Failed(e)), 2);
        }
        assert_eq!(exit_status(&Ending::Stopped(Signal::Interrupt)), 130);
        assert_eq!(exit_status(&Ending::Stopped(Signal::Terminate)), 143);
        assert_eq!(exit_status(&Ending::Stopped(Signal::Hangup)), 129);
        assert_eq!(
            exit_status(&Ending::Failed(Error::Stopped(Signal::Terminate))),
            143
        );
    }

    #[test]
    fn causes_read_as_one_message_and_keep_their_sources() {
        let e = Error::setup(Cause::Http {
            what: "enabling kv mount 'vblast-1'".into(),
            status: 403,
            excerpt: "permission denied".into(),
        })
        .within("setup");
        assert_eq!(
            e.to_string(),
            "setup: enabling kv mount 'vblast-1': HTTP 403: permission denied"
        );
        assert!(matches!(
            e.cause(),
            Some(Cause::Within { source, .. }) if matches!(**source, Cause::Http { status: 403, .. })
        ));
        let io = Cause::io(
            "cannot read x",
            std::io::Error::from_raw_os_error(libc::ENOENT),
        );
        assert_eq!(io.to_string(), "cannot read x: No such file or directory");
        let both = Cause::Several(vec!["a".into(), "b".into()]);
        assert_eq!(both.to_string(), "a; b");
    }
}
