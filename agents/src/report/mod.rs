//! Reports: the comparison table ([`table`], the one source of its markdown, CSV and figures),
//! markdown tables ([`markdown`]), rows' labels and run groups' rows ([`groups`]), the figures ([`plots`]) and the statistics across training
//! replicates ([`stats`]: IQM, bootstrap intervals, probability of improvement; below `train`,
//! whose run groups summarise with them).

pub mod groups;
pub mod markdown;
pub mod plots;
pub mod stats;
pub mod table;
