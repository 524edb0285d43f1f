//! The library's one error type. Every error names the offending thing (a file, a key, a flag,
//! an agent) in its message; [`Error::exit_code`] says whose fault it is: 2 for the user's (bad
//! usage, config, input, a corrupt file), 1 for anything else. The `mtf` binary prints the
//! message as its one error line.

use std::path::PathBuf;

/// An error of the `agents` library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's to fix: bad usage, a bad value (the message names it).
    #[error("{0}")]
    User(String),
    /// A config file or override is wrong (names the file and key).
    #[error(transparent)]
    Config(#[from] env::config::ConfigError),
    /// A checkpoint file is not what it should be (names the file).
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// A file could not be read or written.
    #[error("{}: {doing}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done to it (`reading`, `creating`, ...).
        doing: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// A run directory is not what the command needs (not a run, held by another writer,
    /// already holding a run, without a checkpoint).
    #[error("{}: {problem}", path.display())]
    Run {
        /// The run directory (or the file in it at fault).
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A policy spec names nothing usable.
    #[error("policy {spec}: {problem}")]
    Policy {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        problem: String,
    },
    /// The study database refused an operation.
    #[error("{db}: {doing} the study database: {problem}")]
    Study {
        /// The database (a SQLite file, or a PostgreSQL host and database).
        db: String,
        /// What was being done.
        doing: String,
        /// What the database said.
        problem: String,
        /// Whether the input is at fault (not a database, refused, read-only) rather than the
        /// world (a server gone, a lock held too long).
        user: bool,
    },
    /// Something failed that the user could not have prevented (a worker panicked, a plot could
    /// not be drawn).
    #[error("{0}")]
    Failed(String),
    /// Standard output was closed by its reader (`mtf ... | head`): the output was not wanted
    /// further, which is not a failure (exit 0, nothing printed; [`crate::out`]).
    #[error("standard output closed")]
    ClosedPipe,
}

/// What is wrong with a checkpoint file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Not a checkpoint at all.
    #[error("{}: not an mtf checkpoint (bad header)", path.display())]
    NotCheckpoint {
        /// The file.
        path: PathBuf,
    },
    /// The learner state's length disagrees with the header.
    #[error("{}: truncated or padded: {got} bytes of learner state, header says {expected}", path.display())]
    Length {
        /// The file.
        path: PathBuf,
        /// Bytes present.
        got: u64,
        /// Bytes the header announces.
        expected: u64,
    },
    /// Written by an older mtf, in checkpoint format 1.
    #[error("{}: a checkpoint of an older mtf (format 1, before learner states had named parts); resume it with that version, or train again", path.display())]
    OldFormat {
        /// The file.
        path: PathBuf,
    },
    /// The bytes do not match their checksum.
    #[error("{}: checksum mismatch (corrupt)", path.display())]
    Checksum {
        /// The file.
        path: PathBuf,
    },
    /// The learner refused its state (another learner kind or size).
    #[error("{}: {reason}", path.display())]
    Learner {
        /// The file.
        path: PathBuf,
        /// The learner's reason.
        reason: String,
    },
}

/// The library's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Exit status: 2 for the user's errors, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        use std::io::ErrorKind as K;
        match self {
            Error::User(_) | Error::Config(_) | Error::Checkpoint(_) | Error::Policy { .. } | Error::Run { .. } => 2,
            // A missing file, no permission, a full or read-only disk: the user's to fix.
            Error::Io { source, .. } => match source.kind() {
                K::NotFound
                | K::PermissionDenied
                | K::StorageFull
                | K::ReadOnlyFilesystem
                | K::IsADirectory
                | K::NotADirectory
                | K::AlreadyExists => 2,
                _ => 1,
            },
            Error::Study { user, .. } => {
                if *user {
                    2
                } else {
                    1
                }
            }
            Error::Failed(_) => 1,
            Error::ClosedPipe => 0,
        }
    }
}

/// A user error (exit 2) with this message.
pub fn user(msg: impl Into<String>) -> Error {
    Error::User(msg.into())
}

/// A policy spec's error (exit 2).
pub fn policy(spec: &str, problem: impl Into<String>) -> Error {
    Error::Policy {
        // Escaped, so that the message stays one line whatever the spec holds.
        spec: spec.escape_debug().to_string(),
        problem: problem.into(),
    }
}

/// A run directory's error (exit 2).
pub fn run_dir(path: &std::path::Path, problem: impl Into<String>) -> Error {
    Error::Run {
        path: path.to_path_buf(),
        problem: problem.into(),
    }
}

/// A failure (exit 1) with this message.
pub fn failed(msg: impl Into<String>) -> Error {
    Error::Failed(msg.into())
}

impl From<serde_json::Error> for Error {
    /// Our own values failing to serialise is a bug, not the user's: exit 1.
    fn from(e: serde_json::Error) -> Self {
        Error::Failed(format!("JSON: {e}"))
    }
}

/// The first problem any copy of a policy met while it acted (an agent process that broke its
/// protocol, a model that could not answer): the episodes are played on, and the command fails
/// with it afterwards.
pub type ErrorSlot = std::sync::Arc<std::sync::Mutex<Option<String>>>;
