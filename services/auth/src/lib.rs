//! placeholder during bring-up
#![forbid(unsafe_code)]
pub mod domain;
pub mod limits;
