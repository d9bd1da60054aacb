//! The expression language of `\set`.
