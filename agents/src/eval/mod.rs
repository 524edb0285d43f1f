//! Evaluation: policies named by a spec ([`policies`]), evaluation episodes ([`simulate`]),
//! policies x mechanisms on the same seeds ([`compare`]), training curves overlaid ([`curves`]),
//! whether learning can help
//! ([`analyze`]), learners against auction theory ([`theory`]), and one mechanism round as
//! JSON ([`schedule`]).

pub mod analyze;
pub mod compare;
pub mod curves;
pub mod policies;
pub mod schedule;
pub mod simulate;
pub mod theory;
