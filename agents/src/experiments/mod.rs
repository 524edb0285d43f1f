//! Paper reproductions: [`thesis`] regenerates the thesis's chapter 5 (`mtf reproduce thesis`).

pub mod thesis;
