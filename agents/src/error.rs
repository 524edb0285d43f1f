//! Errors at the binary's edge: user errors (bad usage, config or input) exit with status 2,
//! anything else with 1.

/// A user error: bad usage, a bad config, bad input. Its message is the one line printed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UserError(pub String);

/// Shorthand for a user error as an `anyhow::Error`.
pub fn user(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError(msg.into()))
}

/// Exit status for an error: 2 for a [`UserError`] anywhere in the chain, 1 otherwise.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err.chain().any(|e| e.is::<UserError>()) {
        2
    } else {
        1
    }
}
