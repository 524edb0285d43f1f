//! Reports: the comparison table ([`table`], the one source of its markdown, CSV and figures),
//! markdown tables ([`markdown`]) and the figures ([`plots`]).

pub mod markdown;
pub mod plots;
pub mod table;
