//! The one error type of vblast, and the one place that turns how a command ended into an
//! exit status.
//!
//! Every fallible step reports an `Error` whose variant says what kind of failure it was;
//! callers match on variants, never on message text. `exit_status` is the only mapping from
//! outcomes to process exit codes (documented in the README's "Exit status").

use crate::signals::Signal;

/// Exit statuses, as documented.
pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED_REQUESTS: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_INTERRUPTED: i32 = 130;
pub const EXIT_TERMINATED: i32 = 143;
pub const EXIT_HANGUP: i32 = 129;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags, files or values: nothing was sent.
    #[error("{0}")]
    Input(String),
    /// The server could not be reached or refused the checks before setup.
    #[error("{0}")]
    Unreachable(String),
    /// Preflight or fixture setup failed (what was created half-way is removed).
    #[error("{0}")]
    Setup(String),
    /// The event loop or a worker process could not run.
    #[error("{0}")]
    Engine(String),
    /// Part of the load was lost (a worker process died): the report covers less than asked.
    #[error("{0}")]
    LostLoad(String),
    /// Removing what vblast created failed; the message names it and how to remove it.
    #[error("{0}")]
    Cleanup(String),
    /// A report or results file could not be read or written.
    #[error("{0}")]
    Output(String),
    /// A signal stopped the command before it could finish.
    #[error("stopped by {0}")]
    Stopped(Signal),
}

impl Error {
    /// Wraps a message from a lower layer as this kind of error.
    pub fn input(e: impl Into<String>) -> Error {
        Error::Input(e.into())
    }
    pub fn setup(e: impl Into<String>) -> Error {
        Error::Setup(e.into())
    }
    pub fn engine(e: impl Into<String>) -> Error {
        Error::Engine(e.into())
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
        assert_eq!(exit_status(&Ending::Failed(Error::LostLoad("x".into()))), 1);
        for e in [
            Error::Input("x".into()),
            Error::Unreachable("x".into()),
            Error::Setup("x".into()),
            Error::Engine("x".into()),
            Error::Cleanup("x".into()),
            Error::Output("x".into()),
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
}
